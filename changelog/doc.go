// Package changelog owns the change-record model of lakegw (an event per row
// change: op, before-image, after-image, key, snapshot, sequence number,
// partition), the record formats (debezium-json, canal-json, upsert, json),
// the projection of rows written in one schema onto the table's current
// one (projection.go) and the Kafka key partitioner, the main-branch
// history of a table
// (SnapshotRef, MainHistory, and the pinned log that keeps expired snapshots
// a consumer still needs: PinnedLog, PinnedHistory, WithPinned), and the
// changelog files of lakegw's LSM
// tables: their schema, manifests, changelog log, end offsets and the
// lakegw.* retention properties.
//
// It does not read a snapshot's data: deriving the changes of a snapshot
// is derive/'s, which builds Changes through KeyFieldIDs,
// AssignPartitions, IndexPartitions, RowAppender and KeyAppender.
//
// It knows nothing of Kafka framing, offsets or error codes, and must not
// import derive/, protocol/, fetch/, offsets/, topics/ or lsm/ (lsm/
// writes the schema defined here, never the other way round). It may
// import lake/, lake/files and internal/bytepool.
package changelog
