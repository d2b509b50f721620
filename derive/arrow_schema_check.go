package derive

import (
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// An Arrow schema embedded in a Parquet footer (ARROW:schema) is a
// flatbuffer that arrow-go decodes trusting every vector length in it: it
// makes a slice of that length before reading the elements, so one damaged
// length asks for gigabytes, and running out of memory ends a Go process
// however it is recovered. checkSchemaMessage walks the flatbuffer along
// the vectors arrow-go's schemaFromFB sizes slices by (Schema.fields,
// Field.children, custom metadata, features, a union's type ids) and
// refuses a vector that does not fit in the buffer, or nesting deeper than
// maxSchemaDepth (a damaged offset can make a cycle, and unbounded
// recursion is just as fatal). Reads outside the buffer panic in the
// flatbuffers library: the caller recovers them.

// maxSchemaDepth bounds the nesting of fields in an embedded schema.
const maxSchemaDepth = 64

var errSchemaVector = errors.New("embedded Arrow schema: a vector longer than its buffer")

// checkSchemaMessage checks an IPC-encapsulated Schema message.
func checkSchemaMessage(buf []byte) error {
	if len(buf) >= 4 && binary.LittleEndian.Uint32(buf) == 0xFFFFFFFF {
		buf = buf[4:] // continuation marker
	}
	if len(buf) < 4 {
		return fmt.Errorf("embedded Arrow schema of %d bytes", len(buf))
	}
	n := int64(int32(binary.LittleEndian.Uint32(buf)))
	if n < 0 || n > int64(len(buf)-4) {
		return fmt.Errorf("embedded Arrow schema: message of %d bytes in %d", n, len(buf)-4)
	}
	fb := buf[4 : 4+n]
	msg := rootTable(fb)
	if err := checkKeyValues(msg, 4); err != nil {
		return err
	}
	hdr, ok := subTable(msg, 2)
	if !ok {
		return nil
	}
	// Schema: fields (1), custom_metadata (2), features (3, int64s).
	if err := checkVector(hdr, 3, 8); err != nil {
		return err
	}
	if err := checkKeyValues(hdr, 2); err != nil {
		return err
	}
	return checkFields(hdr, 1, 0)
}

func rootTable(buf []byte) *flatbuffers.Table {
	return &flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
}

// slot is the vtable offset of a table's field.
func slot(field int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*field) }

func subTable(t *flatbuffers.Table, field int) (*flatbuffers.Table, bool) {
	o := flatbuffers.UOffsetT(t.Offset(slot(field)))
	if o == 0 {
		return nil, false
	}
	return &flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(o + t.Pos)}, true
}

// checkVector checks that a vector field's elements fit in the buffer.
func checkVector(t *flatbuffers.Table, field, elemSize int) error {
	o := flatbuffers.UOffsetT(t.Offset(slot(field)))
	if o == 0 {
		return nil
	}
	start := t.Vector(o)
	n := t.VectorLen(o)
	if int64(start)+int64(n)*int64(elemSize) > int64(len(t.Bytes)) {
		return errSchemaVector
	}
	return nil
}

func tablesOf(t *flatbuffers.Table, field int, do func(*flatbuffers.Table) error) error {
	if err := checkVector(t, field, 4); err != nil {
		return err
	}
	o := flatbuffers.UOffsetT(t.Offset(slot(field)))
	if o == 0 {
		return nil
	}
	start := t.Vector(o)
	for i := range t.VectorLen(o) {
		at := start + flatbuffers.UOffsetT(i)*4
		if err := do(&flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(at)}); err != nil {
			return err
		}
	}
	return nil
}

// checkKeyValues checks a custom_metadata vector (of KeyValue tables,
// whose strings arrow-go slices, not sizes).
func checkKeyValues(t *flatbuffers.Table, field int) error {
	return checkVector(t, field, 4)
}

// checkFields checks a vector of Field tables: children (5), custom
// metadata (6), and a union type's (type_type 14, type 3) type ids (1).
func checkFields(t *flatbuffers.Table, field, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("embedded Arrow schema nested deeper than %d", maxSchemaDepth)
	}
	return tablesOf(t, field, func(f *flatbuffers.Table) error {
		if err := checkKeyValues(f, 6); err != nil {
			return err
		}
		const unionType = 14
		if f.GetUint8Slot(slot(2), 0) == unionType {
			if typ, ok := subTable(f, 3); ok {
				if err := checkVector(typ, 1, 4); err != nil {
					return err
				}
			}
		}
		return checkFields(f, 5, depth+1)
	})
}
