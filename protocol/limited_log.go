package protocol

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// limitedLog writes the WARN line of one kind of client misbehaviour (a
// malformed frame, a refused connection) at most once per interval, with
// how many of that kind it left out since its last line and in all. One
// line per bad frame let a client flood the log.
type limitedLog struct {
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*limitedKind
}

// limitedKind is what limitedLog knows of one kind.
type limitedKind struct {
	last       time.Time
	suppressed int64
	total      int64
}

func newLimitedLog(every time.Duration) *limitedLog {
	return &limitedLog{every: every, now: time.Now, kinds: map[string]*limitedKind{}}
}

// warn counts one event of kind and returns the WARN event to write, with
// the counts, or nil (on which zerolog's methods do nothing) when a line
// of kind was written less than the interval ago. kind is the message:
// the caller ends the event with Msg(kind).
func (l *limitedLog) warn(log zerolog.Logger, kind string) *zerolog.Event {
	l.mu.Lock()
	k := l.kinds[kind]
	if k == nil {
		k = &limitedKind{}
		l.kinds[kind] = k
	}
	k.total++
	now := l.now()
	if !k.last.IsZero() && now.Sub(k.last) < l.every {
		k.suppressed++
		l.mu.Unlock()
		return nil
	}
	suppressed, total := k.suppressed, k.total
	k.last, k.suppressed = now, 0
	l.mu.Unlock()
	return log.Warn().Int64("suppressed_since_last", suppressed).Int64("total", total)
}

// count is how many events of kind were seen, logged or not.
func (l *limitedLog) count(kind string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.kinds[kind]; k != nil {
		return k.total
	}
	return 0
}
