package changelog

import (
	"fmt"
	"strconv"
)

// FormatByName returns the record format configured by name.
func FormatByName(name string) (Format, error) {
	switch name {
	case "debezium-json", "":
		return debeziumJSON{}, nil
	case "canal-json":
		return canalJSON{}, nil
	case "upsert":
		return upsertJSON{}, nil
	case "json":
		return plainJSON{}, nil
	case RawFormat:
		return rawFormat{}, nil
	}
	return nil, fmt.Errorf("unknown record format %q (want debezium-json, canal-json, upsert or json)", name)
}

// debeziumJSON writes Debezium's JSON envelope without schema, as Flink's
// debezium-json format reads it.
type debeziumJSON struct{}

func (debeziumJSON) Name() string { return "debezium-json" }

func (debeziumJSON) AppendKey(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	return appendKeyJSON(dst, c, rec)
}

func (debeziumJSON) AppendValue(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	enc, err := c.encoders()
	if err != nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, `{"before":`...)
	dst = appendRowRef(dst, enc, rec.Before)
	dst = append(dst, `,"after":`...)
	dst = appendRowRef(dst, enc, rec.After)
	dst = append(dst, `,"op":"`...)
	dst = append(dst, debeziumOp(rec.Op)...)
	return append(dst, enc.debeziumTail...), true
}

// appendDebeziumTail writes what follows "op" in every record of c: the
// event time and the source block, which names the schema the images are
// written in.
func appendDebeziumTail(dst []byte, c *Changes) []byte {
	dst = append(dst, `","ts_ms":`...)
	dst = strconv.AppendInt(dst, c.TimestampMs, 10)
	dst = append(dst, `,"source":{"connector":"lakegw","table":`...)
	dst = appendJSONString(dst, c.Table)
	dst = append(dst, `,"snapshot_id":`...)
	dst = strconv.AppendInt(dst, c.SnapshotID, 10)
	dst = append(dst, `,"sequence_number":`...)
	dst = strconv.AppendInt(dst, c.SequenceNumber, 10)
	if sc := c.RecordSchema(); sc != nil {
		dst = append(dst, `,"schema_id":`...)
		dst = strconv.AppendInt(dst, int64(sc.ID), 10)
	}
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, c.TimestampMs, 10)
	return append(dst, "}}"...)
}

func debeziumOp(op Op) string {
	switch op {
	case OpInsert:
		return "c"
	case OpUpdate:
		return "u"
	case OpDelete:
		return "d"
	case OpRead:
		return "r"
	}
	return "?"
}

// appendRowRef writes the referenced row as a JSON object, or null.
func appendRowRef(dst []byte, enc *changesEncoders, ref RowRef) []byte {
	if !ref.Valid() || int(ref.Batch) >= len(enc.batches) {
		return append(dst, "null"...)
	}
	return enc.batches[ref.Batch].row(dst, int(ref.Row))
}

// keyRow is the row a record's key is read from: the after-image when there
// is one (for an update both images have the same key values).
func keyRow(rec *Record) RowRef {
	if rec.After.Valid() {
		return rec.After
	}
	return rec.Before
}

// appendKeyJSON writes the key fields of the record's row as a JSON object;
// ok is false when the Changes has no key fields.
func appendKeyJSON(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	if len(c.KeyFieldIDs) == 0 {
		return dst, false
	}
	enc, err := c.encoders()
	if err != nil {
		return dst, false
	}
	ref := keyRow(rec)
	if !ref.Valid() || int(ref.Batch) >= len(enc.batches) || enc.batches[ref.Batch].key == nil {
		return dst, false
	}
	return enc.batches[ref.Batch].key(dst, int(ref.Row)), true
}
