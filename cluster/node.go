package cluster

import "fmt"

// Node is one gateway as clients reach it: its Kafka node id and the
// listener it advertises.
type Node struct {
	ID   int32
	Host string
	Port int32
	// Defaults names the topic defaults the gateway serves tables with
	// (partitions, format...): every gateway of a cluster must serve a
	// table alike, so they must agree (Join refuses one that does not).
	Defaults string
}

func (n Node) String() string { return fmt.Sprintf("node %d at %s:%d", n.ID, n.Host, n.Port) }
