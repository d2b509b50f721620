package lake

import (
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// A lease is read as at most CompactionLease from now, and one that ended
// or cannot be parsed holds nothing.
func TestCompactionLeaseUntil(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, tc := range []struct {
		v    string
		want time.Duration // from now; 0: not held
	}{
		{"", 0},
		{"x", 0},
		{strconv.FormatInt(now.UnixMilli()-1, 10), 0},
		{strconv.FormatInt(now.UnixMilli()+5000, 10), 5 * time.Second},
		{strconv.FormatInt(now.UnixMilli()+int64(time.Hour/time.Millisecond), 10), CompactionLease},
	} {
		props := iceberg.Properties{}
		if tc.v != "" {
			props[PropCompactionLease] = tc.v
		}
		until, held := CompactionLeaseUntil(props, now)
		if held != (tc.want != 0) || held && until.Sub(now) != tc.want {
			t.Errorf("lease %q: until %v held %v, want %v from now", tc.v, until.Sub(now), held, tc.want)
		}
	}
}
