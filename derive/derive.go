package derive

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// Derive returns the change events of one main-branch snapshot of tbl, in
// the order in which they get offsets: deletes, then inserts and updates.
// A replace snapshot has none. Anything but a pure append needs the parent
// snapshot in the metadata (after expiry, start from ReadSnapshot).
// Unsupported cases are errors, never silently wrong records; an error about
// a missing file names it and wraps fs.ErrNotExist. A panic while reading
// (a decoder meeting a damaged file) is an error too.
func Derive(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *changelog.Changes, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("derive changes of %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	s, c, err := snapshotChanges(tbl, snap, opts)
	if err != nil {
		return nil, err
	}
	op := snap.Operation
	if op == "" && s.Summary != nil {
		op = string(s.Summary.Operation)
	}
	// lakegw LSM tables carry their changes in changelog files.
	if path := lsmManifestPath(tbl, s); path != "" && op != string(table.OpReplace) {
		if err := deriveLSM(ctx, tbl, path, c); err != nil {
			c.Release()
			return nil, fmt.Errorf("changelog files of %s snapshot %d: %w", c.Table, c.SnapshotID, err)
		}
		if err := c.Prepare(); err != nil {
			c.Release()
			return nil, err
		}
		c.IndexPartitions()
		return c, nil
	}
	// A replace snapshot (compaction, rewritten deletes) changes files,
	// never rows.
	if op != string(table.OpReplace) {
		if err := deriveEvents(ctx, tbl, s, c, opts); err != nil {
			c.Release()
			return nil, fmt.Errorf("derive changes of %s snapshot %d: %w", c.Table, c.SnapshotID, err)
		}
	}
	if err := finish(c); err != nil {
		return nil, err
	}
	return c, nil
}

// snapshotChanges finds snap in the table metadata and returns it with an
// empty Changes for it.
func snapshotChanges(tbl *table.Table, snap changelog.SnapshotRef, opts Options) (*table.Snapshot, *changelog.Changes, error) {
	s, err := findSnapshot(tbl, snap, opts)
	if err != nil {
		return nil, nil, err
	}
	c, err := newChanges(tbl, s, snap, opts)
	if err != nil {
		return nil, nil, err
	}
	return s, c, nil
}

// newChanges returns an empty Changes with the snapshot's header fields,
// schemas and key fields.
func newChanges(tbl *table.Table, s *table.Snapshot, snap changelog.SnapshotRef, opts Options) (*changelog.Changes, error) {
	meta := tbl.Metadata()
	schema, err := snapshotSchema(meta, s)
	if err != nil {
		return nil, err
	}
	keys := schema.IdentifierFieldIDs
	if len(keys) == 0 && len(opts.KeyColumns) > 0 {
		// Configured key columns are named as the table names them now:
		// a snapshot written before a rename holds them under their ids.
		current := opts.Target
		if current == nil {
			current = meta.CurrentSchema() // a copy: only when needed
		}
		if keys, err = changelog.KeyFieldIDs(current, opts.KeyColumns); err != nil {
			return nil, fmt.Errorf("%s: %w", tableName(tbl), err)
		}
	}
	c := &changelog.Changes{
		Table:          tableName(tbl),
		SnapshotID:     snap.SnapshotID,
		SequenceNumber: snap.SequenceNumber,
		TimestampMs:    snap.TimestampMs,
		Schema:         schema,
		KeyFieldIDs:    slices.Clone(keys),
		Partitions:     max(opts.Partitions, 1),
	}
	if c.Partitions > 1 {
		// Only a partition choice hashes key names; the table's every
		// schema is a copy (iceberg-go clones them on access).
		c.KeyHashNames = changelog.StableKeyNames(meta.Schemas(), keys)
	}
	if opts.Target != nil {
		c.Target = opts.Target
		if c.TargetKeyFieldIDs, err = changelog.KeyFieldIDs(opts.Target, opts.KeyColumns); err != nil {
			return nil, fmt.Errorf("%s: %w", tableName(tbl), err)
		}
	}
	return c, nil
}

// finish prepares the encoders, assigns partitions and indexes them; on
// error it releases the Changes.
func finish(c *changelog.Changes) error {
	if err := c.Prepare(); err != nil {
		c.Release()
		return err
	}
	if err := c.AssignPartitions(); err != nil {
		c.Release()
		return err
	}
	c.IndexPartitions()
	return nil
}

func tableName(tbl *table.Table) string {
	return strings.Join(tbl.Identifier(), ".")
}

// snapshotSchema is the schema the snapshot was written with, or the current
// schema for snapshots that do not record one.
func snapshotSchema(meta table.Metadata, s *table.Snapshot) (*iceberg.Schema, error) {
	if s.SchemaID == nil {
		return meta.CurrentSchema(), nil
	}
	for _, sc := range meta.Schemas() {
		if sc.ID == *s.SchemaID {
			return sc, nil
		}
	}
	return nil, fmt.Errorf("snapshot %d names schema %d, which is not in the table metadata", s.SnapshotID, *s.SchemaID)
}

// deriveEvents fills c.Batches and c.Records with the events of snapshot s.
func deriveEvents(ctx context.Context, tbl *table.Table, s *table.Snapshot, c *changelog.Changes, opts Options) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	manifests, err := readManifestList(fs, s)
	if err != nil {
		return err
	}
	delta, err := readDelta(fs, s, manifests)
	if err != nil {
		return err
	}
	scan := tbl.Scan(table.WithSnapshotID(s.SnapshotID))
	if delta.pureAppend() {
		notePlan(tbl, s, delta, opts.PlanCache)
		return deriveAppend(ctx, fs, scan, delta, c, opts.RowGroups.derivation(tbl.Metadata().TableUUID().String()))
	}
	return deriveDiff(ctx, tbl, scan, s, delta, c, opts)
}

// deriveAppend turns every row of the added data files (by file path, rows
// in file order) into an insert.
func deriveAppend(ctx context.Context, fs icebergio.IO, scan *table.Scan, delta *snapshotDelta, c *changelog.Changes, rowGroups rowGroups) error {
	tasks := make([]table.FileScanTask, 0, len(delta.addedData))
	for _, e := range delta.addedData {
		tasks = append(tasks, dataTask(e))
	}
	batches, err := readTasks(ctx, fs, scan, tasks, rowGroups)
	if err != nil {
		return err
	}
	c.Batches = batches
	var n int64
	for _, b := range batches {
		n += b.NumRows()
	}
	c.Records = make([]changelog.Record, 0, n)
	for bi, b := range batches {
		for r := range int(b.NumRows()) {
			c.Records = append(c.Records, changelog.Record{Op: changelog.OpInsert, Before: changelog.NoRow, After: changelog.RowRef{Batch: int32(bi), Row: int32(r)}})
		}
	}
	return nil
}

// dataTask is a scan task reading every row of a data file, no deletes
// applied.
func dataTask(e iceberg.ManifestEntry) table.FileScanTask {
	f := e.DataFile()
	task := table.FileScanTask{File: f, Start: 0, Length: f.FileSizeBytes()}
	if seq := e.SequenceNum(); seq >= 0 {
		task.DataSequenceNumber = &seq
	}
	return task
}
