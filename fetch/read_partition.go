package fetch

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// ReadPartition reads into s the record batches of partition p of t from
// the batch that holds offset, as Read does, and returns them; they stay
// valid until s is reset or released. A disk cache hit stays in its file.
//
// v is the view of the partition's index the caller answers with (one per
// answer: issue 12, a truncation between two lookups mixed epochs in one
// answer). Every batch is located, encoded and cached under it; when a
// segment of v is gone before any batch is in hand, the read starts again
// from the index as it is now and leaves that view in v, so the caller
// reports the offsets of the view its batches are from.
//
// The error is ErrOffsetOutOfRange, or a failure to read the batches
// (logged here, at most once a second per topic), returned with the
// batches read before it.
func (r *Reader) ReadPartition(ctx context.Context, t *topics.Topic, v *offsets.View, p int32, offset int64,
	maxBytes int, compression string, s *Spans) (Batches, error) {
	err := r.read(ctx, t, v, p, offset, maxBytes, compression, &s.sink)
	if err != nil && !errors.Is(err, ErrOffsetOutOfRange) && ctx.Err() == nil {
		// Kind per topic: served topics are a bounded set.
		r.failures.Event(r.log, zerolog.ErrorLevel, "fetch failed: "+t.Name).Err(err).Str("topic", t.Name).Int32("partition", p).
			Int64("offset", offset).Msg("fetch failed")
	}
	return s.sink.take(), err
}
