package protocol

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameBody encodes a request as a frame body (header v1/v2 + request), in
// the canonical form: a non-null client id, no header tags.
func frameBody(req kmsg.Request, corr int32, clientID string) []byte {
	b := kbin.AppendInt16(nil, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendString(b, clientID)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// encodeRequest is the canonical frame body of a decoded request.
func encodeRequest(r *request) []byte { return frameBody(r.msg, r.correlationID, r.clientID) }

// seedCorpusDir holds FuzzParseRequest's seed corpus: `go test` replays
// it, `go test -fuzz` starts from it.
var seedCorpusDir = filepath.Join("testdata", "fuzz", "FuzzParseRequest")

// seedRequests are kmsg encodes of every API and version lakegw answers,
// with every field set (one element in each array, "s" in each string, 1
// in each number), by file name in the seed corpus.
func seedRequests() map[string][]byte {
	out := map[string][]byte{}
	keys := make([]int16, 0, len(handlers))
	for key := range handlers {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		h := handlers[key]
		for v := h.min; v <= h.max; v++ {
			req := kmsg.RequestForKey(key)
			fillFields(reflect.ValueOf(req).Elem(), 0)
			req.SetVersion(v)
			out[fmt.Sprintf("%s-v%d", kmsg.NameForKey(key), v)] = frameBody(req, int32(key)<<16|int32(v), "lakegw-seed")
		}
	}
	return out
}

// fillFields sets every settable field of v to a small non-zero value.
func fillFields(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() && v.Type().Field(i).Name != "Version" {
				fillFields(f, depth)
			}
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{1, 2, 3})
			return
		}
		if depth < 4 {
			s := reflect.MakeSlice(v.Type(), 1, 1)
			fillFields(s.Index(0), depth+1)
			v.Set(s)
		}
	case reflect.Pointer:
		if depth < 4 {
			p := reflect.New(v.Type().Elem())
			fillFields(p.Elem(), depth+1)
			v.Set(p)
		}
	}
}

// FuzzParseRequest feeds arbitrary frame bodies to the request decoder,
// without the recover that guards it in the gateway: a panic fails the
// target. A request it accepts must have a canonical form (its encode)
// that decodes to the same request and encodes to the same bytes; for the kmsg encodes
// of the seed corpus, that form is the input itself
// (TestSeedRequestsRoundTrip).
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 1, 255, 255}) // ApiVersions v99
	f.Add([]byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 255, 255})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRequest(body)
		if err != nil || req.earlyResponse != nil {
			return
		}
		canon := encodeRequest(req)
		again, err := decodeRequest(canon)
		if err != nil {
			t.Fatalf("%s v%d: its encode does not decode: %v", kmsg.NameForKey(req.msg.Key()), req.msg.GetVersion(), err)
		}
		if got := encodeRequest(again); !bytes.Equal(got, canon) {
			t.Fatalf("%s v%d: decode and encode is not stable:\n%x\n%x", kmsg.NameForKey(req.msg.Key()), req.msg.GetVersion(), canon, got)
		}
		// The canonical form carries everything decoded from the input:
		// an encoder that drops or alters a field fails here, where the
		// stability check above cannot see it.
		if !reflect.DeepEqual(again.msg, req.msg) || again.clientID != req.clientID || again.correlationID != req.correlationID {
			t.Fatalf("%s v%d: the input and its canonical form decode differently:\n%+v\n%+v", kmsg.NameForKey(req.msg.Key()), req.msg.GetVersion(), req.msg, again.msg)
		}
	})
}

// Every seed decodes and encodes back to itself, byte for byte.
func TestSeedRequestsRoundTrip(t *testing.T) {
	for name, body := range seedRequests() {
		req, err := decodeRequest(body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := encodeRequest(req); !bytes.Equal(got, body) {
			t.Errorf("%s: re-encoded\n%x\nwant\n%x", name, got, body)
		}
	}
}

// The seed corpus holds exactly the seeds of seedRequests: an API or
// version added to the handlers must be added to it. Write it with
// LAKEGW_WRITE_FUZZ_SEEDS=1 go test -run TestSeedCorpusIsCurrent ./protocol
func TestSeedCorpusIsCurrent(t *testing.T) {
	want := seedRequests()
	if os.Getenv("LAKEGW_WRITE_FUZZ_SEEDS") != "" {
		if err := os.RemoveAll(seedCorpusDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(seedCorpusDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range want {
			if err := os.WriteFile(filepath.Join(seedCorpusDir, name), corpusFile(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(seedCorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		body, ok := want[e.Name()]
		if !ok {
			continue // a crasher the fuzzer found and someone kept
		}
		seen++
		got, err := os.ReadFile(filepath.Join(seedCorpusDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, corpusFile(body)) {
			t.Errorf("%s differs from its seed request: write the corpus again (see the test's comment)", e.Name())
		}
	}
	if seen != len(want) {
		t.Errorf("the seed corpus holds %d of the %d seed requests: write it again (see the test's comment)", seen, len(want))
	}
}

// corpusFile is a fuzz corpus file of one []byte argument.
func corpusFile(body []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", body)
}

func TestParseRequestRejectsBadInput(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":            {},
		"short header":     {0, 1, 0},
		"unknown key":      {0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 255, 255},
		"version too high": {0, 1, 0, 99, 0, 0, 0, 1, 255, 255},
		"truncated body":   frameBody(kmsg.NewPtrFetchRequest(), 1, "c")[:12],
	} {
		if _, err := parseRequest(body); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	req, err := parseRequest([]byte{0, 18, 0, 99, 0, 0, 0, 1, 255, 255})
	if err != nil || req.earlyResponse == nil {
		t.Fatalf("ApiVersions v99: want an early UNSUPPORTED_VERSION answer, got %v", err)
	}
	var resp kmsg.ApiVersionsResponse
	resp.Version = 0
	if err := resp.ReadFrom(req.earlyResponse[8:]); err != nil || resp.ErrorCode != 35 || len(resp.ApiKeys) == 0 {
		t.Fatalf("early answer: err %v code %d keys %d", err, resp.ErrorCode, len(resp.ApiKeys))
	}
}
