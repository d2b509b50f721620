package produce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// Table properties of a topic that IncrementalAlterConfigs may change on a
// table lakegw writes; the gateway reopens the topic with them
// (topics/ watches its table's properties).
const (
	propCompression  = "lakegw.compression"
	propBatchRecords = "lakegw.batch-records"
)

// alterable maps each config a produced topic takes to the table property
// it is kept in, per kind of topic ("" for raw: the config exists but only
// its default is honoured).
func alterable(props iceberg.Properties) map[string]string {
	m := map[string]string{
		propCompression:      propCompression,
		propBatchRecords:     propBatchRecords,
		ConfigCommitInterval: ConfigCommitInterval,
	}
	if changelog.IsAppendTable(props) {
		m[changelog.PropFormat] = changelog.PropFormat
		m[ConfigAutoEvolve] = ConfigAutoEvolve
		return m
	}
	if changelog.IsRawTable(props) {
		m["retention.ms"], m["retention.bytes"] = "", ""
		return m
	}
	maps.Copy(m, map[string]string{
		changelog.PropFormat:          changelog.PropFormat,
		ConfigAutoEvolve:              ConfigAutoEvolve,
		"retention.ms":                changelog.PropRetentionMs,
		"retention.bytes":             changelog.PropRetentionBytes,
		changelog.PropMaxPinMs:        changelog.PropMaxPinMs,
		changelog.PropMaxPinSnapshots: changelog.PropMaxPinSnapshots,
		changelog.PropRetentionMs:     changelog.PropRetentionMs,
		changelog.PropRetentionBytes:  changelog.PropRetentionBytes,
	})
	return m
}

// Alterable reports whether config can be changed on a produced topic of
// the given kind (DescribeConfigs marks the others read-only).
func Alterable(props iceberg.Properties, config string) bool {
	if !changelog.IsRawTable(props) && !changelog.IsLSMTable(props) && !changelog.IsAppendTable(props) {
		return false
	}
	_, ok := alterable(props)[config]
	return ok
}

// AlterTopicConfigs sets and deletes configs of a topic whose table lakegw
// writes, as table properties, after check (the topic configuration
// parser) accepts the properties they make. Other tables are configured
// through their own engine (ErrReadOnly).
func (s *Service) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string,
	check func(iceberg.Properties) error, validateOnly bool) error {
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	for attempt := 1; ; attempt++ {
		tbl, err := s.cat.LoadTable(ctx, ident)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
		}
		if err != nil {
			return fmt.Errorf("load %s: %w", topic, err)
		}
		props := tbl.Properties()
		if !changelog.IsRawTable(props) && !changelog.IsLSMTable(props) && !changelog.IsAppendTable(props) {
			return fmt.Errorf("%w: %s serves a table lakegw does not write: set its lakegw.* table properties with the engine that owns it", ErrReadOnly, topic)
		}
		names := alterable(props)
		updates, removals := iceberg.Properties{}, []string{}
		for k, v := range set {
			prop, ok := names[k]
			switch {
			case !ok:
				return fmt.Errorf("%w: config %q cannot be changed on this topic", ErrInvalidConfig, k)
			case prop == "" && v != "-1":
				return fmt.Errorf("%w: %s=%s: a raw topic keeps every record (retention -1)", ErrInvalidConfig, k, v)
			case prop != "":
				updates[prop] = v
			}
		}
		for _, k := range del {
			prop, ok := names[k]
			if !ok {
				return fmt.Errorf("%w: config %q cannot be changed on this topic", ErrInvalidConfig, k)
			}
			if prop != "" {
				removals = append(removals, prop)
			}
		}
		next := maps.Clone(props)
		maps.Copy(next, updates)
		for _, k := range removals {
			delete(next, k)
		}
		if err := check(next); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if _, err := commitIntervalOf(next, 0); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if v, ok := next[ConfigAutoEvolve]; ok && v != "true" && v != "false" {
			return fmt.Errorf("%w: %s=%q: want true or false", ErrInvalidConfig, ConfigAutoEvolve, v)
		}
		if validateOnly || (len(updates) == 0 && len(removals) == 0) {
			return nil
		}
		tx := tbl.NewTransaction()
		if len(updates) > 0 {
			if err := tx.SetProperties(updates); err != nil {
				return err
			}
		}
		if len(removals) > 0 {
			if err := tx.RemoveProperties(removals); err != nil {
				return err
			}
		}
		_, err = lake.CommitOrClean(ctx, tbl, tx)
		if err == nil {
			// The writer takes the new interval, format and evolution
			// when it starts again.
			s.stopWriter(topic)
			return nil
		}
		if !lake.IsCommitConflict(err) || attempt >= maxCommitAttempts {
			return fmt.Errorf("alter the configs of %s: %w", topic, err)
		}
	}
}

// WriterConfigs are the configs of how the gateway writes a table it
// writes, with their effective values, for DescribeConfigs: the commit
// interval (the table's or the gateway's) and, on table topics, whether
// records' new fields become columns. Nil for other tables.
func (s *Service) WriterConfigs(props iceberg.Properties) [][2]string {
	if !changelog.IsRawTable(props) && !changelog.IsLSMTable(props) && !changelog.IsAppendTable(props) {
		return nil
	}
	value := props[ConfigCommitInterval] // as set, when the writer refuses it
	if interval, err := commitIntervalOf(props, s.cfg.CommitInterval); err == nil {
		value = strconv.FormatInt(interval.Milliseconds(), 10)
	}
	out := [][2]string{{ConfigCommitInterval, value}}
	if !changelog.IsRawTable(props) {
		out = append(out, [2]string{ConfigAutoEvolve, strconv.FormatBool(props[ConfigAutoEvolve] == "true")})
	}
	return out
}
