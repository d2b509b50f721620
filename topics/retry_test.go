package topics

import (
	"testing"
	"time"
)

// TestRetryDelayBacksOff: a damaged table (issue 12, row 1: each retry
// reads its files again) is retried at the poll interval, doubling per
// failed poll, never beyond maxRetryDelay (or the interval, if longer).
func TestRetryDelayBacksOff(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		failures int
		want     time.Duration
	}{
		{200 * time.Millisecond, 0, 200 * time.Millisecond},
		{200 * time.Millisecond, 1, 400 * time.Millisecond},
		{200 * time.Millisecond, 3, 1600 * time.Millisecond},
		{200 * time.Millisecond, 100, maxRetryDelay},
		{time.Minute, 5, time.Minute},
	} {
		if got := retryDelay(c.interval, c.failures); got != c.want {
			t.Errorf("retryDelay(%v, %d) = %v, want %v", c.interval, c.failures, got, c.want)
		}
	}
}
