package maintain

import (
	"fmt"
	"strings"
	"time"
)

// Report says what one pass did (or, in a dry run, would do).
type Report struct {
	Table  string
	DryRun bool

	// PropertiesSet are the table properties the pass added (the metadata
	// file cap on a table that lacked it).
	PropertiesSet map[string]string

	Compaction CompactionReport
	Manifests  ManifestReport
	Expiry     ExpiryReport
	Orphans    OrphanReport

	// MetadataFiles is the number of metadata files the table's log
	// references after the pass (current one included).
	MetadataFiles int
	// LostCommits are metadata files of commits that lost their race in
	// the catalog, removed at every pass without waiting for the orphan
	// grace period (or found, in a dry run).
	LostCommits int
}

// CompactionReport is the small-file compaction step.
type CompactionReport struct {
	// Skipped says why nothing was compacted ("" when it ran).
	Skipped            string
	DataFilesBefore    int
	DeleteFilesBefore  int
	DataFilesRewritten int
	DataFilesAdded     int
	DeleteFilesRemoved int
	// Rewrites counts the rewrites of the rows: more than one when a
	// writer changed the compacted files' rows before the commit.
	Rewrites   int
	SnapshotID int64
	Took       time.Duration
}

// ManifestReport is the manifest merging step.
type ManifestReport struct {
	Before     int // manifests in the current snapshot's list before
	After      int
	SnapshotID int64
	// Skipped says why no merge was committed although one was due.
	Skipped string
	Took    time.Duration
}

// ExpiryReport is the snapshot expiry step.
type ExpiryReport struct {
	SnapshotsBefore int
	Expired         int
	// MaxAge and MinSnapshots are the retention applied, pins included.
	MaxAge       time.Duration
	MinSnapshots int
	Pin          PinReport
	// Logged is how many expired snapshots the table's pinned log holds
	// for consumers after this expiry.
	Logged int
	// FilesRemoved counts manifest lists, manifests and data/delete files
	// that only expired snapshots referenced.
	FilesRemoved int
	// Took is the step's wall time, hooks and retried commits included.
	Took time.Duration
}

// PinReport says what consumers pinned.
type PinReport struct {
	Topic string
	// Pinned is true when a committed group offset needs a snapshot older
	// than the table's own retention.
	Pinned         bool
	OldestNeededMs int64
	// CappedBy names the property that cut the pin, when it reached back
	// further than lakegw.consumer.max-pin or held more snapshots than
	// lakegw.consumer.max-pin-snapshots ("" when neither).
	CappedBy string
	// HeldBy says what keeps the pinned history: the table's snapshots, or
	// (LSM tables) the changelog past its retention.
	HeldBy string
}

// Capped is true when a property cut the pin.
func (p PinReport) Capped() bool { return p.CappedBy != "" }

// What holds a pin (PinReport.HeldBy).
const (
	HeldBySnapshots = "snapshots"
	HeldByChangelog = "changelog"
	// HeldByPinnedLog: expired snapshots listed in the table's pinned
	// log (changelog.PinnedLog), their files kept.
	HeldByPinnedLog = "pinned log"
)

// OrphanReport is the orphan cleanup step.
type OrphanReport struct {
	Grace   time.Duration
	Found   int
	Removed int
	// Kept are unreferenced files kept because lakegw's LSM changelog
	// needs them (Retention.KeepFiles, or the LSM default).
	Kept int
	Took time.Duration
}

// String renders the report for a person.
func (r Report) String() string {
	var b strings.Builder
	verb := ""
	if r.DryRun {
		verb = " (dry run: nothing committed or deleted)"
	}
	fmt.Fprintf(&b, "maintenance of %s%s\n", r.Table, verb)
	for k, v := range r.PropertiesSet {
		fmt.Fprintf(&b, "  property set:        %s=%s\n", k, v)
	}
	c := r.Compaction
	if c.Skipped != "" {
		fmt.Fprintf(&b, "  compaction:          skipped (%s)\n", c.Skipped)
	} else {
		fmt.Fprintf(&b, "  compaction:          %d data files rewritten into %d, %d delete files removed (of %d data, %d delete files)\n",
			c.DataFilesRewritten, c.DataFilesAdded, c.DeleteFilesRemoved, c.DataFilesBefore, c.DeleteFilesBefore)
	}
	if r.Manifests.Skipped != "" {
		fmt.Fprintf(&b, "  manifests:           %d, merge skipped (%s)\n", r.Manifests.Before, r.Manifests.Skipped)
	} else {
		fmt.Fprintf(&b, "  manifests:           %d -> %d in the current snapshot\n", r.Manifests.Before, r.Manifests.After)
	}
	e := r.Expiry
	fmt.Fprintf(&b, "  snapshots expired:   %d of %d (keep %s and at least %d)\n", e.Expired, e.SnapshotsBefore, e.MaxAge, e.MinSnapshots)
	if e.Logged > 0 {
		fmt.Fprintf(&b, "  pinned log:          %d expired snapshots kept for consumers\n", e.Logged)
	}
	fmt.Fprintf(&b, "  files removed:       %d (referenced only by expired snapshots)\n", e.FilesRemoved)
	switch {
	case e.Pin.Pinned && e.Pin.Capped():
		fmt.Fprintf(&b, "  pins:                topic %s needs history from %s; capped by %s, kept by the %s\n", e.Pin.Topic, msTime(e.Pin.OldestNeededMs), e.Pin.CappedBy, e.Pin.HeldBy)
	case e.Pin.Pinned:
		fmt.Fprintf(&b, "  pins:                topic %s needs history from %s; kept by the %s\n", e.Pin.Topic, msTime(e.Pin.OldestNeededMs), e.Pin.HeldBy)
	default:
		fmt.Fprintf(&b, "  pins:                none beyond the table's retention\n")
	}
	o := r.Orphans
	if o.Grace == 0 {
		fmt.Fprintf(&b, "  orphans:             not looked for in this pass\n")
	} else {
		fmt.Fprintf(&b, "  orphans:             %d found older than %s, %d removed, %d kept for the LSM changelog\n", o.Found, o.Grace, o.Removed, o.Kept)
	}
	if r.LostCommits > 0 {
		fmt.Fprintf(&b, "  lost commits:        %d metadata files no commit can reach, removed\n", r.LostCommits)
	}
	fmt.Fprintf(&b, "  metadata files:      %d\n", r.MetadataFiles)
	return b.String()
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
