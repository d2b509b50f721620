package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// A client that speaks the versions of an old Kafka without asking
// ApiVersions (sarama configured for 0.10.2 sends Fetch v3, below the
// gateway's v4) gets UNSUPPORTED_VERSION, as from a Kafka 4 broker, and
// reports it promptly: the connection was closed before, and sarama
// reconnected and fetched again forever, with an EOF for its only error.
func TestSaramaBelowFetchRangeGetsUnsupportedVersion(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	waitEndOffsets(t, g.addr, topic, int64(len(w.allRows())))

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_10_2_0
	cfg.Consumer.Return.Errors = true
	consumer, err := sarama.NewConsumer([]string{g.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume partition (Metadata and ListOffsets v1 are served): %v", err)
	}
	defer pc.AsyncClose()
	select {
	case cerr := <-pc.Errors():
		if !errors.Is(cerr.Err, sarama.ErrUnsupportedVersion) {
			t.Fatalf("sarama's error: %v, want %v", cerr.Err, sarama.ErrUnsupportedVersion)
		}
	case m := <-pc.Messages():
		t.Fatalf("a Fetch v3 read a record: offset %d", m.Offset)
	case <-time.After(15 * time.Second):
		t.Fatalf("no error within 15 s; gateway logs:\n%s", tail(g.Logs(), 20))
	}
	// Whether sarama sent the Fetch v3 or refused it itself, from the
	// ranges ApiVersions gave it, depends on which of its goroutines runs
	// first; TestUnsupportedVersionsOverTheWire checks the answer and the
	// log line of a Fetch v3 on the wire. Either way it is never a
	// malformed request.
	logs := g.Logs()
	if strings.Contains(logs, "malformed request") {
		t.Fatalf("an old version was logged as a malformed request; logs:\n%s", tail(logs, 20))
	}
}
