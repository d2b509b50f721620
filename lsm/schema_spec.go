package lsm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/apache/iceberg-go"
)

// decimalSpec matches decimal(P, S), spaces allowed inside.
var decimalSpec = regexp.MustCompile(`(?i)^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)`)

// splitColumns splits a schema spec at the commas between columns, not at
// those inside a type's parentheses (decimal(12, 2)).
func splitColumns(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	out = append(out, s[start:])
	cols := out[:0]
	for _, c := range out {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	return cols
}

// ParseSchema parses a schema spec, "id long, price decimal(12, 2) not null,
// ...": lakegw table create --schema and a table topic's lakegw.schema.
func ParseSchema(s string) (*iceberg.Schema, error) {
	types := map[string]iceberg.Type{
		"boolean": iceberg.PrimitiveTypes.Bool, "bool": iceberg.PrimitiveTypes.Bool,
		"int": iceberg.PrimitiveTypes.Int32, "integer": iceberg.PrimitiveTypes.Int32,
		"long": iceberg.PrimitiveTypes.Int64, "bigint": iceberg.PrimitiveTypes.Int64,
		"float": iceberg.PrimitiveTypes.Float32, "double": iceberg.PrimitiveTypes.Float64,
		"string": iceberg.PrimitiveTypes.String, "binary": iceberg.PrimitiveTypes.Binary,
		"date": iceberg.PrimitiveTypes.Date, "timestamp": iceberg.PrimitiveTypes.Timestamp,
		"timestamptz": iceberg.PrimitiveTypes.TimestampTz,
	}
	var fields []iceberg.NestedField
	for i, col := range splitColumns(s) {
		var name, typeAndRest string
		if sp := strings.IndexFunc(col, unicode.IsSpace); sp > 0 {
			name, typeAndRest = col[:sp], strings.TrimSpace(col[sp:])
		}
		if name == "" || typeAndRest == "" {
			return nil, fmt.Errorf("schema column %q: want NAME TYPE", col)
		}
		var typ iceberg.Type
		var rest string
		if m := decimalSpec.FindStringSubmatch(typeAndRest); m != nil {
			p, errP := strconv.Atoi(m[1])
			sc, errS := strconv.Atoi(m[2])
			if errP != nil || errS != nil || p < 1 || p > 38 || sc > p {
				return nil, fmt.Errorf("schema column %q: decimal precision must be 1-38 and scale at most the precision", col)
			}
			typ, rest = iceberg.DecimalTypeOf(p, sc), typeAndRest[len(m[0]):]
		} else {
			words := strings.Fields(typeAndRest)
			t, ok := types[strings.ToLower(words[0])]
			if !ok {
				return nil, fmt.Errorf("schema column %q: unknown type %s", col, words[0])
			}
			typ, rest = t, strings.Join(words[1:], " ")
		}
		rest = strings.ToLower(strings.Join(strings.Fields(rest), " "))
		if rest != "" && rest != "not null" {
			return nil, fmt.Errorf("schema column %q: unexpected %q", col, rest)
		}
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: name, Type: typ, Required: rest == "not null"})
	}
	if len(fields) == 0 {
		return nil, errors.New("schema: no columns")
	}
	return iceberg.NewSchema(0, fields...), nil
}
