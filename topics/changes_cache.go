package topics

import (
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
}

// changesCache keeps derived snapshots for the fetches that read them batch
// by batch, bounded by their memory across all topics. A snapshot larger
// than the whole budget stays while it is the most recent, since every
// batch of it would otherwise derive it again.
type changesCache = sizedlru.Cache[changesKey, *changelog.Changes]

func newChangesCache(maxBytes int64) *changesCache {
	return sizedlru.New[changesKey](maxBytes, (*changelog.Changes).SizeBytes)
}
