// Package state is the gateway's state store: offset index segments,
// committed group offsets and registered tables, persisted so that a restart
// serves identical offsets; and Kafka transactions with the record batches
// they staged, so that a transaction survives a restart.
//
// It runs on SQLite in the data directory (the pure-Go modernc driver; the
// default, for one gateway) or on PostgreSQL (pgx; --state postgres://...),
// the database several gateways will share (issue 21). The queries are
// written once and rebound per database (dialect.go); PostgreSQL's schema is
// versioned (postgres_schema.go), SQLite's grows by added columns
// (migrate.go).
//
// It stores the index behind the interface offsets/ defines (offsets.Store,
// with its Segment and TopicState types) and committed offsets behind the
// one protocol/groups defines (groups.OffsetStore, groups.CommittedOffset)
// and transactions behind the one txn/ defines (txn.Store), and the live
// gateways behind cluster.Registry: one type per concept, owned by the
// package whose concept it is. It may import offsets/, protocol/groups,
// txn/ and cluster/ for those types alone; it must not
// import protocol/, fetch/, topics/, derive/, changelog/, lake/ or lsm/.
package state
