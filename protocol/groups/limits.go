package groups

import "unicode/utf8"

// maxIDBytes bounds the ids a client names itself and its groups with:
// group ids and group instance ids longer than this are refused, and a
// client id is cut to it where the coordinator keeps it (member ids,
// DescribeGroups). Kafka has no formal bound on group ids; 249 is what it
// allows a topic name and what its clients allow a group.instance.id
// (Topic.validate), and no real group id comes near it. It keeps what one
// group costs (in memory, in the state store and in every ListGroups
// answer) small and known.
const maxIDBytes = 249

// ValidGroupID reports whether a group id may name a group here.
// Otherwise the answer is INVALID_GROUP_ID, as Kafka gives an empty one.
func ValidGroupID(id string) bool { return id != "" && len(id) <= maxIDBytes }

// validInstanceID reports whether a group instance id may be used. Kafka
// answers INVALID_REQUEST for an empty one; a longer one than its clients
// allow gets the same answer here.
func validInstanceID(id *string) bool { return id == nil || (*id != "" && len(*id) <= maxIDBytes) }

// boundedClientID cuts a client id to maxIDBytes, at a character
// boundary, for the coordinator to keep.
func boundedClientID(id string) string {
	if len(id) <= maxIDBytes {
		return id
	}
	cut := maxIDBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut]
}

// limitOrDefault maps a limit option to its effective value: zero is
// the default, negative is unlimited (kept negative).
func limitOrDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// atLimit reports whether n things already reach limit (negative:
// unlimited).
func atLimit(n, limit int) bool { return limit >= 0 && n >= limit }
