// Package maintain runs one maintenance pass of a table lakegw writes:
// snapshot expiry, removal of files only expired snapshots referenced,
// orphans past a grace period, metadata file cap, manifest merging, and
// small-file compaction of merge-on-read tables.
//
// A streaming table commits every few seconds, forever; without a pass like
// this every commit writes a metadata file holding every snapshot so far and
// the writers' commit cost grows with the history. Run keeps the snapshots,
// the metadata files, the manifest list and the data files bounded.
//
// A consumer's pin on a table that is not an LSM table is held by the
// table's pinned log (changelog.PinnedLog, pinned_log.go): the snapshots
// expire by the table's own retention and those still needed are listed
// there, their files kept, so the metadata file stays small.
//
// It may import lake/, changelog/ (IsLSMTable, the table property names and
// the pinned log),
// internal/sizedlru (its ManifestCache) and iceberg-go; it must not import
// protocol/, fetch/, topics/ or state/.
// Consumers' pins and lakegw LSM changelog retention come in through
// Options.Pin and Options.Retention, so the pass knows no group or offset.
package maintain
