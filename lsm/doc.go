// Package lsm owns lakegw's primary-key tables: an LSM tree on Iceberg
// (buckets, memtable, sorted runs, universal compaction, merge engines, point
// lookups) whose compaction writes changelog files in the schema defined by
// changelog/.
//
// It may import changelog/ and lake/; it must not import protocol/, fetch/,
// topics/ or offsets/.
package lsm
