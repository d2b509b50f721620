// Package produce writes what Kafka producers send into lake tables: it
// owns the raw topics' tables (CreateRawTopic: one row per Kafka record,
// partitioned by Kafka partition, changelog/raw_table.go), the group
// commit of every table lakegw takes produced records for (one writer
// goroutine per table batches every producer's records into one Iceberg
// commit per commit interval and assigns their offsets in commit order),
// and idempotent producers' sequence state (producers.go), which each
// commit carries in its snapshot summary so that a restarted gateway still
// recognises a retried batch.
//
// A batch is acknowledged only when the Iceberg commit holding it has
// succeeded; a commit that fails fails every batch waiting on the table
// with ErrCommitFailed (retriable) and nothing of it is visible.
//
// Table topics (table_target.go) are lakegw primary-key tables: each
// record, in the topic's format (upsert, debezium-json, canal-json, json:
// table_records.go), becomes upserts and deletes through an lsm.Writer, one
// per group commit, and the topic serves the changelog those commits
// write. A record that does not fit the schema fails its batch
// (RecordError), before the batch is accepted.
//
// It knows Kafka's record model (partitions, offsets, producer ids,
// sequences) but not its wire format: protocol/ decodes requests into
// Batches and maps the errors here to Kafka error codes. It may import
// changelog/, lake/, lsm/, maintain/ (a raw topic's commits expire its
// older snapshots: maintain.HistoryCap) and internal/kafkaseq; it must not import protocol/, fetch/,
// topics/, offsets/ or derive/ (consumers are woken through
// Config.OnCommit).
package produce
