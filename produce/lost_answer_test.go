package produce

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// lossyCatalog passes commits to the catalog, and for the ones marked
// fails after (the commit landed, its answer is lost) or before (it did
// not) passing them on.
type lossyCatalog struct {
	catalog.Catalog
	loseAnswer, failBefore atomic.Int32
}

func (c *lossyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	// Commits of the table come back through this catalog.
	return table.New(ident, tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }, c), nil
}

func (c *lossyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.failBefore.Add(-1) >= 0 {
		return nil, "", errors.New("catalog unreachable")
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, ups)
	if err == nil && c.loseAnswer.Add(-1) >= 0 {
		return nil, "", errors.New("connection reset reading the commit's answer")
	}
	return meta, loc, err
}

// A commit whose answer is lost is found in the table: its batches
// succeed, and a retry is answered with the same offset, not written again.
// A commit that failed before the catalog took it fails its batches, and
// the retry is written once.
func TestLostCommitAnswerIsFound(t *testing.T) {
	inner, _ := openCatalog(t)
	cat := &lossyCatalog{Catalog: inner}
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "lossy", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	pid, _, _ := s.InitProducerID()
	b0 := Batch{Partition: 0, ProducerID: pid, BaseSequence: 0, Records: recs("a", 3)}
	cat.loseAnswer.Store(1)
	res, _ := s.Produce(ctx, "lossy", []Batch{b0})
	if cat.loseAnswer.Load() == 1 {
		t.Fatal("no commit went through the lossy catalog")
	}
	if res[0].Err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("a commit whose answer was lost: %+v, want success at 0", res[0])
	}
	if res, _ = s.Produce(ctx, "lossy", []Batch{b0}); res[0].Err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("its retry: %+v, want offset 0", res[0])
	}
	b1 := Batch{Partition: 0, ProducerID: pid, BaseSequence: 3, Records: recs("b", 2)}
	cat.failBefore.Store(1)
	if res, _ = s.Produce(ctx, "lossy", []Batch{b1}); cat.failBefore.Load() == 1 || !errors.Is(res[0].Err, ErrCommitFailed) {
		t.Fatalf("a commit the catalog never took: %+v, want ErrCommitFailed", res[0])
	}
	if res, _ = s.Produce(ctx, "lossy", []Batch{b1}); res[0].Err != nil || res[0].BaseOffset != 3 {
		t.Fatalf("its retry: %+v, want offset 3", res[0])
	}
	if got := scanRows(t, inner, "lossy"); len(got) != 5 {
		t.Fatalf("the table holds %d rows, want 5 (each batch once)", len(got))
	}
}
