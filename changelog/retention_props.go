package changelog

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
)

// A topic's retention, as Kafka users set it, in table properties so every
// gateway and every maintenance pass of the table agree. The topics watcher
// reports it (DescribeConfigs) and lakegw LSM tables' maintenance keeps
// their changelog for it (lsm.Retention); other tables' own snapshot
// retention bounds their log.
const (
	PropRetentionMs    = "lakegw.retention.ms"
	PropRetentionBytes = "lakegw.retention.bytes"
	PropMaxPinMs       = "lakegw.consumer.max-pin"
	// PropMaxPinSnapshots bounds how many snapshots a pin keeps in a table
	// whose pins hold snapshots (every table but a lakegw LSM table with
	// its changelog log): each one stays in the metadata file that every
	// commit rewrites.
	PropMaxPinSnapshots = "lakegw.consumer.max-pin-snapshots"
	// PropMaintenanceEnabled marks a table serve maintains in the
	// background ("true"): quickstart and lsm.Create set it, a user may set
	// it on any table lakegw should maintain.
	PropMaintenanceEnabled = "lakegw.maintenance.enabled"
	// PropPartitions is the table's topic partition count (records are
	// spread by key hash, murmur2.go); a lakegw LSM table's is its bucket
	// count. Defined here, below both topics/ and lsm/, which read it.
	PropPartitions = "lakegw.partitions"
	// PropFormat is the record format of the table's topic (FormatByName),
	// which a table topic's producers write in too. Defined here, below
	// topics/ and produce/, which read it.
	PropFormat = "lakegw.format"
)

// Retention defaults: Kafka's retention.ms (7 days) and retention.bytes
// (unbounded), and a consumer may pin at most a day more.
const (
	DefaultRetentionMs    = int64(7 * 24 * time.Hour / time.Millisecond)
	DefaultRetentionBytes = int64(-1)
	DefaultMaxPinMs       = int64(24 * time.Hour / time.Millisecond)
	// DefaultMaxPinSnapshots is an hour of a table committing every
	// second: about 3 MB of metadata.json at the ~800 bytes a snapshot
	// takes there. A day's pin of such a table would make every commit
	// rewrite some 70 MB.
	DefaultMaxPinSnapshots = 3600
)

// Retention is what a table's retention properties say.
type Retention struct {
	// Ms and Bytes are retention.ms and retention.bytes (-1: unbounded).
	Ms, Bytes int64
	// MaxPinMs bounds how far back committed group offsets hold history.
	MaxPinMs int64
	// MaxPinSnapshots bounds the snapshots a pin holding snapshots keeps.
	MaxPinSnapshots int64
}

// DefaultRetention is the retention of a table that sets none.
func DefaultRetention() Retention {
	return Retention{Ms: DefaultRetentionMs, Bytes: DefaultRetentionBytes, MaxPinMs: DefaultMaxPinMs, MaxPinSnapshots: DefaultMaxPinSnapshots}
}

// ParseRetention overlays the table's retention properties on r; a value
// that is not a whole number in range is an error naming the property.
func ParseRetention(props iceberg.Properties, r Retention) (Retention, error) {
	for _, p := range []struct {
		name string
		dst  *int64
		min  int64
	}{{PropRetentionMs, &r.Ms, -1}, {PropRetentionBytes, &r.Bytes, -1}, {PropMaxPinMs, &r.MaxPinMs, 0},
		{PropMaxPinSnapshots, &r.MaxPinSnapshots, 1}} {
		v, ok := props[p.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < p.min || n == 0 && p.name != PropMaxPinMs {
			return r, fmt.Errorf("table property %s=%q: want an integer >= %d, not 0", p.name, v, p.min)
		}
		*p.dst = n
	}
	return r, nil
}

// MsDuration is retention.ms as a duration.
func (r Retention) MsDuration() time.Duration { return time.Duration(r.Ms) * time.Millisecond }
