package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
	"github.com/lakegw/lakegw/lsm"
)

// The LSM side of the benchmark: lakegw's own primary-key table
// bench.orders_lsm, holding the same changes as bench.orders (the same keys,
// operations and row images, snapshot by snapshot), whose changelog files
// the gateway serves as they are, without deriving anything.

var lsmIdent = table.Identifier{"bench", "orders_lsm"}

const lsmTopic = "bench.orders_lsm"

// lsmTable writes bench.orders_lsm: one commit per bench.orders snapshot,
// with exactly the changes tablegen chose for it.
type lsmTable struct {
	t *lsm.Table
	w *lsm.Writer
	// Changes counts the change records the commits made (from their
	// per-bucket counts); Commits the snapshots with changes.
	Changes int64
	Commits int
	// Compactions counts the compaction snapshots; Elapsed is the time of
	// every commit and compaction.
	Compactions int
	Elapsed     time.Duration
}

// newLSMTable creates bench.orders_lsm: benchSchema, primary key id, the
// deduplicate merge engine (each write replaces the row, as an update of
// bench.orders does), the format version the lsm package defaults to (v2),
// and ONE bucket: the bucket is the topic partition, and every measured
// consumer reads partition 0 of one topic, as bench.orders has one
// partition. extraProps are the -table-prop properties, as bench.orders
// gets them.
func newLSMTable(ctx context.Context, cat catalog.Catalog, extraProps iceberg.Properties) (*lsmTable, error) {
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(lsmIdent), nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	t, err := lsm.Create(ctx, cat, lsmIdent, benchSchema, lsm.CreateOptions{
		PrimaryKey:  []string{"id"},
		Buckets:     1,
		MergeEngine: lsm.EngineDeduplicate,
		Properties:  extraProps,
	}, lsm.Options{Log: zerolog.Nop()})
	if err != nil {
		return nil, err
	}
	w, err := t.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	return &lsmTable{t: t, w: w}, nil
}

// apply commits one snapshot's changes: inserts and updates as upserts of
// the new row image, deletes as deletes of the key.
//
// Compaction: as `lakegw load` does by default (--compact=true), universal
// compaction runs after every commit and merges the bucket's sorted runs
// when it needs to (Compact(ctx, false)). So the table is measured in the
// state the product's own loader leaves it in, and `lakegw serve`'s
// background compactor (every 30 s by default) finds nothing to do during
// the measured passes: a replace snapshot committed in the middle of a pass
// would change no records, but it would make the gateway reload the table
// while it is being timed. Compaction does not change what is served (the
// changelog files, never the sorted runs), only the lookups of later
// commits.
func (l *lsmTable) apply(ctx context.Context, changes []change) error {
	start := time.Now()
	defer func() { l.Elapsed += time.Since(start) }()
	var sb strings.Builder
	for _, c := range changes {
		var err error
		switch c.kind {
		case changeDelete:
			err = l.w.Delete(map[string]any{"id": c.id})
		default:
			err = l.w.Upsert(orderMap(valuesOf(orderRow{id: c.id, version: c.version}, &sb)))
		}
		if err != nil {
			return fmt.Errorf("%s: order %d: %w", lsmTopic, c.id, err)
		}
	}
	res, err := l.w.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit %s: %w", lsmTopic, err)
	}
	var n int64
	for _, x := range res.Counts {
		n += x
	}
	if res.SnapshotID == 0 || n != int64(len(changes)) {
		return fmt.Errorf("commit %s: snapshot %d with %d change records, want %d", lsmTopic, res.SnapshotID, n, len(changes))
	}
	l.Changes += n
	l.Commits++
	cres, err := l.t.Compact(ctx, false)
	if err != nil {
		return fmt.Errorf("compact %s: %w", lsmTopic, err)
	}
	if cres.SnapshotID != 0 {
		l.Compactions++
	}
	return nil
}

// orderMap is an order row as the lsm Writer takes it, by column name.
// The price goes in as the decimal text a JSON load passes (`lakegw load`
// hands the writer json.Number values); timestamps as microseconds.
func orderMap(v orderValues) map[string]any {
	m := map[string]any{
		"id":            v.id,
		"customer_id":   v.customerID,
		"customer_name": v.customerName,
		"email":         nil,
		"product":       v.product,
		"quantity":      v.quantity,
		"price":         json.Number(fmt.Sprintf("%d.%02d", v.priceCents/100, v.priceCents%100)),
		"status":        v.status,
		"created_at":    v.createdAt,
		"updated_at":    v.updatedAt,
	}
	if v.email != "" {
		m["email"] = v.email
	}
	return m
}

// changeDigest summarises the changes a topic describes, leaving out what
// legitimately differs between two tables that hold the same changes: the
// snapshot ids, sequence numbers and commit times (in the headers, the
// record timestamp and the value's ts_ms and source block), and the order
// of the records within one snapshot. bench.orders gets its offsets from
// derive.Derive (a snapshot's deletes first, then its inserts and
// updates in data file order), bench.orders_lsm from the LSM changelog file
// (a bucket's records in key order), so the same snapshot lists the same
// records in different orders.
//
// So the digest is, per snapshot (a run of consecutive records with the
// same lakegw.snapshot-id header; bench.orders_lsm's compaction snapshots
// have no records, so the runs pair up one to one with tablegen's
// snapshots), the record count and the sum of a 64-bit hash of each
// record's key, op, before-image and after-image (the debezium value up to
// its top-level ts_ms). Every order changes at most once per snapshot (see
// change), so this per-snapshot multiset pins down every change exactly;
// equal digests mean the same keys, operations and row values in the same
// snapshots, up to a 2^-64 chance of a hash collision.
type changeDigest struct {
	snaps []snapDigest
	last  []byte // snapshot id header of the current run
	err   error
}

type snapDigest struct {
	records int64
	sum     uint64
}

var crcISO = crc64.MakeTable(crc64.ISO)

var (
	dbzBefore = []byte(`{"before":`)
	dbzOp     = []byte(`,"op":"`)
	dbzTsMs   = []byte(`,"ts_ms":`)
)

// add folds a record (in offset order) into the digest.
func (d *changeDigest) add(r *kgo.Record) {
	if d.err != nil {
		return
	}
	var snap []byte
	for _, h := range r.Headers {
		if h.Key == "lakegw.snapshot-id" {
			snap = h.Value
		}
	}
	// The value is lakegw's debezium-json envelope:
	// {"before":...,"after":...,"op":"u","ts_ms":...,"source":{...}}. The
	// last `,"op":"` is the top-level one (benchSchema has no op column),
	// and the ts_ms after it ends the content.
	i := bytes.LastIndex(r.Value, dbzOp)
	j := -1
	if i > 0 {
		j = bytes.Index(r.Value[i:], dbzTsMs)
	}
	if snap == nil || !bytes.HasPrefix(r.Value, dbzBefore) || j < 0 {
		d.err = fmt.Errorf("offset %d: not a lakegw debezium-json record with a snapshot id header: %.200q", r.Offset, r.Value)
		return
	}
	if len(d.snaps) == 0 || !bytes.Equal(snap, d.last) {
		d.snaps = append(d.snaps, snapDigest{})
		d.last = append(d.last[:0], snap...)
	}
	h := crc64.Update(0, crcISO, r.Key)
	h = crc64.Update(h, crcISO, []byte{0})
	h = crc64.Update(h, crcISO, r.Value[:i+j])
	s := &d.snaps[len(d.snaps)-1]
	s.records++
	s.sum += mix(h)
}

// total is a summary of the whole digest, for the report.
func (d *changeDigest) total() uint64 {
	var t uint64
	for i, s := range d.snaps {
		t = mix(t ^ mix(uint64(i)+s.sum) ^ uint64(s.records))
	}
	return t
}

// compare says how two digests differ ("" when they are equal).
func (d *changeDigest) compare(o *changeDigest, name, oname string) string {
	switch {
	case d.err != nil:
		return fmt.Sprintf("%s: %v", name, d.err)
	case o.err != nil:
		return fmt.Sprintf("%s: %v", oname, o.err)
	case len(d.snaps) != len(o.snaps):
		return fmt.Sprintf("%s has changes in %d snapshots, %s in %d", name, len(d.snaps), oname, len(o.snaps))
	}
	for i := range d.snaps {
		if a, b := d.snaps[i], o.snaps[i]; a != b {
			return fmt.Sprintf("snapshot %d of %d: %s has %d records (digest %016x), %s %d (digest %016x)",
				i+1, len(d.snaps), name, a.records, a.sum, oname, b.records, b.sum)
		}
	}
	return ""
}

// lsmReference runs on the first gateway, after the copy into Kafka: it
// checks that bench.orders_lsm has exactly as many records as bench.orders,
// then reads it once (unmeasured) for the digest of its changes and the CRC
// that every measured pass of it must reproduce.
func lsmReference(ctx context.Context, addr string, r *results, total int64) error {
	if err := waitEndOffset(ctx, addr, lsmTopic, total, 2*time.Minute); err != nil {
		r.checkErrs = append(r.checkErrs, fmt.Sprintf("record count: %v (the change records of %s)", err, mainTopic))
		r.lsmErr = fmt.Sprintf("record count differs from %s: %v", mainTopic, err)
		logf("%s: %v; its passes are skipped", lsmTopic, err)
		return nil
	}
	d := &changeDigest{}
	res, err := consume(ctx, addr, lsmTopic, 0, total, d.add)
	if err != nil {
		return err
	}
	r.lsmRefSum, r.lsmChanges = res.Sum, d
	logf("read %s once: %d records (%.1f MB) in %v", lsmTopic, res.Records, float64(res.Bytes)/1e6, res.Elapsed.Round(time.Millisecond))
	return nil
}

// lsmPasses measures bench.orders_lsm with franz-go: a cold pass on a new
// gateway, then a warm one (a second consumer of the same range), as the
// passes of bench.orders. One gateway per data directory (its lock): the
// gateway of the bench.orders passes (*main) is stopped first, and a new
// one, warmed by one unmeasured read of bench.orders, takes its place for
// the fan-out that follows the repetitions.
func lsmPasses(ctx context.Context, r *results, rep int, main **procs.Proc, gw gatewayOpts, total int64) error {
	(*main).Stop()
	*main = nil
	g, err := startGateway(ctx, gw)
	if err != nil {
		return err
	}
	*main = g
	for _, kind := range []string{"lsm_cold", "lsm_warm"} {
		cpu0 := procs.CPUSeconds(g.Pid())
		res, err := consume(ctx, g.Addr, lsmTopic, 0, total, nil)
		if err != nil {
			return err
		}
		r.addRep(kind, rep, res, procs.CPUSeconds(g.Pid())-cpu0)
	}
	logf("rep %d, %s: lakegw cold %.0f rec/s, warm %.0f", rep+1, lsmTopic,
		r.reps["lsm_cold"][rep].res.recsPerSec(), r.reps["lsm_warm"][rep].res.recsPerSec())
	g.Stop()
	if *main, err = startGateway(ctx, gw); err != nil {
		return err
	}
	_, err = consume(ctx, (*main).Addr, mainTopic, 0, total, nil)
	return err
}
