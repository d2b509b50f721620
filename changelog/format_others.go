package changelog

import (
	"strconv"
	"strings"
)

// canalJSON writes Canal's JSON message as Flink's canal-json format reads
// it: "data" holds the row (the deleted row for a delete), "old" the full
// before-image of an update.
type canalJSON struct{}

func (canalJSON) Name() string { return "canal-json" }

func (canalJSON) AppendKey(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	return appendKeyJSON(dst, c, rec)
}

func (canalJSON) AppendValue(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	enc, err := c.encoders()
	if err != nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, `{"data":[`...)
	switch rec.Op {
	case OpDelete:
		dst = appendRowRef(dst, enc, rec.Before)
	default:
		dst = appendRowRef(dst, enc, rec.After)
	}
	dst = append(dst, `],"old":`...)
	if rec.Op == OpUpdate {
		dst = append(dst, '[')
		dst = appendRowRef(dst, enc, rec.Before)
		dst = append(dst, ']')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"type":"`...)
	dst = append(dst, canalType(rec.Op)...)
	return append(dst, enc.canalTail...), true
}

// appendCanalTail writes what follows "type" in every record of c.
func appendCanalTail(dst []byte, c *Changes) []byte {
	db, tbl := splitTableName(c.Table)
	dst = append(dst, `","database":`...)
	dst = appendJSONString(dst, db)
	dst = append(dst, `,"table":`...)
	dst = appendJSONString(dst, tbl)
	dst = append(dst, `,"es":`...)
	dst = strconv.AppendInt(dst, c.TimestampMs, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, c.TimestampMs, 10)
	return append(dst, `,"isDdl":false}`...)
}

func canalType(op Op) string {
	switch op {
	case OpUpdate:
		return "UPDATE"
	case OpDelete:
		return "DELETE"
	}
	return "INSERT"
}

// splitTableName splits "<namespace>.<table>" at its last dot (namespaces
// may hold dots themselves).
func splitTableName(name string) (namespace, table string) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// upsertJSON is the upsert-kafka format: key = key fields, value = the row
// after the change, or a tombstone (no value) for a delete.
type upsertJSON struct{}

func (upsertJSON) Name() string { return "upsert" }

func (upsertJSON) AppendKey(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	return appendKeyJSON(dst, c, rec)
}

func (upsertJSON) AppendValue(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	if rec.Op == OpDelete || !rec.After.Valid() {
		return dst, false
	}
	enc, err := c.encoders()
	if err != nil {
		return append(dst, "null"...), true
	}
	return appendRowRef(dst, enc, rec.After), true
}

// plainJSON writes the row (the before-image for a delete) with an "op"
// field holding the lakegw.op header value (+I, +U, -D, r).
type plainJSON struct{}

func (plainJSON) Name() string { return "json" }

func (plainJSON) AppendKey(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	return appendKeyJSON(dst, c, rec)
}

func (plainJSON) AppendValue(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	enc, err := c.encoders()
	if err != nil {
		return append(dst, "null"...), true
	}
	ref := rec.After
	if rec.Op == OpDelete {
		ref = rec.Before
	}
	start := len(dst)
	dst = appendRowRef(dst, enc, ref)
	if len(dst)-start < 2 || dst[len(dst)-1] != '}' {
		return dst, true
	}
	// Re-open the row object to add the op field.
	dst = dst[:len(dst)-1]
	if len(dst)-start > 1 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"op":"`...)
	dst = append(dst, rec.Op.Header()...)
	return append(dst, `"}`...), true
}
