package changelog

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// initialDefaultJSON is the JSON value of field f in rows written before
// it was added: its initial default (format v3), else null. The default is
// Iceberg's JSON single-value form as the table metadata holds it; it is
// written as the column's own values are (dates, timestamps, decimals and
// binaries as newAppender writes them), and a default lakegw cannot read
// is an error, never a silently different value.
func initialDefaultJSON(f iceberg.NestedField) ([]byte, error) {
	v := f.InitialDefault
	if v == nil {
		return []byte("null"), nil
	}
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("initial default %v (%T) of a %s column is not supported", v, v, f.Type)
	}
	var dst []byte
	switch f.Type.(type) {
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return fmt.Appendf(dst, "%t", b), nil
	case iceberg.Int32Type, iceberg.Int64Type:
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return bad()
		}
		return fmt.Appendf(dst, "%d", int64(n)), nil
	case iceberg.Float32Type:
		n, ok := v.(float64)
		if !ok {
			return bad()
		}
		return appendFloat(dst, float64(float32(n)), 32), nil
	case iceberg.Float64Type:
		n, ok := v.(float64)
		if !ok {
			return bad()
		}
		return appendFloat(dst, n, 64), nil
	}
	s, ok := v.(string)
	if !ok {
		return bad()
	}
	switch t := f.Type.(type) {
	case iceberg.StringType, iceberg.UUIDType:
		return appendJSONString(dst, s), nil
	case iceberg.DecimalType:
		// The JSON form is the decimal's text with its scale's digits,
		// the number newAppender writes.
		if !isDecimalText(s, t.Scale()) {
			return bad()
		}
		return append(dst, s...), nil
	case iceberg.DateType:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return bad()
		}
		dst = append(dst, '"')
		dst = appendDate(dst, floorDiv(d.Unix(), 86_400))
		return append(dst, '"'), nil
	case iceberg.TimeType:
		d, err := time.Parse("15:04:05.999999", s)
		if err != nil {
			return bad()
		}
		dst = append(dst, '"')
		secs := int64(d.Hour()*3600 + d.Minute()*60 + d.Second())
		dst = appendTimeOfDay(dst, secs*1e9+int64(d.Nanosecond()))
		return append(dst, '"'), nil
	case iceberg.TimestampType, iceberg.TimestampNsType:
		ts, err := time.Parse("2006-01-02T15:04:05.999999999", s)
		if err != nil || !nanosFit(ts) {
			return bad()
		}
		dst = append(dst, '"')
		dst = appendTimestamp(dst, ts.UnixNano(), arrow.Nanosecond)
		return append(dst, '"'), nil
	case iceberg.TimestampTzType, iceberg.TimestampTzNsType:
		ts, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
		if err != nil || !nanosFit(ts) {
			return bad()
		}
		dst = append(dst, '"')
		dst = appendTimestamp(dst, ts.UnixNano(), arrow.Nanosecond)
		return append(dst, 'Z', '"'), nil
	case iceberg.BinaryType, iceberg.FixedType:
		b, err := hex.DecodeString(s)
		if err != nil {
			return bad()
		}
		return appendBase64(dst, b), nil
	}
	return bad()
}

// nanosFit says whether ts is within int64 nanoseconds of the epoch.
func nanosFit(ts time.Time) bool { return ts.Year() > 1677 && ts.Year() < 2262 }

// isDecimalText says whether s is a plain decimal number with scale
// digits after its point.
func isDecimalText(s string, scale int) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) {
		return false
	}
	if scale == 0 {
		return !dot
	}
	return dot && len(frac) == scale
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
