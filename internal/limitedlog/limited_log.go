package limitedlog

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Log limits the lines of each kind of event to one per interval. Kinds
// must come from a bounded set (messages, served topic names), never from
// client input: it keeps one entry per kind.
type Log struct {
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*kind
}

// kind is what a Log knows of one kind.
type kind struct {
	last       time.Time
	suppressed int64
	total      int64
}

// New returns a Log writing at most one line per kind every interval.
func New(every time.Duration) *Log {
	return &Log{every: every, now: time.Now, kinds: map[string]*kind{}}
}

// Warn is Event at warn level.
func (l *Log) Warn(log zerolog.Logger, k string) *zerolog.Event {
	return l.Event(log, zerolog.WarnLevel, k)
}

// Event counts one event of kind k and returns the event to write at
// level, with the counts, or nil (on which zerolog's methods do nothing)
// when a line of k was written less than the interval ago.
func (l *Log) Event(log zerolog.Logger, level zerolog.Level, k string) *zerolog.Event {
	l.mu.Lock()
	e := l.kinds[k]
	if e == nil {
		e = &kind{}
		l.kinds[k] = e
	}
	e.total++
	now := l.now()
	if !e.last.IsZero() && now.Sub(e.last) < l.every {
		e.suppressed++
		l.mu.Unlock()
		return nil
	}
	suppressed, total := e.suppressed, e.total
	e.last, e.suppressed = now, 0
	l.mu.Unlock()
	return log.WithLevel(level).Int64("suppressed_since_last", suppressed).Int64("total", total)
}

// Count is how many events of kind k were seen, logged or not.
func (l *Log) Count(k string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.kinds[k]; e != nil {
		return e.total
	}
	return 0
}
