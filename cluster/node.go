package cluster

import "fmt"

// Node is one gateway as clients reach it: its Kafka node id and the
// listener it advertises.
type Node struct {
	ID   int32
	Host string
	Port int32
}

func (n Node) String() string { return fmt.Sprintf("node %d at %s:%d", n.ID, n.Host, n.Port) }
