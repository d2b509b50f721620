package maintain

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// Table properties the pass reads. The history.expire.* ones are Iceberg's
// own (table.MaxSnapshotAgeMsKey, table.MinSnapshotsToKeepKey); the lakegw.*
// ones are lakegw's, so every gateway maintaining a table agrees.
const (
	// PropOrphanOlderThan is the grace period of orphan cleanup, in ms.
	PropOrphanOlderThan = "lakegw.orphan-files.older-than-ms"
)

// Defaults when the table does not set the property. Snapshot retention
// follows Apache Paimon's snapshot.time-retained (1 h) and
// snapshot.num-retained.min (10): a streaming table keeps an hour of
// history, never fewer than ten snapshots.
const (
	DefaultMaxSnapshotAge = time.Hour
	DefaultMinSnapshots   = 10
	DefaultMaxPin         = time.Duration(changelog.DefaultMaxPinMs) * time.Millisecond
	DefaultOrphanGrace    = 24 * time.Hour
	// MinOrphanGrace is the floor of the grace period: a writer's files
	// exist before the commit that references them, and a commit in flight
	// must never lose them.
	MinOrphanGrace = 10 * time.Minute
	// DefaultPreviousVersionsMax is the number of old metadata files kept
	// (write.metadata.previous-versions-max) on tables the pass caps.
	DefaultPreviousVersionsMax = 10
	// DefaultMaxManifests is the manifest count of the current snapshot
	// above which its data manifests are merged.
	DefaultMaxManifests = 16
	// DefaultCompactDataFiles and DefaultCompactDeleteFiles trigger a
	// small-file compaction of a merge-on-read table.
	DefaultCompactDataFiles   = 32
	DefaultCompactDeleteFiles = 32
	// DefaultMaxCompactFiles bounds the data files of one rewrite: a
	// table that fell behind is compacted over several passes.
	DefaultMaxCompactFiles = 128
	// DefaultCommitAttempts bounds the reload-and-retry loop of each
	// commit of the pass.
	DefaultCommitAttempts = 8
)

// PinFunc says the commit time (ms) of the oldest snapshot a committed group
// offset of the topic still needs; ok is false when nothing is pinned.
type PinFunc func(ctx context.Context, topic string) (oldestNeededMs int64, ok bool)

// Retention lets lakegw's LSM tables keep their changelog files past
// snapshot expiry. Run calls it at four points of the pass.
type Retention interface {
	// BeforeExpire runs once per pass, before the expiry is staged, on the
	// table as loaded; it may commit metadata of its own (tags that keep
	// snapshots), which the expiry then sees. holdFromMs (0: none) is the
	// commit time of the oldest change a consumer's committed offset still
	// needs, already capped by lakegw.consumer.max-pin: the changelog keeps
	// it even past its retention, so that the table's snapshots need not.
	BeforeExpire(ctx context.Context, tbl *table.Table, now time.Time, holdFromMs int64) error
	// AfterExpire sees, in the same transaction, the snapshots about to be expired, oldest first.
	AfterExpire(ctx context.Context, tbl *table.Table, tx *table.Transaction, expired []table.Snapshot) error
	// KeepFiles lists files outside Iceberg metadata that orphan cleanup must keep.
	KeepFiles(ctx context.Context, tbl *table.Table) (map[string]bool, error)
	// Committed runs after a successful commit (e.g. delete changelog files past retention).
	Committed(ctx context.Context, committed *table.Table) error
}

// Options tunes one pass. The zero value is a real pass with the defaults.
type Options struct {
	Log zerolog.Logger
	// DryRun plans every step and reports it, and commits or deletes
	// nothing.
	DryRun bool
	// Topic is the topic name given to Pin; default the dotted table name.
	Topic string
	// Pin reports what consumers still need (nil: no pins).
	Pin PinFunc
	// Retention is the LSM changelog hook (nil for other tables; an LSM
	// table without one keeps every changelog file).
	Retention Retention
	// SkipOrphans leaves orphan cleanup out of the pass. It lists the
	// whole table location and reads every manifest of every snapshot, so
	// a background loop runs it less often than the rest.
	SkipOrphans bool
	// OrphanGrace overrides PropOrphanOlderThan; it is never below
	// MinOrphanGrace.
	OrphanGrace time.Duration
	// MaxManifests, CompactDataFiles, CompactDeleteFiles and
	// CommitAttempts override the defaults of the same names; 0 keeps
	// them. A negative CompactDataFiles turns compaction off.
	MaxManifests       int
	CompactDataFiles   int
	CompactDeleteFiles int
	// MaxCompactFiles overrides DefaultMaxCompactFiles; below 1 it is 1.
	// A raw topic's table has bounds of its own (rawRunFiles).
	MaxCompactFiles int
	CommitAttempts  int
	// Manifests remembers the manifest lists and manifests read by earlier
	// passes (nil: this pass reads every one it needs). A background loop
	// passes the same cache to every pass.
	Manifests *ManifestCache
	// Removals, when set, holds the files the expiry finds unreferenced
	// for its grace before they are removed (nil: at once), as a raw
	// topic's writer does with those of its commits: a raw topic keeps
	// snapshots 30 seconds, and an engine's scan planned on one just
	// expired must still find its files. A background loop passes the
	// same one to every pass of a table; the files due are removed by the
	// next pass.
	Removals *DeferredRemovals
	// HoldWriters, when set, runs fn while this gateway's own writer of the
	// table holds its commits (produce.Service.HoldCommits): a raw topic's
	// writer commits up to twenty times a second, and a compaction's swap, staged on
	// the newest head, takes longer than that to stage.
	HoldWriters func(ctx context.Context, fn func() error) error
	// BeforeCompactionCommit, when set, runs between a compaction's
	// rewrite and its commit: tests race another writer against that
	// commit with it.
	BeforeCompactionCommit func(context.Context)
}

func (o Options) withDefaults(ident table.Identifier) Options {
	if o.Topic == "" {
		o.Topic = dotted(ident)
	}
	setDefault(&o.MaxManifests, DefaultMaxManifests)
	setDefault(&o.CompactDataFiles, DefaultCompactDataFiles)
	setDefault(&o.CompactDeleteFiles, DefaultCompactDeleteFiles)
	setDefault(&o.MaxCompactFiles, DefaultMaxCompactFiles)
	setDefault(&o.CommitAttempts, DefaultCommitAttempts)
	if o.Manifests == nil {
		// Within one pass the dry run and the real listing, and the
		// snapshots sharing a manifest, still read each file once.
		o.Manifests = NewManifestCache(DefaultManifestCacheBytes)
	}
	return o
}

func setDefault(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

// retention is the snapshot retention a table asks for.
type retention struct {
	maxAge       time.Duration
	minSnapshots int
	maxPin       time.Duration
	// maxPinSnapshots bounds the snapshots a pin holding snapshots keeps.
	maxPinSnapshots int
	orphanGrace     time.Duration
}

// retentionOf reads the retention a table's properties ask for. A value
// that is not a whole number in range fails the pass with the property's
// name, as topics refuse it (changelog.ParseRetention) and as Iceberg's own
// maintenance refuses a malformed history.expire.* value: falling back to
// a default would expire history the table's owner meant to keep.
func retentionOf(props iceberg.Properties, opts Options) (retention, error) {
	pins, err := changelog.ParseRetention(props, changelog.DefaultRetention())
	if err != nil {
		return retention{}, err
	}
	r := retention{
		maxPin:          time.Duration(pins.MaxPinMs) * time.Millisecond,
		maxPinSnapshots: int(pins.MaxPinSnapshots),
	}
	maxAgeMs, err := nonNegativeProp(props, table.MaxSnapshotAgeMsKey, DefaultMaxSnapshotAge.Milliseconds())
	if err != nil {
		return retention{}, err
	}
	minSnapshots, err := nonNegativeProp(props, table.MinSnapshotsToKeepKey, DefaultMinSnapshots)
	if err != nil {
		return retention{}, err
	}
	graceMs, err := nonNegativeProp(props, PropOrphanOlderThan, DefaultOrphanGrace.Milliseconds())
	if err != nil {
		return retention{}, err
	}
	r.maxAge = time.Duration(maxAgeMs) * time.Millisecond
	r.minSnapshots = int(min(minSnapshots, math.MaxInt32))
	r.orphanGrace = time.Duration(graceMs) * time.Millisecond
	if opts.OrphanGrace > 0 {
		r.orphanGrace = opts.OrphanGrace
	}
	r.orphanGrace = max(r.orphanGrace, MinOrphanGrace)
	r.minSnapshots = max(r.minSnapshots, 1)
	if changelog.IsLSMTable(props) {
		// A manifest rewrite's replace snapshot records no offsets
		// (lakegw.lsm.changelog-ends); its parent must stay so that the
		// next commit finds them.
		r.minSnapshots = max(r.minSnapshots, 2)
	}
	return r, nil
}

// nonNegativeProp reads a whole-number property (def when absent).
func nonNegativeProp(props iceberg.Properties, key string, def int64) (int64, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("table property %s=%q: want a whole number >= 0", key, v)
	}
	return n, nil
}
