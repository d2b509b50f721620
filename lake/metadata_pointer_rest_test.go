package lake

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// restPointerServer is the part of an Iceberg REST catalog a pointer read
// needs: /v1/config and loadTable of ns.t, answering with the metadata of
// a real table and recording each loadTable's `snapshots` parameter.
type restPointerServer struct {
	mu        sync.Mutex
	modes     []string
	metaLoc   string
	metaBytes []byte
}

func (s *restPointerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/config":
		_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
	case r.URL.Path == "/v1/namespaces/ns/tables/t":
		s.mu.Lock()
		s.modes = append(s.modes, r.URL.Query().Get("snapshots"))
		s.mu.Unlock()
		body, _ := json.Marshal(map[string]any{"metadata-location": s.metaLoc, "metadata": json.RawMessage(s.metaBytes), "config": map[string]string{}})
		_, _ = w.Write(body)
	case strings.HasPrefix(r.URL.Path, "/v1/namespaces/"):
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"no such table","type":"NoSuchTableException","code":404}}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// A REST catalog's pointer is read with `snapshots=refs` (the answer no
// longer carries the history), while the catalog itself still loads the
// whole table; an unknown table gives no answer.
func TestRESTMetadataPointerAsksForRefsOnly(t *testing.T) {
	ctx := context.Background()
	src, ident := pointerTable(t, t.TempDir(), 3)
	tbl, err := src.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(strings.TrimPrefix(tbl.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &restPointerServer{metaLoc: tbl.MetadataLocation(), metaBytes: meta}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	cat, err := OpenCatalog(ctx, t.TempDir(), iceberg.Properties{"type": "rest", "uri": hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenMetadataPointers(ctx, cat)
	if err != nil || p == nil {
		t.Fatalf("REST catalog: pointers %v, %v", p, err)
	}
	defer p.Close()
	loc, ok, err := p.Location(ctx, ident)
	if err != nil || !ok || loc != tbl.MetadataLocation() {
		t.Fatalf("pointer %q %v %v, want %q", loc, ok, err, tbl.MetadataLocation())
	}
	if _, err := cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if loc, ok, err := p.Location(ctx, table.Identifier{"ns", "missing"}); err != nil || ok {
		t.Fatalf("missing table: %q %v %v", loc, ok, err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if want := []string{"refs", ""}; strings.Join(srv.modes, ",") != strings.Join(want, ",") {
		t.Fatalf("loadTable snapshots parameters %q, want %q (pointer, then the catalog's full load)", srv.modes, want)
	}
}
