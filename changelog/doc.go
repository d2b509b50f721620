// Package changelog owns the change-record model of lakegw (an event per row
// change: op, before-image, after-image, key, snapshot, sequence number), the
// derivation of those events from any Iceberg snapshot (appends, position
// deletes, deletion vectors, equality deletes, copy-on-write rewrites), the
// changelog file schema that lsm/ writes, and the record formats
// (debezium-json, canal-json, upsert, json).
//
// Derivation (Derive) reads a snapshot's own manifests to tell a pure append
// (inserts of the added files' rows) from anything else. For anything else it
// plans the snapshot and its parent with iceberg-go, so every data file comes
// with exactly the delete files an Iceberg reader applies to it, and diffs the
// live rows of the files that changed: before-images against after-images as
// multisets, carry-over rows cancelling, a delete and an insert with the same
// key becoming an update. Files that only gained position deletes are read at
// the new positions only, files that only gained equality deletes through a
// filter of the new keys, so the cost follows the rows a snapshot touches.
// ReadSnapshot gives the live rows of a snapshot as reads, the compacted
// prefix of a topic whose history expired.
//
// Damaged files fail the derivation, never the process: every file handed
// to iceberg-go's scanner (which decodes in goroutines of its own, where a
// panic cannot be recovered) is first decoded once in the caller's
// goroutine under recover and an allocation cap (file_check.go), and
// Derive and ReadSnapshot turn any other panic into an error.
//
// It knows nothing of Kafka framing, offsets or error codes, and must not
// import protocol/, fetch/, offsets/, topics/ or lsm/ (lsm/ writes the schema
// defined here, never the other way round). It may import lake/, lake/files
// (position delete files are read there) and internal/bytepool.
package changelog
