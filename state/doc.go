// Package state is the gateway's embedded state store (SQLite through the
// pure-Go modernc driver): offset index segments, committed group offsets and
// registered tables, persisted so that a restart serves identical offsets;
// and Kafka transactions with the record batches they staged, so that a
// transaction survives a restart.
//
// It stores the index behind the interface offsets/ defines (offsets.Store,
// with its Segment and TopicState types) and committed offsets behind the
// one protocol/groups defines (groups.OffsetStore, groups.CommittedOffset)
// and transactions behind the one txn/ defines (txn.Store): one type per
// concept, owned by the package whose concept it is. It may import
// offsets/, protocol/groups and txn/ for those types alone; it must not
// import protocol/, fetch/, topics/, derive/, changelog/, lake/ or lsm/.
package state
