package produce

import "github.com/apache/arrow-go/v18/arrow"

// ticket is one accepted batch waiting for the commit that holds it.
type ticket struct {
	batch *Batch
	size  int64
	done  chan struct{}
	res   Result
	// ops are a table topic's row operations of the batch (prepare).
	ops []rowOp
	// rec holds an append table topic's rows of the batch (prepare).
	rec arrow.RecordBatch
	// txn names the Kafka transaction the batch commits for
	// (CommitTransaction), or is empty.
	txn string
}

func newTicket(b *Batch) *ticket {
	return &ticket{batch: b, size: b.Size(), done: make(chan struct{})}
}

// finish sets the outcome and wakes the request waiting on it.
func (t *ticket) finish(offset int64, err error) {
	t.res = Result{BaseOffset: offset, Err: err}
	if t.rec != nil {
		t.rec.Release()
		t.rec = nil
	}
	if err != nil {
		t.res.BaseOffset = -1
	}
	close(t.done)
}
