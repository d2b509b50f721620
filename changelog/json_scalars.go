package changelog

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// appendJSONString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does, so the output is always valid JSON.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	raw := unsafe.Slice(unsafe.StringData(s), len(s))
	for i := 0; i < len(s); {
		// Most text is printable ASCII: skip it eight bytes at a time.
		if i+8 <= len(s) && plainASCII8(binary.LittleEndian.Uint64(raw[i:])) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainASCII8 reports whether none of the eight bytes of w needs escaping
// or UTF-8 decoding: each is in 0x20..0x7f and neither '"' nor '\\'. The
// tests are the classic "has a byte below n" and "has a zero byte" word
// tricks; they can flag a byte that is fine (the caller then looks at the
// bytes one by one) but never miss one that is not.
func plainASCII8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - 0x20*ones) & ^w & highs
	q := w ^ ('"' * ones)
	quote := (q - ones) & ^q & highs
	b := w ^ ('\\' * ones)
	backslash := (b - ones) & ^b & highs
	return (control | quote | backslash | w&highs) == 0
}

const (
	msPerDay    = 86_400_000
	nanosPerSec = 1_000_000_000
	nanosPerDay = 86_400 * nanosPerSec
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func unitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return nanosPerSec
	case arrow.Millisecond:
		return 1_000_000
	case arrow.Microsecond:
		return 1_000
	}
	return 1
}

// appendDate writes days since 1970-01-01 as yyyy-MM-dd, years beyond
// 0..9999 signed as java.time's ISO_LOCAL_DATE does.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	switch {
	case y < 0:
		dst = append(dst, '-')
		dst = appendPadded(dst, uint64(-y), 4)
	case y > 9999:
		dst = append(dst, '+')
		dst = appendPadded(dst, uint64(y), 4)
	default:
		dst = append2Digits(dst, int(y/100))
		dst = append2Digits(dst, int(y%100))
	}
	dst = append(dst, '-')
	dst = append2Digits(dst, m)
	dst = append(dst, '-')
	return append2Digits(dst, d)
}

// twoDigits holds "00" to "99": dates and times are mostly two-digit
// fields, and a table lookup beats dividing.
const twoDigits = "00010203040506070809" +
	"10111213141516171819" + "20212223242526272829" + "30313233343536373839" +
	"40414243444546474849" + "50515253545556575859" + "60616263646566676869" +
	"70717273747576777879" + "80818283848586878889" + "90919293949596979899"

// append2Digits writes 0 <= v <= 99 as two digits.
func append2Digits(dst []byte, v int) []byte {
	return append(dst, twoDigits[2*v], twoDigits[2*v+1])
}

// civilFromDays converts days since the epoch to a proleptic Gregorian date
// (H. Hinnant's algorithm), without time.Time so that no zone is involved.
func civilFromDays(z int64) (year int64, month, day int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, int(m), int(d)
}

// appendTimeOfDay writes HH:mm:ss with the fraction of a second trimmed of
// trailing zeros (no fraction when zero), as Flink's SQL time format prints
// and parses it.
func appendTimeOfDay(dst []byte, nanos int64) []byte {
	nanos = nanos - floorDiv(nanos, nanosPerDay)*nanosPerDay
	secs := int(nanos / nanosPerSec)
	dst = append2Digits(dst, secs/3600)
	dst = append(dst, ':')
	dst = append2Digits(dst, secs/60%60)
	dst = append(dst, ':')
	dst = append2Digits(dst, secs%60)
	return appendFraction(dst, nanos%nanosPerSec)
}

func appendFraction(dst []byte, frac int64) []byte {
	if frac == 0 {
		return dst
	}
	digits := 9
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	dst = append(dst, '.')
	return appendPadded(dst, uint64(frac), digits)
}

// appendTimestamp writes "yyyy-MM-dd HH:mm:ss[.fraction]" (Flink's SQL
// timestamp format) for a count of units since the epoch.
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	perSec := nanosPerSec / unitNanos(unit)
	secs := floorDiv(v, perSec)
	sub := (v - secs*perSec) * unitNanos(unit)
	days := floorDiv(secs, 86_400)
	dst = appendDate(dst, days)
	dst = append(dst, ' ')
	return appendTimeOfDay(dst, (secs-days*86_400)*nanosPerSec+sub)
}

func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	for len(buf)-i < width {
		i--
		buf[i] = '0'
	}
	return append(dst, buf[i:]...)
}

// appendDecimal128 writes an unscaled 128-bit two's complement value with
// the given scale as a plain JSON number: every digit kept, no exponent.
func appendDecimal128(dst []byte, hi int64, lo uint64, scale int32) []byte {
	neg := hi < 0
	uhi := uint64(hi)
	if neg {
		// Two's complement negation of the 128-bit value.
		lo = ^lo + 1
		uhi = ^uhi
		if lo == 0 {
			uhi++
		}
	}
	var buf [48]byte
	i := len(buf)
	const chunk = 1e19 // largest power of ten below 2^64
	for uhi != 0 || lo >= 10 {
		var rem uint64
		if uhi != 0 {
			var q uint64
			q, rem = bits.Div64(0, uhi, chunk)
			uhi = q
			lo, rem = bits.Div64(rem, lo, chunk)
			// rem holds 19 digits, zero padded unless it is the leading chunk.
			for k := 0; k < 19; k++ {
				i--
				buf[i] = byte('0' + rem%10)
				rem /= 10
			}
			continue
		}
		i--
		buf[i] = byte('0' + lo%10)
		lo /= 10
	}
	i--
	buf[i] = byte('0' + lo)
	digits := buf[i:]
	// Strip leading zeros the chunked division may have produced.
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if neg && !(len(digits) == 1 && digits[0] == '0') {
		dst = append(dst, '-')
	}
	switch {
	case scale <= 0:
		dst = append(dst, digits...)
		for ; scale < 0; scale++ {
			dst = append(dst, '0')
		}
	case int(scale) >= len(digits):
		dst = append(dst, '0', '.')
		for k := len(digits); k < int(scale); k++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		split := len(digits) - int(scale)
		dst = append(dst, digits[:split]...)
		dst = append(dst, '.')
		dst = append(dst, digits[split:]...)
	}
	return dst
}
