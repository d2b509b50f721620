package produce

import (
	"context"
	"time"
)

// The answers of a commit's requests wait for this gateway to serve what
// the commit wrote (Config.AwaitServed): Kafka's acks=all promises that a
// producer reading right after its acknowledgement (ListOffsets, a fetch
// from the end) sees its records. The wait runs on the writer's answering
// goroutine, not in the commit loop, so the next commit does not wait for
// the index; answers leave in commit order.

// answers are the answers to one group's requests: its batches' offsets
// (each ticket's res, set by the commit) once every partition is served up
// to ends (nil: nothing to wait for), or err for all of them.
type answers struct {
	group []*ticket
	ends  []int64
	err   error
}

// answerQueue bounds the committed groups waiting for the index: a full
// queue holds back the next commit (back-pressure, no unbounded queue).
const answerQueue = 4

// maxServeWait bounds the wait for the index: past it the records are
// acknowledged anyway (they are committed) and the lag is logged. An index
// that does not keep up (a damaged table, an overloaded gateway) must not
// turn into failed produces.
const maxServeWait = 5 * time.Second

// answer hands a group's answers to the answering goroutine; once the
// writer stops (ctx ended, no goroutine to take them) it answers at once.
func (w *writer) answer(ctx context.Context, a answers) {
	if w.answers != nil {
		select {
		case w.answers <- a:
			return
		case <-ctx.Done():
		}
	}
	w.deliver(ctx, a)
}

// answerLoop delivers the answers queued on ch in order until ch closes.
func (w *writer) answerLoop(ctx context.Context, ch <-chan answers) {
	for a := range ch {
		w.deliver(ctx, a)
	}
}

// deliver waits, within maxServeWait, for this gateway to serve a's ends,
// then answers a's requests.
func (w *writer) deliver(ctx context.Context, a answers) {
	if a.err == nil && a.ends != nil && w.svc.cfg.AwaitServed != nil && ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, maxServeWait)
		start := time.Now()
		err := w.svc.cfg.AwaitServed(wctx, w.topic, a.ends)
		cancel()
		if err != nil && ctx.Err() == nil {
			w.log.Warn().Err(err).Dur("waited", time.Since(start)).Ints64("ends", a.ends).
				Msg("acknowledging committed records this gateway does not serve yet: a read right after the acknowledgement may miss them")
		}
	}
	for _, t := range a.group {
		t.finish(t.res.BaseOffset, a.err)
		w.svc.release(t.size)
	}
}
