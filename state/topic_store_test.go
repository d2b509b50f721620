package state

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lakegw/lakegw/offsets"
)

// The offset index's state and segments survive the store: appended and
// replaced, then read back after reopening, in partition and offset order,
// with their epochs, encoding and every segment field. (offsets' own tests
// run on an in-memory Store with this behaviour.)
func TestTopicRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st := offsets.TopicState{Topic: "ns.t", TableUUID: "u-1", Partitions: 2, Encoding: "json/v1",
		Epochs: [][]offsets.EpochStart{{{Epoch: 4, StartOffset: 0}}, {{Epoch: 4, StartOffset: 0}, {Epoch: 9, StartOffset: 3}}}}
	first := []offsets.Segment{
		{Kind: offsets.KindChanges, Partition: 1, SnapshotID: 10, SequenceNumber: 1, TimestampMs: 100, BaseOffset: 0, Count: 3, Epoch: 4},
		{Kind: offsets.KindChanges, Partition: 0, SnapshotID: 10, SequenceNumber: 1, TimestampMs: 100, BaseOffset: 0, Count: 2, Epoch: 4},
	}
	if err := s.ReplaceTopic(ctx, st, first); err != nil {
		t.Fatal(err)
	}
	more := []offsets.Segment{
		{Kind: offsets.KindChanges, Partition: 0, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: 2, Count: 0, Epoch: 8},
		{Kind: offsets.KindChanges, Partition: 1, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: 3, Count: 1, Epoch: 8},
	}
	if err := s.AppendSegments(ctx, st, more); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gotSt, got, found, err := s.LoadTopic(ctx, "ns.t")
	if err != nil || !found {
		t.Fatalf("load: found %v, %v", found, err)
	}
	if !reflect.DeepEqual(gotSt, st) {
		t.Errorf("state %+v, want %+v", gotSt, st)
	}
	want := []offsets.Segment{first[1], more[0], first[0], more[1]} // by partition, then offset
	if !reflect.DeepEqual(got, want) {
		t.Errorf("segments\n%+v\nwant\n%+v", got, want)
	}

	// A replacement drops what was there: a compacted prefix alone.
	prefix := []offsets.Segment{{Kind: offsets.KindCompactedPrefix, Partition: 0, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: 0, Count: 2, Epoch: 9}}
	if err := s.ReplaceTopic(ctx, st, prefix); err != nil {
		t.Fatal(err)
	}
	if _, got, _, err = s.LoadTopic(ctx, "ns.t"); err != nil || !reflect.DeepEqual(got, prefix) {
		t.Errorf("after a replacement: %+v, %v; want %+v", got, err, prefix)
	}
	if _, _, found, err := s.LoadTopic(ctx, "ns.other"); found || err != nil {
		t.Errorf("a topic never indexed: found %v, %v", found, err)
	}
}
