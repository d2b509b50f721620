package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// Records in the table's current schema.
//
// A snapshot's rows are read in the schema it was written with (derive/
// diffs and pairs them in it, so that its records, and so its offsets,
// never depend on later schema changes). Every Iceberg reader, though,
// shows old rows in the schema it reads with, matching columns by field
// id: a renamed column keeps its values under the new name, an added one
// is null (or its initial default), a dropped one is gone, a widened one
// has the new type. The encoders below write a row of the written schema
// that way in a target schema, so that a record's before-image equals the
// after-image of the event that created its row, as written now.

// projectedRowAppender returns the appender of a row of b, whose columns
// are the top-level fields of from in order, as the JSON object of the
// fields of to.
func projectedRowAppender(b arrow.RecordBatch, from, to *iceberg.Schema) (appendFn, error) {
	if int(b.NumCols()) != len(from.Fields()) {
		return nil, fmt.Errorf("batch of %d columns for schema %d of %d fields", b.NumCols(), from.ID, len(from.Fields()))
	}
	cols := make([]arrow.Array, b.NumCols())
	for i := range cols {
		cols[i] = b.Column(i)
	}
	return projectFields(cols, from.Fields(), to.Fields(), "")
}

// projectFields returns the appender of the object of fields to, read from
// cols, the columns of fields from (a struct's children or a row's
// top-level columns). Nulls of the enclosing struct are its caller's.
func projectFields(cols []arrow.Array, from, to []iceberg.NestedField, path string) (appendFn, error) {
	parts := make([]appendFn, len(to))
	names := make([][]byte, len(to))
	for i, f := range to {
		names[i] = appendObjectKey(nil, i == 0, f.Name)
		j := fieldIndexByID(from, f.ID)
		if j < 0 {
			v, err := initialDefaultJSON(f)
			if err != nil {
				return nil, fmt.Errorf("column %s%s: %w", path, f.Name, err)
			}
			parts[i] = func(dst []byte, _ int) []byte { return append(dst, v...) }
			continue
		}
		fn, err := projectValue(cols[j], from[j].Type, f.Type, path+f.Name+".")
		if err != nil {
			return nil, fmt.Errorf("column %s%s: %w", path, f.Name, err)
		}
		parts[i] = fn
	}
	return objectOf(names, parts), nil
}

func fieldIndexByID(fields []iceberg.NestedField, id int) int {
	for i, f := range fields {
		if f.ID == id {
			return i
		}
	}
	return -1
}

// projectValue returns the appender of arr, a column of type from, written
// as type to (nulls included).
func projectValue(arr arrow.Array, from, to iceberg.Type, path string) (appendFn, error) {
	var inner appendFn
	var err error
	switch t := to.(type) {
	case *iceberg.StructType:
		f, ok := from.(*iceberg.StructType)
		st, isStruct := arr.(*array.Struct)
		if !ok || !isStruct || st.NumField() != len(f.FieldList) {
			return nil, fmt.Errorf("struct written as %s", from)
		}
		kids := make([]arrow.Array, st.NumField())
		for i := range kids {
			kids[i] = st.Field(i)
		}
		inner, err = projectFields(kids, f.FieldList, t.FieldList, path)
	case *iceberg.ListType:
		f, ok := from.(*iceberg.ListType)
		if !ok {
			return nil, fmt.Errorf("list written as %s", from)
		}
		inner, err = projectList(arr, f, t, path)
	case *iceberg.MapType:
		f, ok := from.(*iceberg.MapType)
		m, isMap := arr.(*array.Map)
		if !ok || !isMap {
			return nil, fmt.Errorf("map written as %s", from)
		}
		inner, err = projectMap(m, f, t, path)
	default:
		return projectPrimitive(arr, from, to)
	}
	if err != nil {
		return nil, err
	}
	return withNulls(arr, inner), nil
}

// projectPrimitive writes a primitive column as its own type or one it
// was promoted to (Iceberg's type promotions: int to long, float to
// double, a decimal's precision widened; in v3 a date to a timestamp, and
// an unknown, always null, column to any type).
func projectPrimitive(arr arrow.Array, from, to iceberg.Type) (appendFn, error) {
	if from.Equals(to) {
		return newAppender(arr)
	}
	if _, ok := from.(iceberg.UnknownType); ok {
		return newAppender(arr)
	}
	switch to.(type) {
	case iceberg.TimestampType, iceberg.TimestampNsType:
		if d, ok := arr.(*array.Date32); ok {
			if _, ok := from.(iceberg.DateType); ok {
				// Midnight of the date, as the promoted column reads it.
				return withNulls(arr, func(dst []byte, row int) []byte {
					dst = append(dst, '"')
					dst = appendTimestamp(dst, int64(d.Value(row))*86_400, arrow.Second)
					return append(dst, '"')
				}), nil
			}
		}
	case iceberg.Int64Type:
		if _, ok := from.(iceberg.Int32Type); ok {
			// An int's JSON is the same number as a long.
			return newAppender(arr)
		}
	case iceberg.Float64Type:
		if f32, ok := arr.(*array.Float32); ok {
			if _, ok := from.(iceberg.Float32Type); ok {
				// The float's value as a double, as a reader of the
				// promoted column gets it (1.1f is 1.100000023841858).
				return withNulls(arr, func(dst []byte, row int) []byte {
					return appendFloat(dst, float64(f32.Value(row)), 64)
				}), nil
			}
		}
	case iceberg.DecimalType:
		if f, ok := from.(iceberg.DecimalType); ok && f.Scale() == to.(iceberg.DecimalType).Scale() {
			// Same scale: the same number, whatever the precision.
			return newAppender(arr)
		}
	}
	return nil, fmt.Errorf("a %s column cannot be written as %s", from, to)
}

func projectList(arr arrow.Array, from, to *iceberg.ListType, path string) (appendFn, error) {
	project := func(values arrow.Array) (appendFn, error) {
		return projectValue(values, from.Element, to.Element, path+"element.")
	}
	switch l := arr.(type) {
	case *array.List:
		elem, err := project(l.ListValues())
		if err != nil {
			return nil, err
		}
		return listOf(elem, l.ValueOffsets), nil
	case *array.LargeList:
		elem, err := project(l.ListValues())
		if err != nil {
			return nil, err
		}
		return listOf(elem, l.ValueOffsets), nil
	case *array.FixedSizeList:
		elem, err := project(l.ListValues())
		if err != nil {
			return nil, err
		}
		return listOf(elem, l.ValueOffsets), nil
	}
	return nil, fmt.Errorf("list column stored as %s", arr.DataType())
}

// projectMap writes a map as newMapAppender does, its keys and values
// projected.
func projectMap(m *array.Map, from, to *iceberg.MapType, path string) (appendFn, error) {
	keyFn, err := projectValue(m.Keys(), from.KeyType, to.KeyType, path+"key.")
	if err != nil {
		return nil, err
	}
	itemFn, err := projectValue(m.Items(), from.ValueType, to.ValueType, path+"value.")
	if err != nil {
		return nil, err
	}
	return mapAppender(m, keyFn, itemFn), nil
}

// withNulls writes null where arr is null, else inner's value.
func withNulls(arr arrow.Array, inner appendFn) appendFn {
	if arr.NullN() == 0 {
		return inner
	}
	return func(dst []byte, row int) []byte {
		if arr.IsNull(row) {
			return append(dst, "null"...)
		}
		return inner(dst, row)
	}
}
