package protocol

import (
	"github.com/lakegw/lakegw/cluster"
	"github.com/lakegw/lakegw/produce"
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
	return s.leaderOf(s.view(), topic, partition).ID == s.cfg.NodeID
}

// leaderOf is the gateway leading a topic partition in view. A table
// lakegw writes (or a topic not served yet, which a Produce may be about
// to create) has one leader for all its partitions, by its canonical
// name: its writer keeps the producers' state of the whole table in each
// commit (produce/), so two gateways must never write it at once. Other
// tables spread their partitions over the gateways.
func (s *Server) leaderOf(view *cluster.View, topic string, partition int32) cluster.Node {
	if t, ok := s.reg.Topic(topic); !ok || t.Written() {
		return view.Leader(produce.CanonicalTopic(topic), 0)
	}
	return view.Leader(topic, partition)
}

// Leads reports whether this gateway leads a topic partition now.
func (s *Server) Leads(topic string, partition int32) bool { return s.leads(topic, partition) }

// inCluster reports whether other gateways may share the work, so that
// what only one gateway can do yet (transactions) is refused.
func (s *Server) inCluster() bool { return s.members.Shared() }
