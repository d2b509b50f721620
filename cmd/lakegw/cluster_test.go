package main

import (
	"testing"
	"time"

	"github.com/lakegw/lakegw/cluster"
)

// The shards a gateway gains wait for their previous coordinator only
// when it may still be running them: it is alive, or unknown (a gateway's
// first view, or its first after a fence).
func TestHandoverGrace(t *testing.T) {
	m, err := cluster.New(cluster.Node{ID: 0}, nil, cluster.Options{HeartbeatInterval: time.Second, Lease: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	grace := m.HandoverGrace()
	nodes := func(ids ...int32) []cluster.Node {
		var out []cluster.Node
		for _, id := range ids {
			out = append(out, cluster.Node{ID: id})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		old, cur *cluster.View
		want     time.Duration
	}{
		{"alone at start", nil, &cluster.View{Nodes: nodes(0)}, 0},
		{"joining others", nil, &cluster.View{Nodes: nodes(0, 1, 2)}, grace},
		{"back from a fence", &cluster.View{Nodes: nodes(1), Fenced: true}, &cluster.View{Nodes: nodes(0, 1)}, grace},
		{"a peer died", &cluster.View{Nodes: nodes(0, 1, 2)}, &cluster.View{Nodes: nodes(0, 2)}, 0},
		{"a peer joined (nothing gained)", &cluster.View{Nodes: nodes(0, 1)}, &cluster.View{Nodes: nodes(0, 1, 2)}, 0},
	} {
		if got := handoverGrace(m, tc.old, tc.cur, 0); got != tc.want {
			t.Errorf("%s: grace %s, want %s", tc.name, got, tc.want)
		}
	}
}
