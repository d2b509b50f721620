package protocol

import (
	"context"
	"time"
)

// waitAny blocks until one channel closes (true), or the timeout or ctx
// ends the wait (false): a Fetch long-polls on its topics' change channels.
func waitAny(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// Most fetches name one topic; a dynamic select is only needed for more.
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	woke := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				case <-stop:
				}
			case <-stop:
			}
		}()
	}
	select {
	case <-woke:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}
