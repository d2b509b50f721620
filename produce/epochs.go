package produce

import (
	"fmt"
	"math"

	lru "github.com/hashicorp/golang-lru/v2"
)

// maxTrackedEpochs bounds the producer ids whose epoch the gateway
// remembers for InitProducerId's epoch bumps (KIP-360); the least
// recently used is forgotten first.
const maxTrackedEpochs = 100_000

// epochs remembers the newest epoch of each producer id this gateway
// handed out or saw write, so that a bump request from a fenced producer
// (an older epoch) is refused rather than handed the next one. It is
// bounded, and empty after a restart: a producer it does not know is
// bumped as asked, as a broker that lost the state does.
type epochs struct{ c *lru.Cache[int64, int16] }

func newEpochs() *epochs {
	c, err := lru.New[int64, int16](maxTrackedEpochs)
	if err != nil {
		// Only a size below 1 fails: a constant here.
		panic(fmt.Sprintf("producer epochs cache: %v", err))
	}
	return &epochs{c: c}
}

// saw records that pid wrote (or was given) epoch.
func (e *epochs) saw(pid int64, epoch int16) {
	if cur, ok := e.c.Get(pid); !ok || epoch > cur {
		e.c.Add(pid, epoch)
	}
}

// bump is InitProducerId with the id and epoch of a producer that lost its
// sequence state: the next epoch, or ErrInvalidProducerEpoch when a newer
// epoch of the id exists (this producer was fenced), or ok false when the
// epoch is exhausted (a new id is due).
func (e *epochs) bump(pid int64, epoch int16) (int16, bool, error) {
	if cur, ok := e.c.Get(pid); ok && epoch < cur {
		return 0, false, fmt.Errorf("%w: producer %d epoch %d, fenced by epoch %d", ErrInvalidProducerEpoch, pid, epoch, cur)
	}
	if epoch >= math.MaxInt16-1 {
		return 0, false, nil
	}
	e.c.Add(pid, epoch+1)
	return epoch + 1, true, nil
}
