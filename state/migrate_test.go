package state

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/lakegw/lakegw/offsets"
)

// A store written before segments had a kind and an epoch, and topics an
// encoding, opens, keeps its
// segments and takes new ones.
func TestOpenMigratesAnOlderStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE topic_state (topic TEXT PRIMARY KEY, table_uuid TEXT NOT NULL, partitions INTEGER NOT NULL, epochs TEXT NOT NULL)`,
		`CREATE TABLE segments (topic TEXT NOT NULL, partition INTEGER NOT NULL, base_offset INTEGER NOT NULL,
			snapshot_id INTEGER NOT NULL, sequence_number INTEGER NOT NULL, timestamp_ms INTEGER NOT NULL,
			record_count INTEGER NOT NULL, PRIMARY KEY (topic, partition, base_offset, snapshot_id))`,
		`INSERT INTO topic_state VALUES ('ns.t', 'u', 1, '[[{"epoch":0,"start_offset":0}]]')`,
		`INSERT INTO segments VALUES ('ns.t', 0, 0, 11, 1, 1000, 5)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st, segs, found, err := s.LoadTopic(ctx, "ns.t")
	if err != nil || !found {
		t.Fatalf("load: %v %v", found, err)
	}
	if len(segs) != 1 || segs[0].SnapshotID != 11 || segs[0].Count != 5 || segs[0].Kind != offsets.KindChanges || segs[0].Epoch != -1 {
		t.Fatalf("old segments: %+v", segs)
	}
	if st.Encoding != "" {
		t.Fatalf("old topic state has encoding %q, want none", st.Encoding)
	}
	add := offsets.Segment{Kind: offsets.KindCompactedPrefix, SnapshotID: 12, BaseOffset: 5, Count: 2, Epoch: 3}
	st.Encoding = "format=upsert"
	if err := s.AppendSegments(ctx, st, []offsets.Segment{add}); err != nil {
		t.Fatal(err)
	}
	if st, segs, _, err = s.LoadTopic(ctx, "ns.t"); err != nil || len(segs) != 2 || segs[1] != add || st.Encoding != "format=upsert" {
		t.Fatalf("after append: %+v %q %v", segs, st.Encoding, err)
	}
	s.Close()
	// A migrated store opens as any other.
	again, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}
