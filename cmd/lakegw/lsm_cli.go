package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
)

// The CLI of lakegw LSM (primary-key) tables: table create, load, compact,
// get. Each opens the catalog like `serve` does (embedded by default).

// lsmCommand parses "NAME.TABLE [more positional] [flags]" and opens the
// catalog; flags may follow the positional arguments.
type lsmCommand struct {
	fs     *flag.FlagSet
	common *commonFlags
	pos    []string
}

func newLsmCommand(name string) *lsmCommand {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	return &lsmCommand{fs: fs, common: addCommonFlags(fs)}
}

func (c *lsmCommand) parse(args []string, npos int, usage string) error {
	for len(args) > 0 && (len(args[0]) == 0 || args[0][0] != '-' || len(c.pos) < npos && isJSONish(args[0])) {
		c.pos, args = append(c.pos, args[0]), args[1:]
	}
	if err := parseConfig(c.fs, args); err != nil {
		return err
	}
	c.pos = append(c.pos, c.fs.Args()...)
	if len(c.pos) != npos {
		return fmt.Errorf("%s: want %s, got %d arguments", c.fs.Name(), usage, len(c.pos))
	}
	return nil
}

// isJSONish lets a negative key value ("-5") be a positional argument.
func isJSONish(s string) bool {
	return len(s) > 1 && s[0] == '-' && s[1] >= '0' && s[1] <= '9'
}

// cmdLsmCreate: lakegw table create NS.TABLE --schema '...' --primary-key id --buckets N ...
func cmdLsmCreate(ctx context.Context, args []string) error {
	c := newLsmCommand("table create")
	schema := c.fs.String("schema", "", "columns: 'id long, name string, ...' (boolean int long float double string binary date timestamp timestamptz; 'not null' allowed)")
	pk := c.fs.String("primary-key", "", "primary key columns, comma separated")
	buckets := c.fs.Int("buckets", 1, "buckets (= topic partitions)")
	engine := c.fs.String("merge-engine", lsm.EngineDeduplicate, "deduplicate, partial-update, aggregation or first-row")
	version := c.fs.Int("format-version", 2, "Iceberg format version: 2 (position delete files) or 3 (deletion vectors)")
	var aggs, groups listFlag
	c.fs.Var(&aggs, "agg", "COLUMN=FUNC for the aggregation engine: sum, min, max, count, last_non_null, first_non_null (repeatable)")
	c.fs.Var(&groups, "sequence-group", "SEQCOL=COL,COL for partial-update: those columns change only with a newer SEQCOL (repeatable)")
	if err := c.parse(args, 1, "NS.TABLE"); err != nil {
		return err
	}
	sc, err := lsm.ParseSchema(*schema)
	if err != nil {
		return err
	}
	co := lsm.CreateOptions{PrimaryKey: splitList(*pk), Buckets: *buckets, MergeEngine: *engine, FormatVersion: *version,
		Aggregates: map[string]string{}, SequenceGroups: map[string][]string{}}
	for _, a := range aggs {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("--agg %q: want COLUMN=FUNC", a)
		}
		co.Aggregates[k] = v
	}
	for _, g := range groups {
		k, v, ok := strings.Cut(g, "=")
		if !ok {
			return fmt.Errorf("--sequence-group %q: want SEQCOL=COL,COL", g)
		}
		co.SequenceGroups[k] = splitList(v)
	}
	ident, err := lake.ParseIdent(c.pos[0])
	if err != nil {
		return err
	}
	props, err := c.common.props()
	if err != nil {
		return err
	}
	cat, err := lake.OpenCatalog(ctx, *c.common.dataDir, props)
	if err != nil {
		return err
	}
	if err := cat.CreateNamespace(ctx, ident[:len(ident)-1], nil); err != nil && !strings.Contains(strings.ToLower(err.Error()), "exist") {
		return fmt.Errorf("create namespace: %w", err)
	}
	if _, err := lsm.Create(ctx, cat, ident, sc, co, lsm.Options{}); err != nil {
		return err
	}
	fmt.Printf("created %s: %d buckets, merge engine %s, primary key %s, format v%d\n", c.pos[0], *buckets, *engine, *pk, *version)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func openLsmTable(ctx context.Context, c *lsmCommand) (*lsm.Table, error) {
	ident, cat, log, err := openTableCatalog(ctx, c)
	if err != nil {
		return nil, err
	}
	return lsm.Open(ctx, cat, ident, lsm.Options{Log: log})
}

// openTableCatalog parses the command's NS.TABLE argument and opens the
// catalog and the logger its flags name.
func openTableCatalog(ctx context.Context, c *lsmCommand) (table.Identifier, catalog.Catalog, zerolog.Logger, error) {
	ident, err := lake.ParseIdent(c.pos[0])
	if err != nil {
		return nil, nil, zerolog.Logger{}, err
	}
	props, err := c.common.props()
	if err != nil {
		return nil, nil, zerolog.Logger{}, err
	}
	log, err := newLogger(*c.common.logLevel, *c.common.logFormat, c.common.secrets(props))
	if err != nil {
		return nil, nil, zerolog.Logger{}, err
	}
	cat, err := lake.OpenCatalog(ctx, *c.common.dataDir, props)
	if err != nil {
		return nil, nil, zerolog.Logger{}, err
	}
	return ident, cat, log, nil
}

// cmdLsmLoad: lakegw load NS.TABLE FILE.jsonl|FILE.csv [--commit-rows N]
// A row with "_op" = "delete" (or "-D") deletes its key.
func cmdLsmLoad(ctx context.Context, args []string) error {
	c := newLsmCommand("load")
	commitRows := c.fs.Int("commit-rows", 100000, "commit every N rows (bounds the writer's memory)")
	compact := c.fs.Bool("compact", true, "run universal compaction after each commit when a bucket needs it")
	if err := c.parse(args, 2, "NS.TABLE FILE.jsonl|FILE.csv"); err != nil {
		return err
	}
	tb, err := openLsmTable(ctx, c)
	if err != nil {
		return err
	}
	f, err := os.Open(c.pos[1])
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := tb.NewWriter(ctx)
	if err != nil {
		return err
	}
	var rows, snaps, events int64
	flush := func() error {
		res, err := w.Commit(ctx)
		if err != nil {
			return err
		}
		if res.SnapshotID != 0 {
			snaps++
			for _, n := range res.Counts {
				events += n
			}
		}
		if *compact {
			if _, err := tb.Compact(ctx, false); err != nil {
				return err
			}
		}
		return nil
	}
	add := func(row map[string]any) error {
		rows++
		op, _ := row["_op"].(string)
		delete(row, "_op")
		var err error
		if op == "delete" || op == "-D" || op == "d" {
			err = w.Delete(row)
		} else {
			err = w.Upsert(row)
		}
		if err != nil {
			return fmt.Errorf("%s row %d: %w", c.pos[1], rows, err)
		}
		if w.Pending() >= *commitRows {
			return flush()
		}
		return nil
	}
	if strings.HasSuffix(strings.ToLower(c.pos[1]), ".csv") {
		err = readCSV(f, add)
	} else {
		err = readJSONLines(f, add)
	}
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Printf("loaded %d rows into %s: %d snapshots, %d change events\n", rows, c.pos[0], snaps, events)
	return nil
}

func readJSONLines(r io.Reader, add func(map[string]any) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := add(row); err != nil {
			return err
		}
	}
	return sc.Err()
}

// readCSV reads a header line of column names, then rows; an empty field
// is null.
func readCSV(r io.Reader, add func(map[string]any) error) error {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("csv header: %w", err)
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		row := map[string]any{}
		for i, v := range rec {
			if i < len(header) && v != "" {
				row[header[i]] = v
			}
		}
		if err := add(row); err != nil {
			return err
		}
	}
}

// cmdLsmCompact: lakegw compact NS.TABLE [--full=false]
func cmdLsmCompact(ctx context.Context, args []string) error {
	c := newLsmCommand("compact")
	full := c.fs.Bool("full", true, "merge every sorted run of every bucket (false: only what universal compaction picks)")
	if err := c.parse(args, 1, "NS.TABLE"); err != nil {
		return err
	}
	tb, err := openLsmTable(ctx, c)
	if err != nil {
		return err
	}
	res, err := tb.Compact(ctx, *full)
	if err != nil {
		return err
	}
	if res.SnapshotID == 0 {
		fmt.Printf("%s: nothing to compact\n", c.pos[0])
		return nil
	}
	fmt.Printf("%s: compacted %d buckets, %d files (%d bytes) into %d files (%d bytes), %d delete files dropped; snapshot %d\n",
		c.pos[0], res.Buckets, res.FilesIn, res.BytesIn, res.FilesOut, res.BytesOut, res.DeleteFilesDropped, res.SnapshotID)
	return nil
}

// cmdLsmGet: lakegw get NS.TABLE KEY, KEY a JSON object of the key columns
// or, for a one-column key, its value.
func cmdLsmGet(ctx context.Context, args []string) error {
	c := newLsmCommand("get")
	if err := c.parse(args, 2, "NS.TABLE KEY"); err != nil {
		return err
	}
	tb, err := openLsmTable(ctx, c)
	if err != nil {
		return err
	}
	key, err := tb.ParseKey(c.pos[1])
	if err != nil {
		return err
	}
	row, ok, err := tb.Get(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: no row with key %s", c.pos[0], c.pos[1])
	}
	out, err := json.Marshal(row)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
