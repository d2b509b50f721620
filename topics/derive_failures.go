package topics

import (
	"fmt"
	"sync"
	"time"
)

// deriveRetryBase is the wait before a snapshot whose derivation failed is
// read again; it doubles per further failure, up to maxRetryDelay
// (retryDelay, as the watcher's polls of a damaged table).
const deriveRetryBase = time.Second

// maxRememberedFailures bounds the failed derivations a topic remembers:
// a damaged table fails at a few snapshots, and one forgotten early is
// only read again sooner.
const maxRememberedFailures = 16

// deriveFailures remembers the snapshots of a topic whose derivation
// failed (a damaged or missing file): until its backoff passes, a fetch at
// such a snapshot gets the remembered error at once instead of reading
// its files again, so that consumers retrying a damaged offset cannot keep
// the gateway decoding it (issue 12: "retried with backoff"). Keys come
// from the topic's index, not from clients, and there are at most
// maxRememberedFailures of them.
type deriveFailures struct {
	mu sync.Mutex
	m  map[changesKey]*deriveFailure
}

type deriveFailure struct {
	err      error
	failures int
	retryAt  time.Time
}

// check returns the remembered error of key while its backoff lasts, nil
// when key may be derived.
func (f *deriveFailures) check(key changesKey, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.m[key]
	if !ok || !now.Before(d.retryAt) {
		return nil
	}
	return fmt.Errorf("%w (failed %d times; its files are read again in %v)", d.err, d.failures, d.retryAt.Sub(now).Round(time.Millisecond))
}

// failed records a failed derivation of key at now.
func (f *deriveFailures) failed(key changesKey, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[changesKey]*deriveFailure{}
	}
	d, ok := f.m[key]
	if !ok {
		if len(f.m) >= maxRememberedFailures {
			f.forgetSoonest()
		}
		d = &deriveFailure{}
		f.m[key] = d
	}
	d.failures++
	d.err = err
	d.retryAt = now.Add(retryDelay(deriveRetryBase, d.failures-1))
}

// forgetSoonest drops the failure whose retry comes first.
func (f *deriveFailures) forgetSoonest() {
	var soonest changesKey
	var at time.Time
	for k, d := range f.m {
		if at.IsZero() || d.retryAt.Before(at) {
			soonest, at = k, d.retryAt
		}
	}
	delete(f.m, soonest)
}

// succeeded forgets key's failures.
func (f *deriveFailures) succeeded(key changesKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
