package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestHostileCacheReRegisteredFormat reproduces row 7 of issue 12: a
// registered table is served and read, its lakegw.format is changed to
// upsert and the table registered again. The same offsets must come back
// in the new format at once, under a higher leader epoch (and the old
// epoch must end at the log start, so a consumer of it sees a
// truncation), not as debezium-json from the caches; after a restart, the
// same format under the same epoch.
func TestHostileCacheReRegisteredFormat(t *testing.T) {
	const ident = "hostile.cache"
	w := newTableWriter(t, t.TempDir(), "src", "events")
	w.appendRows(5)
	w.appendRows(40)
	n := len(w.allRows())
	metadataOf := func() string {
		tbl, err := w.cat.LoadTable(context.Background(), w.ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl.MetadataLocation()
	}
	dataDir := t.TempDir()
	fidRegister(t, dataDir, ident, metadataOf())
	g := startGateway(t, dataDir, "")

	before := consumeAllOf(t, g.addr, ident, n)
	// Each snapshot's records carry their own epoch (non-decreasing);
	// oldEpoch is the newest of them, the one a consumer would validate.
	var oldEpoch int32 = -1
	for _, r := range before {
		if !bytes.HasPrefix(r.Value, []byte(`{"before":`)) || r.LeaderEpoch < oldEpoch {
			t.Fatalf("offset %d before the change: epoch %d value %s, want debezium-json under an epoch of at least %d", r.Offset, r.LeaderEpoch, r.Value, oldEpoch)
		}
		oldEpoch = r.LeaderEpoch
	}
	adm := kadm.NewClient(mustClient(t, g.addr))
	servedEpoch := hostileCacheEpochAbove(t, adm, ident, oldEpoch-1)

	setTableProps(t, w.cat, w.ident, map[string]string{"lakegw.format": "upsert"})
	fidRegister(t, dataDir, ident, metadataOf())
	newEpoch := hostileCacheEpochAbove(t, adm, ident, servedEpoch)

	checkUpsert := func(g *gateway, when string) {
		t.Helper()
		recs := consumeAllOf(t, g.addr, ident, n)
		for i, r := range recs {
			if r.Offset != before[i].Offset || r.LeaderEpoch != newEpoch || bytes.HasPrefix(r.Value, []byte(`{"before":`)) || !bytes.HasPrefix(r.Value, []byte(`{`)) {
				t.Fatalf("%s: offset %d epoch %d value %s, want offset %d in upsert format under epoch %d",
					when, r.Offset, r.LeaderEpoch, r.Value, before[i].Offset, newEpoch)
			}
		}
	}
	checkUpsert(g, "after re-registering")
	hnetRequireHealthy(t, g, "", "after re-registering the table in another format")

	// A consumer that read under the old epoch is told its records end at
	// the log start: it reads the topic again.
	if end := epochEnd(t, g.addr, ident, 0, oldEpoch); end != 0 {
		t.Fatalf("OffsetForLeaderEpoch(%d): end offset %d, want the log start 0", oldEpoch, end)
	}

	g.stop()
	g2 := startGateway(t, dataDir, g.addr)
	if e := hostileCacheEpochAbove(t, kadm.NewClient(mustClient(t, g2.addr)), ident, newEpoch-1); e != newEpoch {
		t.Fatalf("leader epoch %d after a restart, want %d", e, newEpoch)
	}
	checkUpsert(g2, "after a restart")
}

// hostileCacheEpochAbove waits until Metadata gives partition 0 of topic a
// leader epoch above floor, and returns it.
func hostileCacheEpochAbove(t *testing.T, adm *kadm.Client, topic string, floor int32) int32 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx, topic)
		cancel()
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) > 0 && td.Partitions[0].LeaderEpoch > floor {
				return td.Partitions[0].LeaderEpoch
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: no leader epoch above %d within 15 s (metadata error %v)", topic, floor, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
