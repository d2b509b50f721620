package lsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// Decimal columns. An Iceberg decimal(P, S) value is an integer of at most
// P digits scaled by 10^-S. lakegw keeps that unscaled integer (128 bits
// hold Iceberg's maximum of 38 digits), so a value goes from the writer's
// input to the Parquet files, Get and the Kafka records without ever being
// a binary float: what is written is what is read, digit for digit.

// Decimal is the value of a decimal(P, S) column: Unscaled × 10^-Scale,
// with Scale always the column's scale (so == compares values). It prints
// exactly, with Scale fraction digits ("-12.30"), and marshals to JSON as
// that number.
type Decimal struct {
	Unscaled decimal128.Num
	Scale    int32
}

// String renders the value with exactly Scale fraction digits.
func (d Decimal) String() string { return string(d.appendText(nil)) }

// MarshalJSON renders the value as a JSON number with every digit, as
// the changelog's JSON formats do.
func (d Decimal) MarshalJSON() ([]byte, error) { return d.appendText(nil), nil }

func (d Decimal) appendText(dst []byte) []byte {
	digits := d.Unscaled.BigInt().String()
	if digits[0] == '-' {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	scale := int(d.Scale)
	if scale <= 0 {
		// Columns have scales >= 0; a negative scale (a Decimal made by a
		// caller) multiplies by 10^-scale.
		dst = append(dst, digits...)
		if digits != "0" {
			dst = append(dst, strings.Repeat("0", -scale)...)
		}
		return dst
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

// maxDecimalPrecision is Iceberg's (and a 128-bit integer's) limit.
const maxDecimalPrecision = 38

// decType is the precision and scale of a decimal column, and size the
// fewest bytes of two's complement that hold any P-digit unscaled value
// (the FIXED_LEN_BYTE_ARRAY length Iceberg specifies).
type decType struct {
	prec, scale int32
	size        int
}

func (t decType) String() string { return fmt.Sprintf("decimal(%d, %d)", t.prec, t.scale) }

// decTypeOf checks an Iceberg decimal type against what lakegw can store.
// Parquet's DECIMAL needs 0 <= scale <= precision.
func decTypeOf(t iceberg.DecimalType) (decType, error) {
	p, s := t.Precision(), t.Scale()
	if p < 1 || p > maxDecimalPrecision || s < 0 || s > p {
		return decType{}, fmt.Errorf("column type %s is not supported by lakegw LSM tables: decimals need 1 <= precision <= %d and 0 <= scale <= precision", t, maxDecimalPrecision)
	}
	return decType{prec: int32(p), scale: int32(s), size: decimalSize(p)}, nil
}

// decimalSize is the fewest bytes whose two's complement holds 10^p - 1.
func decimalSize(p int) int {
	largest := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil), big.NewInt(1))
	n := 1
	for largest.BitLen() > 8*n-1 {
		n++
	}
	return n
}

// fits reports whether d is a value of type t.
func (t decType) fits(d Decimal) bool {
	return d.Scale == t.scale && t.prec >= 1 && t.prec <= maxDecimalPrecision && d.Unscaled.FitsInPrecision(t.prec)
}

// float64Digits is how many significant decimal digits a float64 is known
// to carry (DBL_DIG): every decimal of up to 15 digits converts to a
// float64 and back unchanged, longer ones may not.
const float64Digits = 15

// coerceDecimal converts an input value to a decimal of type t, exactly or
// not at all: a value with more fraction digits than the scale (other
// than zeros) or more digits than the precision is an error, never
// rounded. Accepted: decimal text (plain or with an exponent) as a string
// or json.Number, Go integers, float64 values of at most 15 significant
// digits (a longer float64 may not be the decimal the writer meant), and
// Decimal or iceberg.Decimal values (rescaled exactly).
func coerceDecimal(v any, t decType) (Decimal, error) {
	switch x := v.(type) {
	case Decimal:
		if t.fits(x) {
			return x, nil
		}
		return parseDecimal(x.String(), t)
	case iceberg.Decimal:
		return coerceDecimal(Decimal{Unscaled: x.Val, Scale: int32(x.Scale)}, t)
	case string:
		return parseDecimal(x, t)
	case json.Number:
		return parseDecimal(string(x), t)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		// %d prints every integer kind exactly.
		return parseDecimal(fmt.Sprintf("%d", x), t)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Decimal{}, fmt.Errorf("%v is not a %s value", x, t)
		}
		// The shortest text that reads back as x: the decimal the
		// writer wrote, when it had at most 15 digits.
		s := strconv.FormatFloat(x, 'e', -1, 64)
		mant, _, _ := strings.Cut(strings.TrimPrefix(s, "-"), "e")
		if n := len(strings.Replace(mant, ".", "", 1)); n > float64Digits {
			return Decimal{}, fmt.Errorf("float64 %s has %d significant digits, more than a float64 holds exactly (%d): give %s values as strings or json.Number", strconv.FormatFloat(x, 'g', -1, 64), n, float64Digits, t)
		}
		return parseDecimal(s, t)
	}
	return Decimal{}, fmt.Errorf("cannot use %T %v as a %s value", v, v, t)
}

// parseDecimal reads decimal text ("-12.3", "0.05", "1.5e3") as a value of
// type t, exactly.
func parseDecimal(s string, t decType) (Decimal, error) {
	bad := func() (Decimal, error) {
		return Decimal{}, fmt.Errorf("%q is not a decimal number", s)
	}
	rest, neg := s, false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		rest, neg = rest[1:], rest[0] == '-'
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(rest), "e")
	intPart, fracPart, _ := strings.Cut(mant, ".")
	if intPart+fracPart == "" || !allDigits(intPart) || !allDigits(fracPart) {
		return bad()
	}
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expText)
		// Far beyond any precision; bounded so that no input makes a
		// huge string of zeros.
		if err != nil || e < -10000 || e > 10000 {
			return bad()
		}
		exp = e
	}
	// The value is digits × 10^shift in units of 10^-scale.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	shift := exp - len(fracPart) + int(t.scale)
	if digits == "" {
		return Decimal{Scale: t.scale}, nil
	}
	if shift < 0 {
		cut := -shift
		if cut >= len(digits) || strings.TrimRight(digits[len(digits)-cut:], "0") != "" {
			return Decimal{}, fmt.Errorf("%s has more fraction digits than %s keeps (%d): round it first", s, t, t.scale)
		}
		digits = digits[:len(digits)-cut]
	} else {
		if len(digits)+shift > int(t.prec) {
			return Decimal{}, decimalRangeError(s, t)
		}
		digits += strings.Repeat("0", shift)
	}
	if len(digits) > int(t.prec) {
		return Decimal{}, decimalRangeError(s, t)
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return bad()
	}
	if neg {
		n.Neg(n)
	}
	return Decimal{Unscaled: decimal128.FromBigInt(n), Scale: t.scale}, nil
}

func decimalRangeError(s string, t decType) error {
	return fmt.Errorf("%s is out of range for %s: at most %d digits before the point", s, t, t.prec-t.scale)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sumDecimals adds two values of type t; a sum beyond the precision is an
// error (never wrapped or rounded).
func sumDecimals(a, b Decimal, t decType) (Decimal, error) {
	sum := new(big.Int).Add(a.Unscaled.BigInt(), b.Unscaled.BigInt())
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.prec)), nil)
	if new(big.Int).Abs(sum).Cmp(limit) >= 0 {
		return Decimal{}, fmt.Errorf("sum %s + %s overflows %s", a, b, t)
	}
	return Decimal{Unscaled: decimal128.FromBigInt(sum), Scale: t.scale}, nil
}

// decimalBE16 is the 16-byte big-endian two's complement of n.
func decimalBE16(n decimal128.Num) [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(n.HighBits()))
	binary.BigEndian.PutUint64(b[8:], n.LowBits())
	return b
}

// decimalFixed is the size-byte big-endian two's complement of n, which
// must fit (a value of a type whose size is size always does).
func decimalFixed(n decimal128.Num, size int) []byte {
	b := decimalBE16(n)
	return append([]byte(nil), b[16-size:]...)
}

// decimalFromBE reads a big-endian two's complement integer of 1 to 16
// bytes (Iceberg's decimal bound and Parquet's FIXED_LEN_BYTE_ARRAY
// encodings), sign-extending it.
func decimalFromBE(b []byte) (decimal128.Num, bool) {
	if len(b) == 0 || len(b) > 16 {
		return decimal128.Num{}, false
	}
	var full [16]byte
	if b[0]&0x80 != 0 {
		for i := range full {
			full[i] = 0xff
		}
	}
	copy(full[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(full[:8])), binary.BigEndian.Uint64(full[8:])), true
}
