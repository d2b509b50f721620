package procs

import "sync"

// LogTail is an io.Writer that keeps only the tail of what a server
// prints: a run of hours must not grow the harness's memory without bound,
// and only the end of the log helps explain a failure. It is safe for the
// concurrent writes of a process's stdout and stderr.
type LogTail struct {
	limit, keep, show int

	mu  sync.Mutex
	buf []byte
}

// NewLogTail keeps at most limit bytes: when a write takes the log past
// limit, only its last keep bytes stay (keep < limit, so trimming is rare
// and its copy cheap). String shows the last show bytes.
func NewLogTail(limit, keep, show int) *LogTail {
	keep = min(keep, limit)
	return &LogTail{limit: limit, keep: keep, show: show}
}

// Write appends b, then trims the log to its last keep bytes when it is
// longer than limit. It never fails.
func (t *LogTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.limit {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.keep:]...)
	}
	return len(b), nil
}

// Len is the number of bytes kept.
func (t *LogTail) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buf)
}

// String is the last show bytes of the log, after "...\n" when there was
// more: short enough for an error message.
func (t *LogTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(s) > t.show {
		s = "...\n" + s[len(s)-t.show:]
	}
	return s
}
