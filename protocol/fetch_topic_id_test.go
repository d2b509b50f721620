package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// From v13 a Fetch names topics by id: partitions named twice collapse by
// topic id, and two topics whose ids differ stay apart even when neither
// is served (both would have no name).
func TestFetchDuplicatePartitionsCollapseByTopicID(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 18
	add := func(id byte, parts ...int32) {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte{id}
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p, int64(len(req.Topics))
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	add(1, 0, 0, 1)
	add(2, 0)
	add(1, 1, 2)
	collapseDuplicatePartitions(req)
	type tp struct {
		id        byte
		partition int32
		offset    int64
	}
	var got []tp
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, tp{rt.TopicID[0], rp.Partition, rp.FetchOffset})
		}
	}
	want := []tp{{1, 0, 0}, {1, 1, 0}, {1, 2, 2}, {2, 0, 1}}
	if len(got) != len(want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("partitions %v, want %v (topic id, partition, offset of the first mention)", got, want)
		}
	}
}
