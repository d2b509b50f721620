package changelog

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// wantJSONString is what appendJSONString must produce, written the plain
// way (one byte at a time), as the oracle of its word-at-a-time fast path.
func wantJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

func checkJSONString(t *testing.T, s string) {
	t.Helper()
	got := string(appendJSONString(nil, s))
	if want := wantJSONString(s); got != want {
		t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
	}
	var back string
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("appendJSONString(%q) = %s: not JSON: %v", s, got, err)
	}
	if utf8.ValidString(s) && back != s {
		t.Fatalf("appendJSONString(%q) reads back as %q", s, back)
	}
}

func TestAppendJSONStringEscapesEveryByteItMust(t *testing.T) {
	// Every byte value at every position of a word, among plain text.
	for c := range 256 {
		for pos := range 17 {
			s := []byte(strings.Repeat("abcdefgh", 3))[:pos+8]
			s[pos] = byte(c)
			checkJSONString(t, string(s))
		}
	}
	for _, s := range []string{"", "a", "plain ascii text, long enough", `quote " and \ back`, "tab\tnew\nline\r",
		"ünïcödé ‘quotes’ 日本語 🎉", "\x00\x1f\x7f", "bad \xff utf8 \xc3", "\u2028\u2029"} {
		checkJSONString(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\n\x01\x7f\xc3\xa9\xe2\x80\xa8\xff")
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkJSONString(t, string(b))
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain text here", `"\`, "\xff\xfe", "ünï\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkJSONString(t, s) })
}

// Dates and timestamps against the time package, for every year it prints
// with four digits.
func TestAppendDateAndTimestampMatchTheTimePackage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	minSec := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxSec := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for range 100000 {
		sec := minSec + rng.Int64N(maxSec-minSec+1)
		micros := rng.Int64N(1_000_000)
		if rng.IntN(4) == 0 {
			micros = 0
		}
		v := sec*1_000_000 + micros
		tm := time.UnixMicro(v).UTC()
		want := tm.Format("2006-01-02 15:04:05.999999")
		if got := string(appendTimestamp(nil, v, arrow.Microsecond)); got != want {
			t.Fatalf("timestamp %d µs: %s, want %s", v, got, want)
		}
		days := floorDiv(sec, 86_400)
		if got, want := string(appendDate(nil, days)), tm.Format("2006-01-02"); got != want {
			t.Fatalf("date %d: %s, want %s", days, got, want)
		}
	}
}
