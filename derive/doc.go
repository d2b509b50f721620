// Package derive owns the changes of any Iceberg snapshot: it reads a
// snapshot of a table (appends, position deletes, deletion vectors,
// equality deletes, copy-on-write rewrites, and the changelog files of
// lakegw's LSM tables) and returns its change events as a changelog.Changes.
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
// A PlanCache keeps recent plans so that a snapshot's plan extends its
// parent's; a RowGroupCache keeps the row groups that position deletes
// fall on densely (and the newest files, read whole as inserts) decoded,
// so that the next snapshots' before-images are taken from them rather
// than decompressed and decoded again. ReadSnapshot gives the live rows of a snapshot as reads, the
// compacted prefix of a topic whose history expired. A snapshot of an LSM
// table is served from the changelog files its writer recorded (in the
// schema changelog/ defines). A large append or prefix is read a range at
// a time by a Stream (OpenAppendStream, OpenSnapshotStream), counted
// beforehand from its manifests and delete files (AppendCount,
// SnapshotCount), so that no reader holds it whole.
//
// Damaged files fail the derivation, never the process: a flat data file
// read whole is decoded by fileRows in lakegw's own goroutine, under
// recover and an allocation cap; every other file handed to iceberg-go's
// scanner (which decodes in goroutines of its own, where a panic cannot be
// recovered) is first decoded once in lakegw's goroutine the same way
// (file_check.go), and Derive, ReadSnapshot and Stream.Read turn any other
// panic into an error.
//
// The change model, the record formats, the history of a topic's
// snapshots (SnapshotRef, MainHistory) and the LSM changelog file schema
// are changelog/'s: derive builds Changes through the few methods
// changelog exports for it (KeyFieldIDs, AssignPartitions,
// IndexPartitions, RowAppender, KeyAppender).
//
// It knows nothing of Kafka framing, offsets or error codes. It may import
// changelog/, lake/, lake/files (position delete files are read there) and
// internal/bytepool; it must not import protocol/, fetch/, topics/,
// offsets/, lsm/ or state/ (lsm/ writes the changelog files it reads, never
// the other way round).
package derive
