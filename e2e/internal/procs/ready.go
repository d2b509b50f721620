package procs

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// StartServing starts cmd as Start does (no echo) and waits up to timeout
// until it answers a Kafka ping; a server that does not is stopped, so
// that the caller has either a ready server or nothing to clean up.
func StartServing(ctx context.Context, name, addr string, cmd *exec.Cmd, logs *LogTail, timeout time.Duration) (*Proc, error) {
	p, err := Start(name, addr, cmd, logs, nil)
	if err != nil {
		return nil, err
	}
	if err := p.WaitKafka(ctx, timeout); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// WaitKafka waits until the server answers a franz-go ping on p.Addr: both
// servers the harnesses start speak Kafka, and a ping is the first moment
// a client can use them. It fails early, with the log tail, when the
// process exits or ctx ends, and after timeout. It does not stop p.
func (p *Proc) WaitKafka(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = cl.Ping(pctx)
			cancel()
			cl.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up on %s in %v: %w\n%s", p.Name, p.Addr, timeout, err, p.Logs)
		}
		select {
		case werr := <-p.done:
			p.done <- werr
			return fmt.Errorf("%s exited early (%v):\n%s", p.Name, werr, p.Logs)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
