package lake

import (
	"bytes"
	"errors"
	"fmt"
)

// span is a JSON value's bytes within a document: doc[start:end].
type span struct{ start, end int }

// errJSONShape is a document whose structure (brackets, quotes, commas,
// colons) the span scanner cannot follow. Callers fall back to a full
// parse, which reports the fault precisely.
var errJSONShape = errors.New("malformed JSON")

// objectMembers calls member for each member of the JSON object that starts
// at doc[i] (after optional white space), with the key's raw text (no
// quotes, escapes left as written) and the value's span, and returns where
// the object ends. It follows structure only: the tokens within values are
// left for a JSON decoder to check.
func objectMembers(doc []byte, i int, member func(key []byte, value span)) (int, error) {
	i = skipSpace(doc, i)
	if i >= len(doc) || doc[i] != '{' {
		return 0, fmt.Errorf("%w: expected an object at byte %d", errJSONShape, i)
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return 0, fmt.Errorf("%w: expected a key at byte %d", errJSONShape, i)
		}
		keyEnd, err := skipString(doc, i)
		if err != nil {
			return 0, err
		}
		key := doc[i+1 : keyEnd-1]
		i = skipSpace(doc, keyEnd)
		if i >= len(doc) || doc[i] != ':' {
			return 0, fmt.Errorf("%w: expected ':' at byte %d", errJSONShape, i)
		}
		start := skipSpace(doc, i+1)
		end, err := skipValue(doc, start)
		if err != nil {
			return 0, err
		}
		member(key, span{start, end})
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
			continue
		}
		if i < len(doc) && doc[i] == '}' {
			return i + 1, nil
		}
		return 0, fmt.Errorf("%w: expected ',' or '}' at byte %d", errJSONShape, i)
	}
}

// arrayElements calls element with the span of each element of the JSON
// array doc[s.start:s.end]; a JSON null stands for an empty array, as
// encoding/json decodes it into a slice.
func arrayElements(doc []byte, s span, element func(span) error) error {
	v := doc[s.start:s.end]
	if string(v) == "null" {
		return nil
	}
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return fmt.Errorf("%w: expected an array at byte %d", errJSONShape, s.start)
	}
	i := skipSpace(doc, s.start+1)
	if i == s.end-1 {
		return nil
	}
	for {
		end, err := skipValue(doc, i)
		if err != nil {
			return err
		}
		if err := element(span{i, end}); err != nil {
			return err
		}
		i = skipSpace(doc, end)
		switch {
		case i == s.end-1:
			return nil
		case i < s.end-1 && doc[i] == ',':
			i = skipSpace(doc, i+1)
		default:
			return fmt.Errorf("%w: expected ',' or ']' at byte %d", errJSONShape, i)
		}
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the JSON value starting at doc[i] ends.
func skipValue(doc []byte, i int) (int, error) {
	if i >= len(doc) {
		return 0, fmt.Errorf("%w: unexpected end", errJSONShape)
	}
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		return skipNested(doc, i)
	}
	start := i
	for i < len(doc) && isScalarByte(doc[i]) {
		i++
	}
	if i == start {
		return 0, fmt.Errorf("%w: unexpected %q at byte %d", errJSONShape, doc[i], i)
	}
	return i, nil
}

// isScalarByte is a byte of a number or of true, false and null.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// skipString returns where the string starting at doc[i] ends (after its
// closing quote): the next quote not escaped by an odd run of backslashes.
func skipString(doc []byte, i int) (int, error) {
	for j := i + 1; j < len(doc); j++ {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			break
		}
		j += k
		escapes := 0
		for b := j - 1; b > i && doc[b] == '\\'; b-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: unterminated string at byte %d", errJSONShape, i)
}

// structural marks the bytes skipNested stops at.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipNested returns where the object or array starting at doc[i] ends,
// counting brackets outside strings: its contents are checked by whoever
// decodes it.
func skipNested(doc []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(doc); j++ {
		for j < len(doc) && !structural[doc[j]] {
			j++
		}
		if j == len(doc) {
			break
		}
		switch doc[j] {
		case '"':
			end, err := skipString(doc, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unterminated value at byte %d", errJSONShape, i)
}
