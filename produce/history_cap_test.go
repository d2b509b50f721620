package produce

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakegw/lakegw/lake"
)

// A raw topic's commits expire its older snapshots themselves: after many
// more commits than RawSnapshotsKept, with no maintenance pass, the table
// keeps at most RawSnapshotsKept snapshots, no manifest list of an expired
// one is left on disk, and an Iceberg scan still reads every record at its
// offset.
func TestRawTopicCommitsKeepHistoryBounded(t *testing.T) {
	cat, dir := openCatalog(t)
	s, _ := newServiceWith(t, cat, Config{CommitInterval: 20 * time.Millisecond, ExpiredFilesGrace: -1})
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "busy", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	const commits = RawSnapshotsKept*2 + 10
	want := map[[2]int64]string{}
	next := make([]int64, 2)
	for c := range commits {
		p := int32(c % 2)
		b := Batch{Partition: p, ProducerID: NoProducer, Records: recs(fmt.Sprintf("c%d", c), 3)}
		res, _ := s.Produce(ctx, "busy", []Batch{b})
		if res[0].Err != nil || res[0].BaseOffset != next[p] {
			t.Fatalf("commit %d: %+v, want base offset %d", c, res[0], next[p])
		}
		for j, rec := range b.Records {
			want[[2]int64{int64(p), next[p] + int64(j)}] = string(rec.Value)
		}
		next[p] += int64(len(b.Records))
	}
	ident, err := lake.TopicIdent("busy")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) > RawSnapshotsKept || len(snaps) < 2 {
		t.Fatalf("%d snapshots after %d commits, want 2..%d", len(snaps), commits, RawSnapshotsKept)
	}
	// Every manifest list on disk is a retained snapshot's: the writer
	// removes those of the snapshots it expired once it has answered, so
	// the last commit's may take a moment.
	retained := map[string]bool{}
	for _, sn := range snaps {
		retained[filepath.Base(strings.TrimPrefix(sn.ManifestList, "file://"))] = true
	}
	var stray []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		lists, err := filepath.Glob(filepath.Join(dir, "warehouse", "kafka.db", "busy", "metadata", "snap-*.avro"))
		if err != nil {
			t.Fatal(err)
		}
		stray = stray[:0]
		for _, l := range lists {
			if !retained[filepath.Base(l)] {
				stray = append(stray, filepath.Base(l))
			}
		}
		if len(stray) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(stray) > 0 {
		t.Errorf("manifest lists of expired snapshots still on disk: %v", stray)
	}
	assertRows(t, scanRows(t, cat, "busy"), want)
}

// The files of the snapshots a raw topic's commits expire stay for
// ExpiredFilesGrace: a scan planned on a snapshot that expired a moment
// later still finds its manifest list (and so its manifests and data
// files) on disk.
func TestExpiredSnapshotsKeepTheirFilesForTheGrace(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newServiceWith(t, cat, Config{CommitInterval: time.Millisecond, ExpiredFilesGrace: time.Hour})
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "busy", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	produce := func(c int) {
		res, _ := s.Produce(ctx, "busy", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs(fmt.Sprintf("c%d", c), 2)}})
		if res[0].Err != nil {
			t.Fatalf("commit %d: %v", c, res[0].Err)
		}
	}
	produce(0)
	ident, err := lake.TopicIdent("busy")
	if err != nil {
		t.Fatal(err)
	}
	early, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for c := 1; c < RawSnapshotsKept+10; c++ {
		produce(c)
	}
	now, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if now.Metadata().SnapshotByID(early.CurrentSnapshot().SnapshotID) != nil {
		t.Fatal("the first snapshot was not expired: the test proves nothing")
	}
	// A reader holding the early metadata scans it in full.
	_, itr, err := early.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatalf("scan of a snapshot expired within the grace: %v", err)
	}
	rows := 0
	for rec, err := range itr {
		if err != nil {
			t.Fatalf("scan of a snapshot expired within the grace: %v", err)
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	if rows != 2 {
		t.Fatalf("the early snapshot scans %d rows, want 2", rows)
	}
}
