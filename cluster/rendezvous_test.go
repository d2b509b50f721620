package cluster

import (
	"fmt"
	"hash/fnv"
	"testing"
)

func nodes(ids ...int32) []Node {
	out := make([]Node, len(ids))
	for i, id := range ids {
		out[i] = Node{ID: id, Host: "127.0.0.1", Port: 9000 + id}
	}
	return out
}

// Leadership spreads over the live gateways, and a gateway's death moves
// only what it led: the others keep theirs (no mass rebalancing of
// caches and groups).
func TestRendezvousSpreadsAndMovesOnlyTheDeadNodesShare(t *testing.T) {
	three := &View{Nodes: nodes(0, 1, 2)}
	two := &View{Nodes: nodes(0, 2)}
	led := map[int32]int{}
	moved := 0
	const topics, parts = 20, 30
	for i := range topics {
		topic := fmt.Sprintf("ns.t%d", i)
		for p := range int32(parts) {
			before, after := three.Leader(topic, p), two.Leader(topic, p)
			led[before.ID]++
			if before.ID != 1 && after.ID != before.ID {
				t.Fatalf("%s/%d moved from live node %d to %d when node 1 died", topic, p, before.ID, after.ID)
			}
			if before.ID == 1 {
				moved++
				if after.ID == 1 {
					t.Fatalf("%s/%d still led by the dead node", topic, p)
				}
			}
		}
	}
	for id, n := range led {
		if share := float64(n) / (topics * parts); share < 0.25 || share > 0.42 {
			t.Errorf("node %d leads %.0f%% of the partitions, want about a third", id, 100*share)
		}
	}
	if moved != led[1] {
		t.Errorf("%d partitions moved, node 1 led %d", moved, led[1])
	}
}

// Every gateway computes the same owner from the same live set, whatever
// order it learned the nodes in, and groups follow their shard.
func TestOwnersAreAgreedAndGroupsFollowShards(t *testing.T) {
	a, b := &View{Nodes: nodes(0, 1, 2)}, &View{Nodes: nodes(2, 0, 1)}
	for i := range 200 {
		g := fmt.Sprintf("group-%d", i)
		if a.Coordinator(g) != b.Coordinator(g) {
			t.Fatalf("%s: coordinators %v and %v", g, a.Coordinator(g), b.Coordinator(g))
		}
		if a.Coordinator(g) != a.ShardCoordinator(Shard(g)) {
			t.Fatalf("%s does not follow its shard", g)
		}
		if s := Shard(g); s < 0 || s >= GroupShards {
			t.Fatalf("%s: shard %d", g, s)
		}
	}
	if l := (&View{}).Leader("t", 0); l.ID != -1 {
		t.Fatalf("no live node: leader %v, want -1", l)
	}
}

// Leadership is asked on every fetched partition: it allocates nothing.
func TestLeaderAllocatesNothing(t *testing.T) {
	v := &View{Nodes: nodes(0, 1, 2)}
	if n := testing.AllocsPerRun(100, func() { v.Leader("ns.orders", 3); v.Coordinator("group-7") }); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}

// The scores are FNV-1a of id, kind, number and topic as hash/fnv computes
// it: gateways of this version and the one before agree on every leader.
func TestScoreIsFNV1a(t *testing.T) {
	h := fnv.New64a()
	h.Write([]byte{0, 0, 0, 2, 'p', 0, 0, 0, 3})
	h.Write([]byte("ns.orders"))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if got := score(2, partitionItem("ns.orders", 3)); got != x {
		t.Fatalf("score %x, want %x", got, x)
	}
	h32 := fnv.New32a()
	h32.Write([]byte("group-7"))
	if got, want := Shard("group-7"), int32(h32.Sum32()%GroupShards); got != want {
		t.Fatalf("shard %d, want %d", got, want)
	}
}
