package lake

import (
	"bytes"
	"encoding/json"
	"testing"
)

// objectMembers and arrayElements find the members and elements
// encoding/json finds, through strings holding quotes, backslashes and
// brackets, and refuse what is not structurally JSON.
func TestJSONSpansAgreeWithEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`,
		` { "a" : 1 , "b":[1, {"c":"}"}, "\\"], "d\"e": "x\\\"]", "f": null, "g": true, "h":-1.5e+3 } `,
		`{"s":"\\\\","t":"a\\\\\"b","u":[[],{},[{}]],"v":"[{"}`,
		`{"snapshots":[{"summary":{"k":"v]"}},{"a":"\u005d"}],"x":{"y":[1,2]}}`,
	}
	for _, d := range docs {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &want); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got := map[string]json.RawMessage{}
		doc := []byte(d)
		end, err := objectMembers(doc, 0, func(key []byte, v span) {
			var k string
			if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k); err != nil {
				t.Fatalf("%s: key %s: %v", d, key, err)
			}
			got[k] = json.RawMessage(doc[v.start:v.end])
		})
		if err != nil || len(bytes.TrimSpace(doc[end:])) != 0 || len(got) != len(want) {
			t.Fatalf("%s: end %d, %v, %d members, want %d", d, end, err, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%s: member %q = %s, want %s", d, k, got[k], v)
			}
			if len(v) == 0 || v[0] != '[' {
				continue
			}
			var elems []json.RawMessage
			if err := json.Unmarshal(v, &elems); err != nil {
				t.Fatal(err)
			}
			i := 0
			err := arrayElements(v, span{0, len(v)}, func(s span) error {
				if i >= len(elems) || !bytes.Equal(v[s.start:s.end], elems[i]) {
					t.Fatalf("%s: element %d = %s", v, i, v[s.start:s.end])
				}
				i++
				return nil
			})
			if err != nil || i != len(elems) {
				t.Fatalf("%s: %d elements, %v; want %d", v, i, err, len(elems))
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":"x}`, `{"a":[1,2}`, `{"a":1`} {
		if _, err := objectMembers([]byte(bad), 0, func([]byte, span) {}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for _, bad := range []string{`[1 2]`, `[1,]`, `[,1]`, `{}`} {
		b := []byte(bad)
		if err := arrayElements(b, span{0, len(b)}, func(span) error { return nil }); err == nil {
			t.Errorf("array %q: no error", bad)
		}
	}
}
