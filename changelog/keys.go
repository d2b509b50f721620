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
// the Kafka default partitioner's choice for the record's key JSON (the full
// row JSON for a table without key fields, so that changes of equal rows
// stay in one partition, in order). derive/ calls it once Records are
// complete, after Prepare (whose encoders it uses), then IndexPartitions.
func (c *Changes) AssignPartitions() error {
	if c.Partitions <= 1 {
		for i := range c.Records {
			c.Records[i].Partition = 0
		}
		return nil
	}
	enc, err := c.encoders()
	if err != nil {
		return err
	}
	var buf []byte
	for i := range c.Records {
		rec := &c.Records[i]
		ref := keyRow(rec)
		if !ref.Valid() {
			return fmt.Errorf("record %d has no row", i)
		}
		b := enc.batches[ref.Batch]
		if b.key != nil {
			buf = b.key(buf[:0], int(ref.Row))
		} else {
			buf = b.row(buf[:0], int(ref.Row))
		}
		rec.Partition = partitionOf(buf, c.Partitions)
	}
	return nil
}
