// Package lsm owns lakegw's primary-key tables: an LSM tree on Iceberg
// (buckets, memtable, sorted runs, universal compaction, merge engines, point
// lookups) whose commits write changelog files in the schema defined by
// changelog/.
//
// Layout. An LSM table is an unpartitioned Iceberg table (format v2, or v3
// with CreateOptions.FormatVersion) whose identifier fields are the primary
// key, marked by table properties (lakegw.lsm=true, lakegw.lsm.buckets,
// lakegw.lsm.merge-engine, lakegw.lsm.agg.<col>,
// lakegw.lsm.sequence-group.<col>, lakegw.partitions = buckets). A key's
// bucket is the Kafka murmur2 hash of its key JSON modulo the bucket count,
// computed by changelog.KeyPartitions, so the bucket is the topic partition.
// The bucket and level of a data file are in its path
// (data/bucket-00003/L0-<seq>-<uuid>.parquet), so the LSM structure is
// recovered from Iceberg's own live-file list (state.go): no second manifest
// to keep consistent. Sorted runs are Parquet (zstd, sorted by key, bloom
// filters on the key columns, exact key bounds in the manifest) with a
// sequence column _lakegw_seq under a field id no table schema assigns.
// lakegw writes its Parquet files (runs, changelog files, position
// deletes) with parquet-go and reads them with arrow-go as iceberg-go does
// (parquet_write.go, parquet_read.go).
//
// Invariant. Every snapshot has at most one live row per key, with no
// equality deletes: every commit that writes a key deletes its previous
// image by position in the same snapshot. So every Iceberg reader sees the
// right table at every snapshot.
//
// Commit (writer.go, commit.go, prepare.go). A Writer buffers writes per key
// (the memtable). Commit loads the head, and per bucket, in parallel,
// performs the lookup compaction of Paimon's lookup changelog producer: it
// finds each written key's live image (key bounds, then bloom filters, then
// a cached decoded file; lookup.go), folds the writes into it with the merge
// engine (merge.go), and writes a new L0 run of the changed images, the
// deletes of the images they replace, and the bucket's changelog file (+I,
// -U/+U, -D with full images). On v2 tables the deletes are one file-scoped
// position delete file per data file that lost images (posdelete.go); on v3
// tables they are deletion vectors (dv.go), one Puffin file per bucket with
// one DV per data file: a data file that already has a DV gets a new one
// holding the union of its old and new positions, and the RowDelta removes
// the old one (RowDelta.RemoveDeletes), so no data file ever has two live
// DVs. Lookups, Get and compaction read a file's DV, or without one its
// position deletes. Then one RowDelta, pinned to the head it was prepared
// on, commits everything; its summary carries the per-bucket record counts
// and the path of a JSON manifest of the changelog files. A conflict
// removes the attempt's files and redoes the lookups on the new head; a
// crash before the commit leaves only unreferenced files. Unchanged rows
// produce no event and no write.
//
// Compaction (compact.go, compact_pick.go). Paimon's universal compaction
// (size amplification, size ratio, run count; defaults 200 %, 1 %, 5 runs)
// merges a bucket's runs, drops deleted rows and commits a replace snapshot
// (RewriteFiles, keeping the inputs' data sequence number) that removes the
// inputs and their delete files or DVs: no row changes, no events.
//
// Retention (retention.go). A topic keeps lakegw.retention.ms of changes
// although maintenance expires the table's snapshots after an hour or so:
// the maintenance hook Retention tags checkpoint snapshots a quarter of the
// retention apart, lists the expired snapshots after the oldest checkpoint
// in the changelog log (changelog.LSMLog) and deletes the changelog of
// those that leave it. Every commit also records each bucket's end offset
// in its summary, so any gateway numbers the records alike.
//
// It may import changelog/, lake/ and lake/files (position delete files);
// it must not import protocol/, fetch/, topics/ or offsets/.
package lsm
