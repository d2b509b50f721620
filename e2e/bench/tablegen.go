package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// The benchmark table: a realistic 10-column order row, keyed by id, written
// merge-on-read. Its first snapshot appends; every later one inserts new
// orders, updates recent ones (a position delete of the old row plus the new
// image) and deletes some, so lakegw derives inserts, updates and deletes
// with full before-images, as from any Spark or Flink merge-on-read table.

var benchSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "customer_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 3, Name: "customer_name", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 4, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 5, Name: "product", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 6, Name: "quantity", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 7, Name: "price", Type: iceberg.DecimalTypeOf(12, 2), Required: true},
	iceberg.NestedField{ID: 8, Name: "status", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 9, Name: "created_at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 10, Name: "updated_at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
)

var (
	firstNames = []string{"Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Margaret",
		"Dennis", "Radia", "John", "Katherine", "Niklaus", "Leslie", "Sophie", "Tim", "Hedy", "Claude", "Anita"}
	lastNames = []string{"Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson",
		"Hamilton", "Ritchie", "Perlman", "McCarthy", "Johnson", "Wirth", "Lamport", "Wilson", "Berners-Lee",
		"Lamarr", "Shannon", "Borg"}
	productNames = []string{"mechanical keyboard", "usb-c hub", "27in monitor", "noise-cancelling headphones",
		"laptop stand", "webcam", "desk lamp", "ergonomic mouse", "standing desk", "cable kit",
		"external ssd 2TB", "wireless charger", "office chair", "docking station", "portable speaker"}
	statuses = []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	epoch    = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

// orderRow is one version of one order; every column is a function of
// (id, version), so the writer keeps only where each live row sits.
type orderRow struct {
	id      int64
	version int32
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// changeKind is what one change record does to an order.
type changeKind uint8

const (
	changeInsert changeKind = iota
	changeUpdate
	changeDelete
)

// change is one change record of a snapshot: an order inserted (version 0),
// updated to a new version (the new row image is orderRow{id, version}) or
// deleted (version is that of the deleted image). Every order changes at
// most once per snapshot: inserts take new ids, and updates and deletes
// each take a live row out of the live set until the commit.
type change struct {
	kind    changeKind
	id      int64
	version int32
}

// liveRow is where the current version of a live order sits.
type liveRow struct {
	id      int64
	version int32
	pos     int64
}

// tableGen writes the benchmark table.
type tableGen struct {
	cat   catalog.Catalog
	ident table.Identifier
	rng   *rand.Rand
	next  int64
	// files[i] is the i-th data file written and live[i] its live rows.
	files []string
	live  [][]liveRow
	// Changes is the number of change records committed so far (one per
	// insert, update and delete).
	Changes int64
	// LastChanges are the changes of the last snapshot committed, in the
	// order they were chosen (inserts, updates, deletes), so that another
	// table (the LSM table, lsm_table.go) can apply exactly the same ones.
	LastChanges []change
	// Snapshots counts the commits.
	Snapshots int
	// RecentFiles is how many of the newest data files updates and deletes
	// draw from (default defaultRecentFiles).
	RecentFiles int
	// DataFiles are every data file written, with their sizes, for the
	// bare-decode floor.
	DataFiles []fileInfo
	arrowSc   *arrow.Schema
}

type fileInfo struct {
	Path string
	Size int64
	Rows int64
}

// defaultRecentFiles is how many of the newest data files updates and
// deletes draw from: orders change soon after they are placed, and it keeps
// delete files per snapshot bounded, as a real order table's are.
const defaultRecentFiles = 4

func newTableGen(ctx context.Context, cat catalog.Catalog, ident table.Identifier, seed uint64, extraProps iceberg.Properties) (*tableGen, error) {
	ns := catalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	props := iceberg.Properties{
		"format-version":    "2",
		"write.delete.mode": "merge-on-read",
		"write.update.mode": "merge-on-read",
	}
	for k, v := range extraProps {
		props[k] = v
	}
	tbl, err := cat.CreateTable(ctx, ident, benchSchema, catalog.WithProperties(props))
	if err != nil {
		return nil, fmt.Errorf("create table %v: %w", ident, err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	return &tableGen{cat: cat, ident: ident, rng: rand.New(rand.NewPCG(seed, 7)), next: 1, arrowSc: sc}, nil
}

// commit writes one snapshot of n change records. The first snapshot (or
// any while the table is empty) inserts only; later ones are 70% inserts,
// 20% updates and 10% deletes.
func (g *tableGen) commit(ctx context.Context, n int) error {
	var nUpd, nDel int
	if g.liveCount() > 0 {
		nUpd, nDel = n/5, n/10
	}
	nIns := n - nUpd - nDel
	retired := map[int][]int64{} // file index -> deleted positions
	var written []orderRow
	changes := make([]change, 0, n)
	for range nIns {
		written = append(written, orderRow{id: g.next})
		changes = append(changes, change{kind: changeInsert, id: g.next})
		g.next++
	}
	for range nUpd {
		fi, r, ok := g.takeRecent()
		if !ok {
			break
		}
		retired[fi] = append(retired[fi], r.pos)
		written = append(written, orderRow{id: r.id, version: r.version + 1})
		changes = append(changes, change{kind: changeUpdate, id: r.id, version: r.version + 1})
	}
	for range nDel {
		fi, r, ok := g.takeRecent()
		if !ok {
			break
		}
		retired[fi] = append(retired[fi], r.pos)
		changes = append(changes, change{kind: changeDelete, id: r.id, version: r.version})
	}

	tbl, err := g.cat.LoadTable(ctx, g.ident)
	if err != nil {
		return err
	}
	rec := g.buildBatch(written)
	var data []iceberg.DataFile
	for f, err := range table.WriteRecords(ctx, tbl, g.arrowSc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
		if err != nil {
			return fmt.Errorf("write data file: %w", err)
		}
		data = append(data, f)
	}
	if len(data) != 1 || data[0].Count() != int64(len(written)) {
		return fmt.Errorf("expected one data file of %d rows, got %d files", len(written), len(data))
	}
	path := data[0].FilePath()
	g.DataFiles = append(g.DataFiles, fileInfo{Path: path, Size: data[0].FileSizeBytes(), Rows: data[0].Count()})

	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("table file IO is read-only")
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		return err
	}
	var deletes []iceberg.DataFile
	for fi, positions := range retired {
		path := locs.NewDataLocation(uuid.NewString() + "-deletes.parquet")
		df, _, err := icefiles.WritePositionDeletes(wfs, tbl.Spec(), path, g.files[fi], positions)
		if err != nil {
			return err
		}
		deletes = append(deletes, df)
	}

	tx := tbl.NewTransaction()
	rd := tx.NewRowDelta(nil)
	rd.AddRows(data...).AddDeletes(deletes...)
	if err := rd.Commit(ctx); err != nil {
		return fmt.Errorf("stage row delta: %w", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit row delta: %w", err)
	}

	rows := make([]liveRow, len(written))
	for i, w := range written {
		rows[i] = liveRow{id: w.id, version: w.version, pos: int64(i)}
	}
	g.files = append(g.files, path)
	g.live = append(g.live, rows)
	g.Changes += int64(len(changes))
	g.LastChanges = changes
	g.Snapshots++
	return nil
}

func (g *tableGen) liveCount() int {
	n := 0
	for _, l := range g.live {
		n += len(l)
	}
	return n
}

// takeRecent removes a random live row of one of the newest data files.
func (g *tableGen) takeRecent() (int, liveRow, bool) {
	recent := g.RecentFiles
	if recent <= 0 {
		recent = defaultRecentFiles
	}
	from := max(0, len(g.live)-recent)
	for range 16 {
		fi := from + g.rng.IntN(len(g.live)-from)
		l := g.live[fi]
		if len(l) == 0 {
			continue
		}
		i := g.rng.IntN(len(l))
		r := l[i]
		l[i] = l[len(l)-1]
		g.live[fi] = l[:len(l)-1]
		return fi, r, true
	}
	for fi := len(g.live) - 1; fi >= 0; fi-- {
		if l := g.live[fi]; len(l) > 0 {
			r := l[len(l)-1]
			g.live[fi] = l[:len(l)-1]
			return fi, r, true
		}
	}
	return 0, liveRow{}, false
}

// orderValues are the column values of one order row.
type orderValues struct {
	id, customerID int64
	customerName   string
	email          string // "" is null
	product        string
	quantity       int32
	priceCents     int64 // price, decimal(12, 2), unscaled
	status         string
	createdAt      int64 // microseconds since the epoch
	updatedAt      int64
}

// valuesOf computes the columns of version `version` of order id.
func valuesOf(r orderRow, sb *strings.Builder) orderValues {
	h := mix(uint64(r.id))
	c := int64(h % 250_000)
	first, last := firstNames[h>>20%uint64(len(firstNames))], lastNames[h>>28%uint64(len(lastNames))]
	v := orderValues{id: r.id, customerID: c}
	sb.Reset()
	sb.WriteString(first)
	sb.WriteByte(' ')
	sb.WriteString(last)
	v.customerName = sb.String()
	if h>>36%20 != 0 {
		sb.Reset()
		sb.WriteString(strings.ToLower(first))
		sb.WriteByte('.')
		sb.WriteString(strings.ToLower(last))
		fmt.Fprintf(sb, "%d@example.com", c)
		v.email = sb.String()
	}
	v.product = productNames[h>>40%uint64(len(productNames))]
	hv := mix(h + uint64(r.version))
	v.quantity = int32(1 + hv%5)
	v.priceCents = int64(500 + hv>>8%200_000)
	v.status = statuses[min(int(r.version), len(statuses)-1)]
	ts := epoch.Add(time.Duration(r.id) * time.Second)
	v.createdAt = ts.UnixMicro()
	v.updatedAt = ts.Add(time.Duration(r.version) * 17 * time.Minute).UnixMicro()
	return v
}

func (g *tableGen) buildBatch(rows []orderRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, g.arrowSc)
	defer b.Release()
	id := b.Field(0).(*array.Int64Builder)
	cust := b.Field(1).(*array.Int64Builder)
	name := b.Field(2).(*array.StringBuilder)
	email := b.Field(3).(*array.StringBuilder)
	product := b.Field(4).(*array.StringBuilder)
	qty := b.Field(5).(*array.Int32Builder)
	price := b.Field(6).(*array.Decimal128Builder)
	status := b.Field(7).(*array.StringBuilder)
	created := b.Field(8).(*array.TimestampBuilder)
	updated := b.Field(9).(*array.TimestampBuilder)
	var sb strings.Builder
	for _, r := range rows {
		v := valuesOf(r, &sb)
		id.Append(v.id)
		cust.Append(v.customerID)
		name.Append(v.customerName)
		if v.email == "" {
			email.AppendNull()
		} else {
			email.Append(v.email)
		}
		product.Append(v.product)
		qty.Append(v.quantity)
		price.Append(decimal128.FromI64(v.priceCents))
		status.Append(v.status)
		created.Append(arrow.Timestamp(v.createdAt))
		updated.Append(arrow.Timestamp(v.updatedAt))
	}
	return b.NewRecordBatch()
}
