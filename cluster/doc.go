// Package cluster owns the set of live gateways and who does what among
// them: the leader of each topic partition (the gateway Fetch, ListOffsets
// and Produce of that partition go to) and the coordinator of each group
// (by the group's shard, as Kafka maps groups to __consumer_offsets
// partitions).
//
// Gateways find each other through a Registry (the shared state store:
// each one heartbeats its row; a row not renewed within the lease is dead,
// by the database's clock, so gateways' clocks need not agree). Leadership
// is rendezvous hashing over the live gateways' node ids: every gateway
// computes the same owner from the same live set, and a gateway's death
// moves only what it owned. A single gateway (the SQLite store) is a
// cluster of one.
//
// It imports nothing of lakegw's: protocol/ asks it who leads and
// coordinates, state/ implements its Registry, cmd/ runs it.
package cluster
