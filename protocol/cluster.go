package protocol

import (
	"github.com/lakegw/lakegw/cluster"
)

// Self is this gateway as clients reach it (known once Listen bound).
func (s *Server) Self() cluster.Node {
	return cluster.Node{ID: s.cfg.NodeID, Host: s.advertHost, Port: s.advertPort}
}

// UseMembership makes m, a membership among other gateways, decide what
// this one leads and coordinates; call it after Listen and before Serve.
// Without it the gateway is a cluster of one.
func (s *Server) UseMembership(m *cluster.Membership) { s.members = m }

// view is the live gateways as this one last saw them.
func (s *Server) view() *cluster.View { return s.members.Current() }

// leads reports whether this gateway leads a topic partition: the one
// Fetch, ListOffsets and Produce of it must go to.
func (s *Server) leads(topic string, partition int32) bool {
	return s.view().Leader(topic, partition).ID == s.cfg.NodeID
}

// Leads reports whether this gateway leads a topic partition now.
func (s *Server) Leads(topic string, partition int32) bool { return s.leads(topic, partition) }

// inCluster reports whether other gateways may share the work, so that
// what only one gateway can do yet (transactions) is refused.
func (s *Server) inCluster() bool { return s.members.Shared() }
