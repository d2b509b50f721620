package lsm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	randv1 "math/rand"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
)

// decimalSchema has a 20-digit decimal key (FIXED_LEN_BYTE_ARRAY of 9
// bytes) and decimal values of every physical type: qty decimal(9, 2)
// (INT32), price decimal(12, 2) (INT64), big decimal(38, 10)
// (FIXED_LEN_BYTE_ARRAY of 16 bytes).
var decimalSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "k", Type: iceberg.DecimalTypeOf(20, 4), Required: true},
	iceberg.NestedField{ID: 2, Name: "qty", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.DecimalTypeOf(12, 2), Required: true},
	iceberg.NestedField{ID: 4, Name: "big", Type: iceberg.DecimalTypeOf(38, 10)},
	iceberg.NestedField{ID: 5, Name: "note", Type: iceberg.PrimitiveTypes.String},
)

// The decimal columns of decimalSchema, in order, and the test model of a
// row: the unscaled values (nil: null) and the note.
var (
	decNames  = []string{"k", "qty", "price", "big"}
	decPrecs  = []int32{20, 9, 12, 38}
	decScales = []int32{4, 2, 2, 10}
)

type decRow struct {
	vals [4]*big.Int
	note string // "" is null
}

// render is the row as the oracle renders it: "k|qty|price|big|note",
// decimals by math/big with the column's scale.
func (r decRow) render() string {
	parts := make([]string, 5)
	for c, v := range r.vals {
		parts[c] = "null"
		if v != nil {
			parts[c] = decText(v, decScales[c])
		}
	}
	parts[4] = "null"
	if r.note != "" {
		parts[4] = r.note
	}
	return strings.Join(parts, "|")
}

func (r decRow) key() string { return decText(r.vals[0], decScales[0]) }

// decGen makes random decimal rows and the many forms the writer takes
// them in.
type decGen struct{ r *rand.Rand }

// value is a random unscaled value of column c: any sign and length,
// sometimes the extremes or zero, sometimes null for optional columns.
func (g decGen) value(c int) *big.Int {
	limit := new(big.Int).Sub(pow10(decPrecs[c]), big.NewInt(1))
	switch n := g.r.IntN(20); {
	case n == 0 && c != 0 && c != 2:
		return nil
	case n == 1:
		return limit
	case n == 2:
		return new(big.Int).Neg(limit)
	case n == 3:
		return big.NewInt(0)
	case n < 8:
		// Small values: fewer fraction digits than the scale, and
		// values between -1 and 1.
		return big.NewInt(g.r.Int64N(2001) - 1000)
	}
	return randUnscaled(g.r, decPrecs[c])
}

func (g decGen) row(key *big.Int) decRow {
	r := decRow{}
	r.vals[0] = key
	for c := 1; c < 4; c++ {
		r.vals[c] = g.value(c)
	}
	if g.r.IntN(3) > 0 {
		r.note = fmt.Sprint("n", g.r.IntN(1000))
	}
	return r
}

// input is the value u at scale as one of the forms the writer accepts:
// decimal text, shortened text (fewer fraction digits), exponent notation
// (json.Number), a Go integer, or a float64 of at most 15 digits.
func (g decGen) input(u *big.Int, scale int32) any {
	text := decText(u, scale)
	switch g.r.IntN(5) {
	case 1:
		if strings.Contains(text, ".") {
			text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
		}
		return json.Number(text)
	case 2:
		return json.Number(u.String() + "e-" + strconv.Itoa(int(scale)))
	case 3:
		if q, m := new(big.Int).QuoRem(u, pow10(scale), new(big.Int)); m.Sign() == 0 && q.IsInt64() {
			return q.Int64()
		}
	case 4:
		if digits := strings.TrimRight(new(big.Int).Abs(u).String(), "0"); len(digits) <= 15 {
			f, err := strconv.ParseFloat(text, 64)
			if err == nil {
				return f
			}
		}
	}
	return text
}

func (g decGen) upsertMap(r decRow) map[string]any {
	m := map[string]any{}
	for c, v := range r.vals {
		if v != nil {
			m[decNames[c]] = g.input(v, decScales[c])
		} else if g.r.IntN(2) == 0 {
			m[decNames[c]] = nil
		}
	}
	if r.note != "" {
		m["note"] = r.note
	}
	return m
}

// A table with decimal key and value columns of every physical type,
// written with upserts (every input form), deletes, no-op rewrites and a
// full compaction, on v2 and v3 tables, checked after every commit against
// a model of the table (math/big) through three readers: an iceberg-go
// scan, Get (from a fresh Table, through bloom filters), and the change
// records served for the commit in the json and debezium-json formats.
// Then: filtered iceberg-go scans (planning prunes by the manifest bounds
// of decimal columns, so wrong bounds lose rows), manifest bounds equal to
// those iceberg-go derives from a pqarrow file of the same rows, files of
// pqarrow's Parquet types, sorted by key value, and bloom filters that
// rule out absent decimal keys.
func TestLsmDecimalTable(t *testing.T) {
	for _, version := range formatVersions {
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			testLsmDecimalTable(t, version)
		})
	}
}

func testLsmDecimalTable(t *testing.T, version int) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	ident := table.Identifier{"ns", "dec"}
	tb, err := Create(ctx, cat, ident, decimalSchema, CreateOptions{PrimaryKey: []string{"k"}, Buckets: 3, FormatVersion: version}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := decGen{rand.New(rand.NewPCG(7, uint64(version)))}
	model := map[string]decRow{}
	w, err := tb.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var deleted []decRow
	committed := map[string]decRow{} // the model at the last commit
	commit := func(label string) {
		t.Helper()
		before := committed
		committed = maps.Clone(model)
		res, err := w.Commit(ctx)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		checkDecimalTable(t, cat, ident, model, deleted, label)
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		checkDecimalRecords(t, tbl, res.SnapshotID, before, model, label)
	}
	upsert := func(r decRow) {
		t.Helper()
		if err := w.Upsert(g.upsertMap(r)); err != nil {
			t.Fatalf("upsert %s: %v", r.render(), err)
		}
		model[r.key()] = r
	}
	del := func(r decRow) {
		t.Helper()
		if err := w.Delete(map[string]any{"k": g.input(r.vals[0], decScales[0])}); err != nil {
			t.Fatalf("delete %s: %v", r.key(), err)
		}
		delete(model, r.key())
		deleted = append(deleted, r)
	}
	newKey := func() *big.Int {
		for {
			k := g.value(0)
			if _, dup := model[decText(k, decScales[0])]; !dup && !slices.ContainsFunc(deleted, func(r decRow) bool { return r.vals[0].Cmp(k) == 0 }) {
				return k
			}
		}
	}
	pick := func(n int) []decRow {
		keys := slices.Sorted(maps.Keys(model))
		g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		out := make([]decRow, 0, n)
		for _, k := range keys[:min(n, len(keys))] {
			out = append(out, model[k])
		}
		return out
	}

	for range 300 {
		upsert(g.row(newKey()))
	}
	commit("insert")

	for _, r := range pick(100) {
		upsert(g.row(r.vals[0]))
	}
	for _, r := range pick(40) {
		del(r)
	}
	for range 40 {
		upsert(g.row(newKey()))
	}
	for _, r := range pick(20) {
		upsert(r) // unchanged: no event
	}
	commit("update, delete, insert")

	cr, err := tb.Compact(ctx, true)
	if err != nil || cr.SnapshotID == 0 {
		t.Fatalf("compaction %+v: %v", cr, err)
	}
	checkDecimalTable(t, cat, ident, model, deleted, "compaction")

	for _, r := range pick(60) {
		upsert(g.row(r.vals[0]))
	}
	for _, r := range pick(20) {
		del(r)
	}
	for _, r := range deleted[:10] {
		upsert(g.row(r.vals[0])) // a deleted key comes back
	}
	deleted = deleted[10:]
	commit("after compaction")

	tbl, sp, err := tb.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkDecimalFilters(t, tbl, model)
	checkDecimalFiles(t, tbl, sp, model)
}

// checkDecimalTable compares the table with the model: an iceberg-go scan
// and Get of live and deleted keys.
func checkDecimalTable(t *testing.T, cat catalog.Catalog, ident table.Identifier, model map[string]decRow, deleted []decRow, label string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got := scanDecimal(t, tbl, nil)
	want := map[string]string{}
	for k, r := range model {
		want[k] = r.render()
	}
	if d := diffMaps(got, want); d != "" {
		t.Fatalf("%s: iceberg-go scan differs from the model:\n%s", label, d)
	}
	// Get from a fresh Table: nothing cached, so lookups go through key
	// bounds and bloom filters.
	fresh, err := Open(ctx, cat, ident, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(model))
	for i := 0; i < len(keys); i += 7 {
		r := model[keys[i]]
		for _, in := range []any{keys[i], json.Number(keys[i]), Decimal{Unscaled: decimal128.FromBigInt(r.vals[0]), Scale: decScales[0]}} {
			row, ok, err := fresh.Get(ctx, map[string]any{"k": in})
			if err != nil || !ok {
				t.Fatalf("%s: get %T %v: %v %v", label, in, in, ok, err)
			}
			if got := renderGot(row); got != r.render() {
				t.Fatalf("%s: get %s: %s, want %s", label, keys[i], got, r.render())
			}
		}
	}
	for _, r := range deleted {
		if row, ok, err := fresh.Get(ctx, map[string]any{"k": r.key()}); err != nil || ok {
			t.Fatalf("%s: get deleted key %s: %v %v %v", label, r.key(), row, ok, err)
		}
	}
}

// renderGot renders a row returned by Get as decRow.render does; its
// decimals must be Decimal values of the column's scale.
func renderGot(row map[string]any) string {
	parts := make([]string, 5)
	for c, name := range decNames {
		switch v := row[name].(type) {
		case nil:
			parts[c] = "null"
		case Decimal:
			if v.Scale != decScales[c] {
				return fmt.Sprintf("%s has scale %d", name, v.Scale)
			}
			parts[c] = decText(v.Unscaled.BigInt(), v.Scale)
		default:
			return fmt.Sprintf("%s is %T", name, v)
		}
	}
	parts[4] = renderValue(row["note"])
	return strings.Join(parts, "|")
}

// scanDecimal scans the current snapshot with iceberg-go (filter nil: all
// rows) and renders each row by its Arrow values, decimals by math/big:
// "k|qty|price|big|note" by k.
func scanDecimal(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) map[string]string {
	t.Helper()
	out := map[string]string{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	opts := []table.ScanOption{}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	sc, it, err := tbl.Scan(opts...).ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for c, name := range decNames {
		want := &arrow.Decimal128Type{Precision: decPrecs[c], Scale: decScales[c]}
		if f := sc.Field(c); f.Name != name || !arrow.TypeEqual(f.Type, want) {
			t.Fatalf("scan column %d: %s %s, want %s %s", c, f.Name, f.Type, name, want)
		}
	}
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			parts := make([]string, rec.NumCols())
			for c := range parts {
				col := rec.Column(c)
				switch {
				case col.IsNull(r):
					parts[c] = "null"
				case c < 4:
					a := col.(*array.Decimal128)
					parts[c] = decText(a.Value(r).BigInt(), a.DataType().(*arrow.Decimal128Type).Scale)
				default:
					parts[c] = col.ValueStr(r)
				}
			}
			if prev, dup := out[parts[0]]; dup {
				t.Fatalf("key %s twice in the scan: %s", parts[0], prev)
			}
			out[parts[0]] = strings.Join(parts, "|")
		}
		rec.Release()
	}
	return out
}

// checkDecimalRecords checks the change records served for a commit's
// snapshot against the model before and after it: one record per changed
// key, decimals in the record keys and values (json and debezium-json) as
// JSON numbers with exactly the column's scale.
func checkDecimalRecords(t *testing.T, tbl *table.Table, snapID int64, before, after map[string]decRow, label string) {
	t.Helper()
	var want []string
	for k, a := range after {
		b, had := before[k]
		switch {
		case !had:
			want = append(want, "+I "+k+" null -> "+a.render())
		case b.render() != a.render():
			want = append(want, "+U "+k+" "+b.render()+" -> "+a.render())
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok {
			want = append(want, "-D "+k+" "+b.render()+" -> null")
		}
	}
	sort.Strings(want)

	ref := snapshotRef(t, tbl, snapID)
	c, err := derive.Derive(context.Background(), tbl, ref, derive.Options{Partitions: int32(tbl.Properties().GetInt(PropPartitions, 1))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	dbz, _ := changelog.FormatByName("debezium-json")
	plain, _ := changelog.FormatByName("json")
	var got []string
	for i := range c.Records {
		rec := &c.Records[i]
		key, _ := dbz.AppendKey(nil, c, rec)
		var km map[string]any
		if err := decodeJSON(key, &km); err != nil || len(km) != 1 {
			t.Fatalf("%s: record key %s: %v", label, key, err)
		}
		value, _ := dbz.AppendValue(nil, c, rec)
		var env struct{ Before, After map[string]any }
		if err := decodeJSON(value, &env); err != nil {
			t.Fatalf("%s: debezium value %s: %v", label, value, err)
		}
		s := rec.Op.Header() + " " + jsonText(km["k"]) + " " + renderJSONRow(env.Before) + " -> " + renderJSONRow(env.After)
		got = append(got, s)
		// The json format: the after-image, or the before-image of a
		// delete, with the op.
		pv, _ := plain.AppendValue(nil, c, rec)
		var pm map[string]any
		if err := decodeJSON(pv, &pm); err != nil {
			t.Fatalf("%s: json value %s: %v", label, pv, err)
		}
		img := env.After
		if rec.Op == changelog.OpDelete {
			img = env.Before
		}
		delete(pm, "op")
		if renderJSONRow(pm) != renderJSONRow(img) {
			t.Fatalf("%s: json value %s, debezium image %v", label, pv, img)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: served records differ from the model:\n%s", label, diffLists(got, want))
	}
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// jsonText renders a decoded JSON value: numbers as written (so "12.30"
// stays 12.30), strings as they are, null as null.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return string(x)
	case string:
		return x
	}
	return fmt.Sprintf("%T %v", v, v)
}

func renderJSONRow(m map[string]any) string {
	if m == nil {
		return "null"
	}
	parts := make([]string, 0, 5)
	for _, name := range append(slices.Clone(decNames), "note") {
		if v, ok := m[name].(json.Number); ok && name == "note" {
			return "note is a number " + string(v)
		}
		if _, ok := m[name].(string); ok && name != "note" {
			return name + " is a string"
		}
		parts = append(parts, jsonText(m[name]))
	}
	return strings.Join(parts, "|")
}

// checkDecimalFilters scans with filters on decimal columns: iceberg-go
// prunes manifests and files by their decimal bounds, then filters rows,
// so any bound that excludes a row it should hold loses that row.
func checkDecimalFilters(t *testing.T, tbl *table.Table, model map[string]decRow) {
	t.Helper()
	dec := func(c int, v int64) iceberg.Decimal {
		return iceberg.Decimal{Val: decimal128.FromI64(v), Scale: int(decScales[c])}
	}
	keys := slices.Sorted(maps.Keys(model))
	var negKey, posKey decRow
	for _, k := range keys {
		r := model[k]
		if r.vals[0].Sign() < 0 && negKey.vals[0] == nil {
			negKey = r
		}
		if r.vals[0].Sign() > 0 {
			posKey = r
		}
	}
	if negKey.vals[0] == nil || posKey.vals[0] == nil {
		t.Fatal("the model has no negative or no positive key")
	}
	keyLit := func(r decRow) iceberg.Decimal {
		return iceberg.Decimal{Val: decimal128.FromBigInt(r.vals[0]), Scale: int(decScales[0])}
	}
	cmpCol := func(r decRow, c int, v int64) (int, bool) {
		if r.vals[c] == nil {
			return 0, false
		}
		return r.vals[c].Cmp(big.NewInt(v)), true
	}
	cases := []struct {
		name   string
		filter iceberg.BooleanExpression
		keep   func(r decRow) bool
	}{
		{"k = negative key", iceberg.EqualTo(iceberg.Reference("k"), keyLit(negKey)), func(r decRow) bool { return r.vals[0].Cmp(negKey.vals[0]) == 0 }},
		{"k = positive key", iceberg.EqualTo(iceberg.Reference("k"), keyLit(posKey)), func(r decRow) bool { return r.vals[0].Cmp(posKey.vals[0]) == 0 }},
		{"k < 0", iceberg.LessThan(iceberg.Reference("k"), dec(0, 0)), func(r decRow) bool { return r.vals[0].Sign() < 0 }},
		{"big < 0", iceberg.LessThan(iceberg.Reference("big"), dec(3, 0)), func(r decRow) bool { c, ok := cmpCol(r, 3, 0); return ok && c < 0 }},
		{"big >= -5.0000000000", iceberg.GreaterThanEqual(iceberg.Reference("big"), dec(3, -50_000_000_000)), func(r decRow) bool { c, ok := cmpCol(r, 3, -50_000_000_000); return ok && c >= 0 }},
		{"price < -1.00", iceberg.LessThan(iceberg.Reference("price"), dec(2, -100)), func(r decRow) bool { c, ok := cmpCol(r, 2, -100); return ok && c < 0 }},
		{"qty > 9.99", iceberg.GreaterThan(iceberg.Reference("qty"), dec(1, 999)), func(r decRow) bool { c, ok := cmpCol(r, 1, 999); return ok && c > 0 }},
	}
	for _, c := range cases {
		want := map[string]string{}
		for k, r := range model {
			if c.keep(r) {
				want[k] = r.render()
			}
		}
		if len(want) == 0 {
			t.Fatalf("filter %s: the model has no matching row", c.name)
		}
		if d := diffMaps(scanDecimal(t, tbl, c.filter), want); d != "" {
			t.Errorf("filter %s: scan differs from the model:\n%s", c.name, d)
		}
	}
}

// checkDecimalFiles checks every live sorted run: rows in ascending key
// value, the Parquet types pqarrow writes, manifest bounds equal to those
// of a pqarrow file of the same rows, and bloom filters that keep every
// present key and rule out absent ones.
func checkDecimalFiles(t *testing.T, tbl *table.Table, sp *spec, model map[string]decRow) {
	t.Helper()
	ctx := context.Background()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(sp.schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	runArrow := arrow.NewSchema(append(asc.Fields(), arrow.Field{Name: seqColumn, Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(seqFieldID)})}), nil)
	g := decGen{rand.New(rand.NewPCG(9, 10))}
	files, falsePos, absent := 0, 0, 0
	for _, bucket := range st.buckets {
		for _, f := range bucket {
			files++
			checkParquetFile(t, fs, f.path, runArrow, []string{"k"})
			d, err := readRun(ctx, fs, sp, f.path)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(d.rows); i++ {
				if compareValues(d.rows[i-1][0], d.rows[i][0]) >= 0 {
					t.Fatalf("%s: key %v before %v", f.path, d.rows[i-1][0], d.rows[i][0])
				}
			}
			ref := pqarrowRunDataFile(t, tbl, sp, runArrow, d)
			for name, get := range map[string]func(iceberg.DataFile) map[int][]byte{
				"lower bounds": iceberg.DataFile.LowerBoundValues,
				"upper bounds": iceberg.DataFile.UpperBoundValues,
			} {
				if got, want := get(f.df), get(ref); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %s: %v, a pqarrow file of its rows: %v", f.path, name, got, want)
				}
				for c := range decNames {
					if _, ok := get(f.df)[c+1]; !ok && c != 1 && c != 3 {
						t.Errorf("%s: no %s of column %s", f.path, name, decNames[c])
					}
				}
			}
			// Bloom filters: every key of the file is kept; random keys in
			// its key range that the table does not hold mostly are not.
			keys := make([]Row, 0, len(d.rows)+200)
			for _, r := range d.rows {
				keys = append(keys, Row{r[0], nil, nil, nil, nil})
			}
			present := len(keys)
			lo, hi := f.lower[0].(Decimal).Unscaled.BigInt(), f.upper[0].(Decimal).Unscaled.BigInt()
			for len(keys) < present+200 {
				k := new(big.Int).Add(lo, new(big.Int).Rand(randV1(g.r), new(big.Int).Add(new(big.Int).Sub(hi, lo), big.NewInt(1))))
				if _, live := model[decText(k, decScales[0])]; live {
					continue
				}
				keys = append(keys, Row{Decimal{Unscaled: decimal128.FromBigInt(k), Scale: decScales[0]}, nil, nil, nil, nil})
			}
			cand := make([]int, len(keys))
			for i := range cand {
				cand[i] = i
			}
			kept, err := bloomCandidates(fs, sp, f.path, keys, cand)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				has := slices.Contains(kept, i)
				if i < present && !has {
					t.Fatalf("%s: bloom filters rule out present key %v", f.path, keys[i][0])
				}
				if i >= present {
					absent++
					if has {
						falsePos++
					}
				}
			}
		}
	}
	if files < 3 {
		t.Fatalf("%d live data files", files)
	}
	if falsePos > absent/10 {
		t.Errorf("bloom filters kept %d of %d absent keys", falsePos, absent)
	}
}

// randV1 adapts a math/rand/v2 generator to big.Int.Rand.
func randV1(r *rand.Rand) *randv1.Rand { return randv1.New(randv1.NewSource(r.Int64())) }

// diffMaps lists the keys whose values differ ("" when equal).
func diffMaps(got, want map[string]string) string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			out = append(out, "missing "+w)
		} else if g != w {
			out = append(out, "got  "+g+"\nwant "+w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "extra "+g)
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

func diffLists(got, want []string) string {
	g, w := map[string]string{}, map[string]string{}
	for _, s := range got {
		g[s] = s
	}
	for _, s := range want {
		w[s] = s
	}
	return fmt.Sprintf("%d records, want %d\n%s", len(got), len(want), diffMaps(g, w))
}

// Decimal keys of every physical type (INT32, INT64, FIXED_LEN_BYTE_ARRAY
// of 16 bytes; TestLsmDecimalTable has 9 bytes): keys of any sign and
// length are bucketed, sorted, found by Get through key bounds and bloom
// filters, deleted and compacted, as an iceberg-go scan sees them.
func TestLsmDecimalKeys(t *testing.T) {
	ctx := context.Background()
	for _, kt := range []iceberg.DecimalType{iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(18, 0), iceberg.DecimalTypeOf(38, 10)} {
		t.Run(kt.String(), func(t *testing.T) {
			cat := testCatalog(t, t.TempDir())
			ident := table.Identifier{"ns", "deckey"}
			sc := iceberg.NewSchema(0,
				iceberg.NestedField{ID: 1, Name: "k", Type: kt, Required: true},
				iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
			)
			tb, err := Create(ctx, cat, ident, sc, CreateOptions{PrimaryKey: []string{"k"}, Buckets: 2}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			prec, scale := int32(kt.Precision()), int32(kt.Scale())
			r := rand.New(rand.NewPCG(11, uint64(prec)))
			limit := new(big.Int).Sub(pow10(prec), big.NewInt(1))
			keys := map[string]*big.Int{}
			for _, k := range []*big.Int{limit, new(big.Int).Neg(limit), big.NewInt(0), big.NewInt(-1), big.NewInt(1)} {
				keys[decText(k, scale)] = k
			}
			for len(keys) < 200 {
				k := randUnscaled(r, prec)
				keys[decText(k, scale)] = k
			}
			w, _ := tb.NewWriter(ctx)
			for text := range keys {
				if err := w.Upsert(map[string]any{"k": json.Number(text), "v": "v" + text}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var deleted []string
			for _, text := range slices.Sorted(maps.Keys(keys))[:30] {
				if err := w.Delete(map[string]any{"k": text}); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, text)
				delete(keys, text)
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tb.Compact(ctx, true); err != nil {
				t.Fatal(err)
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for text := range keys {
				want[text] = text + "|v" + text
			}
			got := map[string]string{}
			_, it, err := tbl.Scan().ToArrowRecords(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for rec, err := range it {
				if err != nil {
					t.Fatal(err)
				}
				a := rec.Column(0).(*array.Decimal128)
				for i := 0; i < a.Len(); i++ {
					text := decText(a.Value(i).BigInt(), a.DataType().(*arrow.Decimal128Type).Scale)
					got[text] = text + "|" + rec.Column(1).ValueStr(i)
				}
				rec.Release()
			}
			if d := diffMaps(got, want); d != "" {
				t.Fatalf("scan differs:\n%s", d)
			}
			fresh, err := Open(ctx, cat, ident, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for text := range keys {
				row, ok, err := fresh.Get(ctx, map[string]any{"k": text})
				if err != nil || !ok || fmt.Sprint(row["k"]) != text || row["v"] != "v"+text {
					t.Fatalf("get %s: %v %v %v", text, row, ok, err)
				}
			}
			for _, text := range deleted {
				if _, ok, err := fresh.Get(ctx, map[string]any{"k": text}); ok || err != nil {
					t.Fatalf("get deleted %s: %v %v", text, ok, err)
				}
			}
			// One sorted run per bucket after the compaction, sorted by
			// key value, whose bloom filters keep its keys and rule out
			// most absent ones.
			_, sp, _ := fresh.load(ctx)
			st, err := loadState(ctx, tbl, sp, nil)
			if err != nil {
				t.Fatal(err)
			}
			fs, _ := tbl.FS(ctx)
			falsePos, absent := 0, 0
			for b, files := range st.buckets {
				if len(files) != 1 {
					t.Fatalf("bucket %d: %d files after a full compaction", b, len(files))
				}
				d, err := readRun(ctx, fs, sp, files[0].path)
				if err != nil {
					t.Fatal(err)
				}
				var probe []Row
				for i, row := range d.rows {
					if i > 0 && row[0].(Decimal).Unscaled.BigInt().Cmp(d.rows[i-1][0].(Decimal).Unscaled.BigInt()) <= 0 {
						t.Fatalf("bucket %d: key %v after %v", b, row[0], d.rows[i-1][0])
					}
					probe = append(probe, Row{row[0], nil})
				}
				present := len(probe)
				for len(probe) < present+100 {
					k := randUnscaled(r, prec)
					if _, live := keys[decText(k, scale)]; !live {
						probe = append(probe, Row{Decimal{Unscaled: decimal128.FromBigInt(k), Scale: scale}, nil})
					}
				}
				cand := make([]int, len(probe))
				for i := range cand {
					cand[i] = i
				}
				kept, err := bloomCandidates(fs, sp, files[0].path, probe, cand)
				if err != nil {
					t.Fatal(err)
				}
				for i := range probe {
					has := slices.Contains(kept, i)
					if i < present && !has {
						t.Fatalf("bucket %d: bloom filters rule out present key %v", b, probe[i][0])
					}
					if i >= present {
						absent++
						if has {
							falsePos++
						}
					}
				}
			}
			if falsePos > absent/10 {
				t.Errorf("bloom filters kept %d of %d absent keys", falsePos, absent)
			}
		})
	}
}

// Input that does not fit a decimal column is rejected by Upsert, Delete
// and Get with an error that names the column, the value and the type,
// and nothing of it is buffered; an aggregate sum beyond the precision
// fails the commit, which leaves the table as it was.
func TestLsmDecimalInputRejected(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb, err := Create(ctx, cat, table.Identifier{"ns", "decbad"}, decimalSchema, CreateOptions{PrimaryKey: []string{"k"}, Buckets: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := tb.NewWriter(ctx)
	for _, c := range []struct {
		row  map[string]any
		want string
	}{
		{map[string]any{"k": "1", "price": "12.345"}, "column price: 12.345 has more fraction digits than decimal(12, 2) keeps (2)"},
		{map[string]any{"k": "1", "price": json.Number("12345678901")}, "column price: 12345678901 is out of range for decimal(12, 2): at most 10 digits before the point"},
		{map[string]any{"k": "1", "price": "1", "big": "-12345678901234567890123456789"}, "column big: -12345678901234567890123456789 is out of range for decimal(38, 10): at most 28 digits before the point"},
		{map[string]any{"k": "1.00001", "price": "1"}, "column k: 1.00001 has more fraction digits than decimal(20, 4) keeps (4)"},
		{map[string]any{"k": "1", "price": "1", "qty": runtimeSum(0.1, 0.2)}, "column qty: float64 0.30000000000000004 has 17 significant digits"},
		{map[string]any{"k": "1", "price": "1", "qty": true}, "column qty: cannot use bool true as a decimal(9, 2) value"},
		{map[string]any{"k": "1", "price": "1,5"}, `column price: "1,5" is not a decimal number`},
		{map[string]any{"k": "1", "price": int64(1) << 40}, "column price: 1099511627776 is out of range"},
	} {
		err := w.Upsert(c.row)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("upsert %v: %v, want an error with %q", c.row, err, c.want)
		}
	}
	if err := w.Delete(map[string]any{"k": "1e30"}); err == nil || !strings.Contains(err.Error(), "column k: 1e30 is out of range for decimal(20, 4)") {
		t.Errorf("delete 1e30: %v", err)
	}
	if w.Pending() != 0 {
		t.Fatalf("%d keys buffered after rejected writes", w.Pending())
	}
	if _, _, err := tb.Get(ctx, map[string]any{"k": "abc"}); err == nil || !strings.Contains(err.Error(), `column k: "abc" is not a decimal number`) {
		t.Errorf("get abc: %v", err)
	}

	// Aggregation: 999.99 + 0.01 does not fit decimal(5, 2).
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "total", Type: iceberg.DecimalTypeOf(5, 2)},
	)
	ident := table.Identifier{"ns", "decsum"}
	agg, err := Create(ctx, cat, ident, sc, CreateOptions{PrimaryKey: []string{"id"}, Buckets: 1,
		MergeEngine: EngineAggregation, Aggregates: map[string]string{"total": "sum"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	aw, _ := agg.NewWriter(ctx)
	if err := aw.Upsert(map[string]any{"id": 1, "total": "999.99"}); err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := aw.Upsert(map[string]any{"id": 1, "total": "0.01"}); err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Commit(ctx); err == nil || !strings.Contains(err.Error(), "merge a write of key id=1: column total: sum 999.99 + 0.01 overflows decimal(5, 2)") {
		t.Fatalf("commit of an overflowing sum: %v", err)
	}
	if got := scanRows(t, cat, ident); fmt.Sprint(got) != "map[1:1|999.99]" {
		t.Fatalf("after the failed commit: %v", got)
	}
}

// The aggregation engine sums decimals exactly (0.1 + 0.2 is 0.3) and
// takes their min and max by value, across commits and a compaction, as
// math/big computes them and an iceberg-go scan and Get read them.
func TestLsmDecimalAggregation(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "total", Type: iceberg.DecimalTypeOf(18, 2)},
		iceberg.NestedField{ID: 3, Name: "lo", Type: iceberg.DecimalTypeOf(38, 10)},
		iceberg.NestedField{ID: 4, Name: "hi", Type: iceberg.DecimalTypeOf(20, 4)},
		iceberg.NestedField{ID: 5, Name: "last", Type: iceberg.DecimalTypeOf(9, 2)},
	)
	ident := table.Identifier{"ns", "decagg"}
	tb, err := Create(ctx, cat, ident, sc, CreateOptions{PrimaryKey: []string{"id"}, Buckets: 2, MergeEngine: EngineAggregation,
		Aggregates: map[string]string{"total": "sum", "lo": "min", "hi": "max"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type acc struct{ total, lo, hi, last *big.Int }
	model := map[int64]*acc{}
	r := rand.New(rand.NewPCG(13, 14))
	fold := func(cur, in *big.Int, f func(a, b *big.Int) *big.Int) *big.Int {
		switch {
		case in == nil:
			return cur
		case cur == nil:
			return in
		}
		return f(cur, in)
	}
	minB := func(a, b *big.Int) *big.Int {
		if b.Cmp(a) < 0 {
			return b
		}
		return a
	}
	maxB := func(a, b *big.Int) *big.Int {
		if b.Cmp(a) > 0 {
			return b
		}
		return a
	}
	val := func(p int32) *big.Int {
		if r.IntN(6) == 0 {
			return nil
		}
		return randUnscaled(r, p)
	}
	w, _ := tb.NewWriter(ctx)
	// 0.1 + 0.2 on key 0, in two commits.
	for _, s := range []string{"0.1", "0.2"} {
		if err := w.Upsert(map[string]any{"id": 0, "total": s}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	model[0] = &acc{total: big.NewInt(30)}
	for round := range 4 {
		for range 150 {
			id := r.Int64N(40) + 1
			// Sums of 15 digits: 150 writes cannot overflow 18 digits.
			in := acc{total: val(15), lo: val(38), hi: val(20), last: val(9)}
			m := map[string]any{"id": id}
			for name, v := range map[string]*big.Int{"total": in.total, "lo": in.lo, "hi": in.hi, "last": in.last} {
				if v != nil {
					m[name] = decText(v, map[string]int32{"total": 2, "lo": 10, "hi": 4, "last": 2}[name])
				}
			}
			if err := w.Upsert(m); err != nil {
				t.Fatal(err)
			}
			a := model[id]
			if a == nil {
				a = &acc{}
				model[id] = a
			}
			a.total = fold(a.total, in.total, func(x, y *big.Int) *big.Int { return new(big.Int).Add(x, y) })
			a.lo, a.hi = fold(a.lo, in.lo, minB), fold(a.hi, in.hi, maxB)
			a.last = fold(a.last, in.last, func(_, y *big.Int) *big.Int { return y })
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if round == 2 {
			if _, err := tb.Compact(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	text := func(v *big.Int, scale int32) string {
		if v == nil {
			return "null"
		}
		return decText(v, scale)
	}
	want := map[string]string{}
	for id, a := range model {
		want[fmt.Sprint(id)] = fmt.Sprintf("%d|%s|%s|%s|%s", id, text(a.total, 2), text(a.lo, 10), text(a.hi, 4), text(a.last, 2))
	}
	if want["0"] != "0|0.30|null|null|null" {
		t.Fatalf("model of key 0: %s", want["0"])
	}
	if d := diffMaps(scanRows(t, cat, ident), want); d != "" {
		t.Fatalf("scan differs from the model:\n%s", d)
	}
	for id := range model {
		row, ok, err := tb.Get(ctx, map[string]any{"id": id})
		if err != nil || !ok {
			t.Fatalf("get %d: %v %v", id, ok, err)
		}
		got := fmt.Sprintf("%d|%s|%s|%s|%s", id, renderValue(row["total"]), renderValue(row["lo"]), renderValue(row["hi"]), renderValue(row["last"]))
		if got != want[fmt.Sprint(id)] {
			t.Fatalf("get %d: %s, want %s", id, got, want[fmt.Sprint(id)])
		}
	}
}
