package changelog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// RawEnds returns the end offset of every partition of a raw topic after
// snapshot s: from the summaries (LSMEnds), or, when maintenance snapshots
// that record none are all that is retained, from the data themselves: one
// past the highest offset of each partition in the files the table's
// current snapshot holds that were added at or before s. A raw topic's rows
// are never deleted, so both say the same.
func RawEnds(ctx context.Context, tbl *table.Table, s *table.Snapshot, partitions int) ([]int64, error) {
	if s == nil {
		return make([]int64, partitions), nil
	}
	ends, ok, err := LSMEnds(tbl.Metadata(), s, partitions)
	if err != nil || ok {
		return ends, err
	}
	if IsAppendTable(tbl.Properties()) {
		// One partition, rows never deleted: the end is the row count.
		var total int64
		err := errors.New("no summary")
		if s.Summary != nil {
			total, err = strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		}
		if err != nil || partitions != 1 {
			return nil, fmt.Errorf("append table snapshot %d records neither its ends nor its total records", s.SnapshotID)
		}
		return []int64{total}, nil
	}
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil, fmt.Errorf("raw topic table has snapshot %d but no current snapshot", s.SnapshotID)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	manifests, err := cur.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifest list of snapshot %d: %w", cur.SnapshotID, err)
	}
	ends = make([]int64, partitions)
	for _, m := range manifests {
		entries, err := icefiles.ManifestEntries(fs, m, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData || e.SequenceNum() > s.SequenceNumber {
				continue
			}
			p, hi, err := rawFileEnd(df)
			if err != nil {
				return nil, err
			}
			if p < 0 || int(p) >= partitions {
				return nil, fmt.Errorf("data file %s holds Kafka partition %d; the topic has %d", df.FilePath(), p, partitions)
			}
			ends[p] = max(ends[p], hi+1)
		}
	}
	return ends, nil
}

// rawFileEnd is a raw data file's partition and highest offset.
func rawFileEnd(df iceberg.DataFile) (int32, int64, error) {
	v, ok := df.Partition()[RawSpecFieldID]
	if !ok {
		return 0, 0, fmt.Errorf("data file %s has no Kafka partition value", df.FilePath())
	}
	p, ok := v.(int32)
	if !ok {
		return 0, 0, fmt.Errorf("data file %s: Kafka partition value %v is a %T", df.FilePath(), v, v)
	}
	hi, ok := df.UpperBoundValues()[RawOffsetFieldID]
	if !ok || len(hi) != 8 {
		return 0, 0, fmt.Errorf("data file %s records no offset bound", df.FilePath())
	}
	return p, int64(binary.LittleEndian.Uint64(hi)), nil
}
