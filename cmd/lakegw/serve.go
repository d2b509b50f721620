package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/protocol"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/quickstart"
	"github.com/lakegw/lakegw/state"
	"github.com/lakegw/lakegw/topics"
	"github.com/lakegw/lakegw/txn"
)

// catalogPropFlag names the flag whose values may hold credentials: the
// debug listener's cmdline redacts them.
const catalogPropFlag = "catalog-prop"

// commonFlags are the flags of every command that opens the data directory
// and the catalog.
type commonFlags struct {
	dataDir      *string
	state        *string
	catalogProps listFlag
	logLevel     *string
	logFormat    *string
}

func addCommonFlags(fs *flag.FlagSet) *commonFlags {
	c := &commonFlags{
		dataDir:   fs.String("data-dir", "./lakegw-data", "directory of the embedded catalog, warehouse and state store"),
		logLevel:  fs.String("log-level", "info", "log level: debug, info, warn, error"),
		logFormat: fs.String("log-format", "console", "log format: console or json"),
		state: fs.String("state", "", "the gateway's state store (offset index, group offsets, transactions, registrations): "+
			"empty = SQLite in --data-dir; postgres://USER:PASSWORD@HOST:PORT/DB = a PostgreSQL database"),
	}
	fs.Var(&c.catalogProps, catalogPropFlag, "iceberg-go catalog property KEY=VALUE (repeatable; e.g. type=rest, uri=http://...); none = the embedded SQLite catalog")
	return c
}

func (c *commonFlags) props() (iceberg.Properties, error) {
	props := iceberg.Properties{}
	for _, kv := range c.catalogProps {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("catalog-prop %q: want KEY=VALUE", kv)
		}
		props[k] = v
	}
	return props, nil
}

// openState opens the state store --state names.
func (c *commonFlags) openState(ctx context.Context) (*state.Store, error) {
	switch s := *c.state; {
	case s == "":
		return state.Open(ctx, filepath.Join(*c.dataDir, "state.db"))
	case state.IsPostgresURL(s):
		return state.OpenPostgres(ctx, s)
	default:
		return nil, fmt.Errorf("--state %s: want a postgres:// URL, or nothing for the SQLite store in --data-dir", state.RedactURL(s))
	}
}

// secrets are the values the logs and the debug listener's cmdline must
// not show: the catalog's credentials and the state store's password.
func (c *commonFlags) secrets(props iceberg.Properties) scrubber {
	var extra []string
	if u, err := url.Parse(*c.state); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			extra = append(extra, pw)
		}
	}
	// The command line holds the password as typed: percent-encoded, maybe.
	if _, rest, ok := strings.Cut(*c.state, "://"); ok {
		authority, _, _ := strings.Cut(rest, "/")
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(authority[:at], ":"); ok && pw != "" {
				extra = append(extra, pw)
			}
		}
	}
	return newScrubber(props, extra...)
}

func cmdServe(ctx context.Context, args []string, demo bool) (err error) {
	name := "serve"
	if demo {
		name = "quickstart"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	common := addCommonFlags(fs)
	listen := fs.String("listen", "127.0.0.1:9092", "Kafka listener host:port")
	advertised := fs.String("advertised-listener", "", "host:port announced to clients (default: the listener address)")
	pollInterval := fs.Duration("poll-interval", 200*time.Millisecond, "how often tables are checked for new snapshots")
	listInterval := fs.Duration("list-interval", time.Second, "how often the catalog is listed for new tables")
	maxRequest := fs.Int("max-request-bytes", protocol.DefaultMaxRequestBytes, "largest request frame accepted; larger ones close the connection (Kafka's socket.request.max.bytes)")
	netLimits := addNetLimitFlags(fs)
	cacheBytes := fs.Int64("cache-bytes", 64<<20, "memory for the newest encoded record batches, shared by all consumers (older ones are read from --disk-cache-bytes through the page cache)")
	diskCacheBytes := fs.Int64("disk-cache-bytes", 10<<30, "local disk for encoded record batches beyond --cache-bytes, served from the OS page cache (0: off)")
	changesBytes := fs.Int64("changes-cache-bytes", 128<<20, "memory for derived snapshots being read (one larger snapshot may exceed it)")
	rowGroupBytes := fs.Int64("row-group-cache-bytes", topics.DefaultRowGroupCacheBytes, "memory for row groups of data files kept decoded for the before-images of position deletes, which the next snapshots of a merge-on-read table mostly delete from again (0 or less: off)")
	streamRecords := fs.Int64("stream-records", topics.DefaultIndexDeriveMaxRecords, "an append or compacted prefix of more records than this is counted from its manifests and read in chunks, never held whole (single-partition topics)")
	streamChunk := fs.Int64("stream-chunk-records", topics.DefaultStreamChunkRecords, "records per chunk of a streamed append or prefix, rounded up to whole batches; 0 or less: every snapshot is derived whole")
	cacheIdle := fs.Duration("cache-idle", time.Minute, "an encoded batch or derived snapshot no fetch read for this long leaves memory (--cache-bytes, --changes-cache-bytes; the disk tier still holds batches); 0: they stay until evicted by size")
	batchRecords := fs.Int("batch-records", topics.DefaultBatchRecords, "default records per record batch (the table property lakegw.batch-records overrides it, so every gateway of a table cuts the same batches)")
	readAhead := fs.Int("read-ahead-batches", 256, "batches encoded in the background past a consumer reading a cold range (0 or less: off)")
	format := fs.String("format", "debezium-json", "default record format: debezium-json, canal-json, upsert, json")
	compression := fs.String("compression", "none", "default batch compression: none, gzip, snappy, lz4, zstd")
	schemaMode := fs.String("schema-mode", topics.SchemaCurrent, "default schema of records: current (the table's current schema, projected by field id as Iceberg readers do) or as-written (each snapshot's own); the table property lakegw.schema-mode overrides it")
	partitions := fs.Int("partitions", 1, "default partitions per topic (records spread by key hash)")
	demoEvery := fs.Duration("demo-interval", time.Second, "quickstart only: how often the demo table commits")
	compactEvery := fs.Duration("compact-interval", 30*time.Second, "how often served lakegw LSM tables are compacted in the background (0: never)")
	maintainEvery := fs.Duration("maintain-interval", time.Minute, "how often served tables lakegw maintains (LSM tables, lakegw.maintenance.enabled=true) get a maintenance pass (0: never)")
	allowDelete := fs.Bool("allow-delete-topics", false, "let DeleteTopics drop the tables of raw and table topics (those lakegw writes); other tables are never dropped")
	commitInterval := fs.Duration("commit-interval", produce.DefaultCommitInterval, "produced records: the least time between two commits of a table, so that concurrent producers share one Iceberg commit (a produce is acknowledged once its commit succeeds)")
	txnMaxTimeout := fs.Duration("transaction-max-timeout", txn.DefaultMaxTimeout, "the longest transaction.timeout.ms a transactional producer may ask for (Kafka's transaction.max.timeout.ms; an hour, Flink's KafkaSink default); a transaction open longer is aborted")
	txnMaxBytes := fs.Int64("transaction-max-bytes", txn.DefaultMaxTransactionBytes, "the most one transaction may stage before it commits (its commit holds all of it in memory)")
	debugListen := fs.String("debug-listen", "", "host:port serving Go profiles at /debug/pprof/ (default: off; a non-loopback address needs --debug-listen-public)")
	debugPublic := fs.Bool("debug-listen-public", false, "allow --debug-listen on an address other hosts can reach (profiles expose the process's internals)")
	offsetsRetention := addOffsetsRetentionFlag(fs)
	groupLimits := addGroupLimitFlags(fs)
	clusterOpts := addClusterFlags(fs)
	if err := parseConfig(fs, args); err != nil {
		return err
	}
	props, err := common.props()
	if err != nil {
		return err
	}
	if err := clusterOpts.check(common); err != nil {
		return err
	}
	secrets := common.secrets(props)
	// Whatever fails below may quote a credential (a catalog client's error).
	defer func() { err = secrets.err(err) }()
	log, err := newLogger(*common.logLevel, *common.logFormat, secrets)
	if err != nil {
		return err
	}
	if demo && len(props) > 0 {
		return errors.New("quickstart runs on the embedded default; use serve with --catalog-prop")
	}
	if *debugListen != "" {
		if err := checkDebugListen(*debugListen, *debugPublic); err != nil {
			return err
		}
	}
	if len(props) > 0 {
		log.Info().Interface("catalog_props", lake.RedactedProps(props)).Msg("catalog properties")
	}

	lock, err := lockDataDir(*common.dataDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lock.release()) }()
	store, err := common.openState(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if !*clusterOpts.shared {
		if err := store.LockForGateway(ctx); err != nil {
			return err
		}
	}
	cat, err := lake.OpenCatalog(ctx, *common.dataDir, props)
	if err != nil {
		return err
	}

	var demoWriter *quickstart.Demo
	if demo {
		demoWriter = quickstart.NewDemo(cat, log.With().Str("component", "demo").Logger(), quickstart.DemoOptions{Seed: uint64(time.Now().UnixNano())})
		if _, err := demoWriter.Ensure(ctx); err != nil {
			return fmt.Errorf("demo table: %w", err)
		}
		if _, err := demoWriter.Step(ctx); err != nil {
			return fmt.Errorf("demo table first commit: %w", err)
		}
	}

	// The maintainer's manifest cache (64 MiB at most) and the row group
	// cache (--row-group-cache-bytes) are part of the working set the
	// limit leaves over the memory caches: row groups cached for the next
	// snapshot's before-images are decoded rows a derivation would
	// otherwise hold while it reads them.
	caches := *cacheBytes + *changesBytes
	setMemoryLimit(caches, log)

	defaults := topics.TopicConfig{Format: *format, Compression: *compression, Partitions: int32(*partitions), BatchRecords: *batchRecords,
		SchemaMode: *schemaMode}
	if err := defaults.Validate(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	reg := topics.New(topics.Config{
		PollInterval: *pollInterval, ListInterval: *listInterval, Defaults: defaults, CatalogProps: props,
		ChangesCacheBytes: *changesBytes, ChangesCacheIdle: *cacheIdle, RowGroupCacheBytes: rowGroupCacheBytes(*rowGroupBytes),
		IndexDeriveMaxRecords: *streamRecords, StreamChunkRecords: streamChunkRecords(*streamChunk),
	}, cat, store, log.With().Str("component", "topics").Logger())
	reader, err := fetch.NewReader(fetch.Config{CacheBytes: *cacheBytes, CacheIdle: *cacheIdle,
		DiskCacheDir: filepath.Join(*common.dataDir, "batch-cache"), DiskCacheBytes: *diskCacheBytes,
		ReadAheadBatches: readAheadBatches(*readAhead)},
		log.With().Str("component", "fetch").Logger())
	if err != nil {
		return err
	}
	defer reader.Close()
	var txns *txn.Coordinator
	groupOpts := groups.Options{
		TopicExists: func(topic string, p int32) bool {
			t, ok := reg.Topic(topic)
			return ok && p >= 0 && p < t.Index.Partitions()
		},
		Topics:           protocol.GroupTopics(reg),
		OffsetsRetention: *offsetsRetention,
		// Set below, once the transaction coordinator exists: it needs
		// the group coordinator to commit its offsets.
		UnstableOffset: func(group, topic string, p int32) bool { return txns != nil && txns.UnstableOffset(group, topic, p) },
		UnstableGroup:  func(group string) bool { return txns != nil && txns.UnstableGroup(group) },
	}
	groupLimits.apply(&groupOpts)
	coord := groups.New(store, log, groupOpts)
	if err := coord.Open(ctx); err != nil {
		return err
	}
	defer coord.Close()
	committed := clusterOpts.committedSource(store, coord)
	srvCfg := protocol.Config{Listen: *listen, Advertised: *advertised, NodeID: int32(*clusterOpts.nodeID), MaxRequestBytes: int32(*maxRequest), AllowDeleteTopics: *allowDelete,
		Pins: consumerPinReport(reg, committed)}
	netLimits.apply(&srvCfg)
	srv := protocol.NewServer(srvCfg,
		reg, reader, coord, log.With().Str("component", "kafka").Logger())
	// Produced records: the writers commit until serve returns, after the
	// server has stopped taking requests.
	pctx, stopWriters := context.WithCancel(ctx)
	writes := produce.New(pctx, cat, produce.Config{CommitInterval: *commitInterval, OnCommit: reg.Kick, AwaitServed: reg.AwaitServed, DefaultFormat: *format,
		TransactionPending: func(marker string) bool { return txns != nil && txns.Pending(marker) },
		Log:                log.With().Str("component", "produce").Logger()})
	defer func() { stopWriters(); writes.Wait() }()
	srv.AcceptWrites(writes)
	// Transactions commit through the writers: the coordinator stops
	// first (deferred last), and a commit it leaves queued still lands.
	txns = txn.New(store, protocol.TxnTables(writes), protocol.TxnOffsets(coord), txn.Options{MaxTimeout: *txnMaxTimeout,
		MaxTransactionBytes: *txnMaxBytes, Log: log.With().Str("component", "txn").Logger()})
	if err := txns.Open(ctx); err != nil {
		return err
	}
	defer txns.Close()
	srv.AcceptTransactions(txns)
	if err := srv.Listen(); err != nil {
		return err
	}
	var tasks []task
	heartbeats, err := clusterOpts.join(ctx, srv, store, coord, writes, defaults, log.With().Str("component", "cluster").Logger())
	if err != nil {
		return err
	}
	if heartbeats != nil {
		tasks = append(tasks, *heartbeats)
	}
	if *compactEvery > 0 {
		tasks = append(tasks, task{name: "compactor", run: func(ctx context.Context) error {
			return runCompactor(ctx, cat, reg, *compactEvery, mine(srv), log.With().Str("component", "compactor").Logger())
		}})
	}
	if *maintainEvery > 0 {
		// Committed group offsets hold the snapshots they still need.
		pins := maintain.PinFunc(consumerPins(reg, committed))
		tasks = append(tasks, task{name: "maintainer", run: func(ctx context.Context) error {
			return runMaintainer(ctx, cat, reg, writes, *maintainEvery, pins, mine(srv), log.With().Str("component", "maintain").Logger())
		}})
	}
	if *debugListen != "" {
		tasks = append(tasks, task{name: "debug listener", run: func(ctx context.Context) error {
			return runDebugListener(ctx, *debugListen, redactCmdline(os.Args, secrets), log.With().Str("component", "debug").Logger())
		}})
	}
	return runAll(ctx, log, reg, srv, demoWriter, *demoEvery, tasks)
}

// task is one of serve's background jobs (the compactor, the maintainer,
// the debug listener, the membership heartbeats).
type task struct {
	name string
	run  func(context.Context) error
	// early: started with the registry, not once it is ready (the
	// membership heartbeats: a first indexing longer than the lease must
	// not make the others count this gateway dead).
	early bool
}

// runAll runs the registry, the server, the demo writer and the tasks
// until ctx ends or one of them fails, then stops the others and waits for
// them.
func runAll(parent context.Context, log zerolog.Logger, reg *topics.Registry, srv *protocol.Server, demo *quickstart.Demo, demoEvery time.Duration,
	tasks []task) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3+len(tasks))
	goRun := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	goRun("topics", reg.Run)
	for _, t := range tasks {
		if t.early {
			goRun(t.name, t.run)
		}
	}
	// Serve once the first listing is indexed: a client's first Metadata
	// then sees every table.
	select {
	case <-reg.Ready():
	case <-ctx.Done():
	}
	goRun("kafka server", srv.Serve)
	log.Info().Str("listen", srv.Addr().String()).Int("topics", len(reg.Topics())).Msg("lakegw is serving")
	if demo != nil {
		goRun("demo writer", func(ctx context.Context) error { return demo.Run(ctx, demoEvery) })
	}
	for _, t := range tasks {
		if !t.early {
			goRun(t.name, t.run)
		}
	}
	<-ctx.Done()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if len(all) == 0 {
		log.Info().Msg("lakegw stopped")
	}
	return errors.Join(all...)
}

// readAheadBatches maps the flag to fetch.Config's encoding, where 0 means
// the default and a negative count off.
func readAheadBatches(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// streamChunkRecords maps --stream-chunk-records onto topics.Config, where
// 0 means the default and a negative value none.
func streamChunkRecords(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// rowGroupCacheBytes maps the flag onto topics.Config, where 0 means the
// default: the flag's 0 means off.
func rowGroupCacheBytes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
