package protocol

import (
	"time"

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
	if len(view.Nodes) == 1 {
		return view.Nodes[0] // a lone gateway: no lookup on the fetch path
	}
	if t, ok := s.reg.Topic(topic); !ok || t.Written() {
		return view.Leader(produce.CanonicalTopic(topic), 0)
	}
	return view.Leader(topic, partition)
}

// Leads reports whether this gateway leads a topic partition now.
func (s *Server) Leads(topic string, partition int32) bool { return s.leads(topic, partition) }

// LeadsIn reports whether this gateway leads a topic partition in view.
func (s *Server) LeadsIn(view *cluster.View, topic string, partition int32) bool {
	return s.leaderOf(view, topic, partition).ID == s.cfg.NodeID
}

// WritesFrom holds back the Produce requests of the tables this gateway
// gained in the newest view until t: the gateway that led them may still
// be writing until it learns of the change, and a table has one writer at
// a time. Until t they answer NOT_LEADER_OR_FOLLOWER, which producers
// retry. Tables it led before are not held.
func (s *Server) WritesFrom(t time.Time) {
	s.writesMu.Lock()
	defer s.writesMu.Unlock()
	s.prevView, s.writesFrom = s.curView, t
	s.curView = s.view()
}

// writeLeads reports whether Produce of a topic partition may be written
// here now: this gateway leads it, and led it before the last change or
// has waited out the handover since.
func (s *Server) writeLeads(topic string, partition int32) bool {
	if !s.leads(topic, partition) {
		return false
	}
	s.writesMu.Lock()
	prev, from := s.prevView, s.writesFrom
	s.writesMu.Unlock()
	return prev == nil || time.Now().After(from) || s.LeadsIn(prev, topic, partition)
}

// inCluster reports whether other gateways may share the work, so that
// what only one gateway can do yet (transactions) is refused.
func (s *Server) inCluster() bool { return s.members.Shared() }
