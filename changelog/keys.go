package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// KeyFieldIDs returns the key of a table's change records: the schema's
// identifier fields, else the configured key columns resolved by name, else
// none. Exported for derive/, which sets Changes.KeyFieldIDs with it.
func KeyFieldIDs(schema *iceberg.Schema, keyColumns []string) ([]int, error) {
	if ids := schema.IdentifierFieldIDs; len(ids) > 0 {
		return slices.Clone(ids), nil
	}
	ids := make([]int, 0, len(keyColumns))
	for _, name := range keyColumns {
		f, ok := schema.FindFieldByName(name)
		if !ok {
			return nil, fmt.Errorf("key column %q is not in schema %d", name, schema.ID)
		}
		ids = append(ids, f.ID)
	}
	return ids, nil
}

// AssignPartitions sets each record's partition: 0 with one partition, else
// the Kafka default partitioner's choice for the record's key JSON as
// written, its fields named by KeyHashNames (the full row JSON as written
// for a table without key fields, so that changes of equal rows stay in
// one partition, in order). It reads the rows as written, never in Target:
// a record's partition, and so every offset, is fixed when its snapshot
// is committed, whatever the schema becomes. derive/ calls it once Records
// are complete, then IndexPartitions.
func (c *Changes) AssignPartitions() error {
	if c.Partitions <= 1 {
		for i := range c.Records {
			c.Records[i].Partition = 0
		}
		return nil
	}
	hash := make([]appendFn, len(c.Batches))
	for i, b := range c.Batches {
		var err error
		if len(c.KeyFieldIDs) > 0 {
			hash[i], err = keyAppender(c.Schema, b, c.KeyFieldIDs, c.KeyHashNames)
		} else {
			hash[i], err = RowAppender(b)
		}
		if err != nil {
			return fmt.Errorf("partition key of batch %d of %s snapshot %d: %w", i, c.Table, c.SnapshotID, err)
		}
	}
	var buf []byte
	for i := range c.Records {
		rec := &c.Records[i]
		ref := keyRow(rec)
		if !ref.Valid() || int(ref.Batch) >= len(hash) {
			return fmt.Errorf("record %d has no row", i)
		}
		buf = hash[ref.Batch](buf[:0], int(ref.Row))
		rec.Partition = partitionOf(buf, c.Partitions)
	}
	return nil
}

// StableKeyNames names each key field ids by its name in the oldest of
// schemas that holds it (by schema id): the name the table's first rows
// were hashed to partitions and buckets by, which a later rename must not
// change. A field no schema holds keeps no name ("").
func StableKeyNames(schemas []*iceberg.Schema, ids []int) []string {
	names := make([]string, len(ids))
	for i, id := range ids {
		oldest := -1
		for _, sc := range schemas {
			if name, ok := sc.FindColumnName(id); ok && (oldest < 0 || sc.ID < oldest) {
				oldest, names[i] = sc.ID, name
			}
		}
	}
	return names
}
