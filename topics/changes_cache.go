package topics

import (
	"time"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/internal/sizedlru"
	"github.com/lakegw/lakegw/offsets"
)

// changesKey names the records of a segment of a topic: a snapshot's
// changes, or its live rows when it is a compacted prefix.
type changesKey struct {
	topic string
	// encoding is the topic's (encodingOf): a topic served anew with
	// other key columns or under another schema derives other records.
	encoding   string
	snapshotID int64
	kind       offsets.SegmentKind
	// chunk is 0 for the whole segment, k+1 for chunk k of a streamed
	// append (Topic.ChangesAt).
	chunk int64
	// partition is the partition a raw topic's chunk holds (0 for other
	// topics, whose Changes hold every partition of a snapshot).
	partition int32
}

// changesCache keeps derived snapshots for the fetches that read them batch
// by batch, bounded by their memory across all topics. A snapshot larger
// than the whole budget stays while it is the most recent, since every
// batch of it would otherwise derive it again.
type changesCache = sizedlru.Cache[changesKey, *changelog.Changes]

// newChangesCache returns a cache of at most maxBytes of derived
// snapshots, where one unread for idle (0: no bound) goes.
func newChangesCache(maxBytes int64, idle time.Duration) *changesCache {
	return sizedlru.New[changesKey](maxBytes, (*changelog.Changes).SizeBytes).ExpireIdle(idle)
}
