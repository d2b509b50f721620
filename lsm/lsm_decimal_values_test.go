package lsm

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
)

// decText renders an unscaled value at a scale with math/big, the
// tests' oracle for decimal text (independent of Decimal.String).
func decText(u *big.Int, scale int32) string {
	return new(big.Rat).SetFrac(u, pow10(scale)).FloatString(int(scale))
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func mustDecType(t testing.TB, p, s int) decType {
	t.Helper()
	d, err := decTypeOf(iceberg.DecimalTypeOf(p, s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Writer input becomes a decimal exactly or is rejected with a clear
// error: never rounded, never wrapped.
func TestLsmDecimalCoerce(t *testing.T) {
	d12 := mustDecType(t, 12, 2)
	d38 := mustDecType(t, 38, 10)
	d5 := mustDecType(t, 5, 0)
	cases := []struct {
		typ  decType
		in   any
		want string // the value, or "error: <substring>"
	}{
		{d12, "12.34", "12.34"},
		{d12, "12.3", "12.30"},
		{d12, "-0.5", "-0.50"},
		{d12, "+7", "7.00"},
		{d12, ".5", "0.50"},
		{d12, "5.", "5.00"},
		{d12, "-0", "0.00"},
		{d12, "0.000", "0.00"},
		{d12, "12.3400", "12.34"},
		{d12, json.Number("1e2"), "100.00"},
		{d12, json.Number("-1.5E-1"), "-0.15"},
		{d12, json.Number("12345e-4"), "error: more fraction digits"},
		{d12, json.Number("123400e-4"), "12.34"},
		{d12, "9999999999.99", "9999999999.99"},
		{d12, "-9999999999.99", "-9999999999.99"},
		{d12, "10000000000", "error: out of range for decimal(12, 2)"},
		{d12, "12.345", "error: more fraction digits than decimal(12, 2) keeps (2)"},
		{d12, "1e10", "error: out of range"},
		{d12, "1e100000", "error: not a decimal number"},
		{d12, "", "error: not a decimal number"},
		{d12, "-", "error: not a decimal number"},
		{d12, "1.2.3", "error: not a decimal number"},
		{d12, " 1", "error: not a decimal number"},
		{d12, "0x10", "error: not a decimal number"},
		{d12, "NaN", "error: not a decimal number"},
		{d12, 7, "7.00"},
		{d12, int64(-42), "-42.00"},
		{d12, uint8(3), "3.00"},
		{d12, int8(-128), "-128.00"},
		{d38, uint64(math.MaxUint64), "18446744073709551615.0000000000"},
		{d38, int64(math.MinInt64), "-9223372036854775808.0000000000"},
		{d12, int64(10_000_000_000), "error: out of range"},
		{d12, 12.34, "12.34"},
		{d12, -0.07, "-0.07"},
		{d12, 1e9, "1000000000.00"},
		{d12, runtimeSum(0.1, 0.2), "error: significant digits"}, // 0.30000000000000004
		{d12, 12.345, "error: more fraction digits"},
		{d12, math.NaN(), "error: is not a decimal(12, 2) value"},
		{d12, math.Inf(1), "error: is not a decimal(12, 2) value"},
		{d12, float32(1.5), "error: cannot use float32"},
		{d12, true, "error: cannot use bool"},
		{d12, Decimal{Unscaled: decimal128.FromI64(-1234), Scale: 2}, "-12.34"},
		{d12, Decimal{Unscaled: decimal128.FromI64(-12340), Scale: 3}, "-12.34"},
		{d12, Decimal{Unscaled: decimal128.FromI64(-12345), Scale: 3}, "error: more fraction digits"},
		{d12, iceberg.Decimal{Val: decimal128.FromI64(5), Scale: 1}, "0.50"},
		{d12, Decimal{Unscaled: decimal128.FromI64(-5), Scale: -2}, "-500.00"},
		{d38, "9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999"},
		{d38, "-9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999"},
		{d38, "10000000000000000000000000000", "error: at most 28 digits before the point"},
		{d38, "0.00000000001", "error: more fraction digits"},
		{d38, "0.00000000010", "0.0000000001"},
		{d38, json.Number("123456789012345678901234567.5"), "123456789012345678901234567.5000000000"},
		{d5, "99999", "99999"},
		{d5, "-99999", "-99999"},
		{d5, "100000", "error: out of range"},
		{d5, "1.0", "1"},
		{d5, "1.5", "error: more fraction digits"},
	}
	for _, c := range cases {
		got, err := coerceDecimal(c.in, c.typ)
		if want, isErr := strings.CutPrefix(c.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %T %v: got %v, %v; want an error with %q", c.typ, c.in, c.in, got, err, want)
			}
			continue
		}
		if err != nil || got.String() != c.want || got.Scale != c.typ.scale || decText(got.Unscaled.BigInt(), got.Scale) != c.want {
			t.Errorf("%s %T %v: got %v (%v), want %s", c.typ, c.in, c.in, got, err, c.want)
		}
	}
	// Every float64 of at most 15 significant digits is the decimal it
	// prints as.
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		u := r.Int64N(1_000_000_000_000_000) - 500_000_000_000_000 // 15 digits
		want := decText(big.NewInt(u), 5)
		f, _ := new(big.Rat).SetFrac(big.NewInt(u), pow10(5)).Float64()
		got, err := coerceDecimal(f, mustDecType(t, 20, 5))
		if err != nil || got.String() != want {
			t.Fatalf("float64 %v: got %v %v, want %s", f, got, err, want)
		}
	}
}

// Decimal text, JSON, key encoding, manifest bounds and fixed-width bytes
// agree with independent implementations: math/big, iceberg-go's bound
// serialization, and pqarrow's FIXED_LEN_BYTE_ARRAY sizes.
func TestLsmDecimalEncodings(t *testing.T) {
	for p := 1; p <= maxDecimalPrecision; p++ {
		if got, want := decimalSize(p), int(pqarrow.DecimalSize(int32(p))); got != want {
			t.Errorf("precision %d: %d bytes, pqarrow uses %d", p, got, want)
		}
	}
	// iceberg-go refuses to make other bad decimal types.
	if _, err := decTypeOf(iceberg.DecimalType{}); err == nil {
		t.Error("decimal(0, 0) accepted")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var vals []*big.Int
	for _, p := range []int32{1, 9, 18, 19, 38} {
		limit := new(big.Int).Sub(pow10(p), big.NewInt(1))
		vals = append(vals, limit, new(big.Int).Neg(limit))
		for range 200 {
			vals = append(vals, randUnscaled(r, p))
		}
	}
	vals = append(vals, big.NewInt(0), big.NewInt(-1), big.NewInt(1), big.NewInt(-128), big.NewInt(127), big.NewInt(-129), big.NewInt(128))
	for _, v := range vals {
		n := decimal128.FromBigInt(v)
		d := Decimal{Unscaled: n, Scale: 3}
		if got, want := d.String(), decText(v, 3); got != want {
			t.Errorf("%v: String %s, want %s", v, got, want)
		}
		if js, _ := json.Marshal(map[string]any{"v": d}); string(js) != `{"v":`+decText(v, 3)+`}` {
			t.Errorf("%v: JSON %s", v, js)
		}
		// Manifest bounds: iceberg-go serializes, lakegw decodes.
		lit, err := iceberg.DecimalLiteral(iceberg.Decimal{Val: n, Scale: 3}).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := decodeBound(lit, kDecimal, decType{prec: 38, scale: 3}); !ok || got != d {
			t.Errorf("%v: bound %x decodes to %v %v", v, lit, got, ok)
		}
		// Fixed-width bytes of any width that holds the value.
		for size := 1; size <= 16; size++ {
			if v.BitLen() > 8*size-1 {
				continue
			}
			b := decimalFixed(n, size)
			if back, ok := decimalFromBE(b); !ok || back != n {
				t.Errorf("%v: %d bytes %x read back as %v", v, size, b, back.BigInt())
			}
		}
	}
	// Key bytes and the signed comparison of fixed-width bytes order as
	// the integers do.
	slices.SortFunc(vals, func(a, b *big.Int) int { return a.Cmp(b) })
	for i := 1; i < len(vals); i++ {
		a, b := decimal128.FromBigInt(vals[i-1]), decimal128.FromBigInt(vals[i])
		want := vals[i-1].Cmp(vals[i])
		ka, kb := string(appendKeyPart(nil, Decimal{Unscaled: a, Scale: 2})), string(appendKeyPart(nil, Decimal{Unscaled: b, Scale: 2}))
		if got := strings.Compare(ka, kb); got != want {
			t.Errorf("key order %v vs %v: %d, want %d", vals[i-1], vals[i], got, want)
		}
		if got := compareValues(Decimal{Unscaled: a, Scale: 2}, Decimal{Unscaled: b, Scale: 2}); got != want {
			t.Errorf("compareValues %v vs %v: %d, want %d", vals[i-1], vals[i], got, want)
		}
		if got := compareSigned(decimalFixed(a, 16), decimalFixed(b, 16)); got != want {
			t.Errorf("compareSigned %v vs %v: %d, want %d", vals[i-1], vals[i], got, want)
		}
	}
	// Sums are exact and bounded by the precision.
	d := mustDecType(t, 38, 10)
	max38, _ := coerceDecimal("9999999999999999999999999999.9999999999", d)
	tiny, _ := coerceDecimal("0.0000000001", d)
	if _, err := sumDecimals(max38, tiny, d); err == nil || !strings.Contains(err.Error(), "overflows decimal(38, 10)") {
		t.Errorf("max + tiny: %v", err)
	}
	if s, err := sumDecimals(max38, max38, d); err == nil {
		t.Errorf("max + max = %v", s)
	}
	neg, _ := coerceDecimal("-0.0000000002", d)
	if s, err := sumDecimals(max38, neg, d); err != nil || s.String() != "9999999999999999999999999999.9999999997" {
		t.Errorf("max - 2 units: %v %v", s, err)
	}
}

// runtimeSum adds at run time (constant arithmetic would be exact).
func runtimeSum(a, b float64) float64 { return a + b }

// randUnscaled is a random unscaled value of at most p digits, of any
// length and sign.
func randUnscaled(r *rand.Rand, p int32) *big.Int {
	n := 1 + r.IntN(int(p))
	digits := make([]byte, n)
	for i := range digits {
		digits[i] = byte('0' + r.IntN(10))
	}
	v, _ := new(big.Int).SetString(string(digits), 10)
	if r.IntN(2) == 0 {
		v.Neg(v)
	}
	return v
}
