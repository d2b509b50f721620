package lsm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// checkpointMaxRefAge is the max-ref-age-ms of checkpoint tags: a century.
const checkpointMaxRefAge = 100 * 365 * 24 * time.Hour

// checkpointsPerRetention is how many checkpoints one retention period
// holds: the log start moves in steps of a quarter of the retention, so a
// topic keeps between 1 and 1.25 times retention.ms of changes (Kafka
// likewise deletes whole segments only).
const checkpointsPerRetention = 4

// Retention keeps an LSM table's changes past snapshot expiry for the
// topic's retention (see changelog.LSMLog). A maintenance pass calls
// BeforeExpire, then AfterExpire on the expiring transaction, then
// Committed once that transaction committed; orphan cleanup asks
// KeepFiles. One Retention serves one pass of one table.
type Retention struct {
	cat catalog.Catalog
	log zerolog.Logger
	// pending are the files to delete once the expiry committed: the
	// changelog of snapshots that left both the table and the log.
	pending []string
}

// NewRetention returns the retention of one maintenance pass.
func NewRetention(cat catalog.Catalog, log zerolog.Logger) *Retention {
	return &Retention{cat: cat, log: log}
}

type checkpoint struct {
	tag  string
	snap *table.Snapshot
}

// checkpoints returns the checkpoint tags of a table, oldest snapshot first.
func checkpoints(meta table.Metadata) []checkpoint {
	var out []checkpoint
	for name, ref := range meta.Refs() {
		if ref.SnapshotRefType != table.TagRef || !changelog.IsLSMCheckpointTag(name) {
			continue
		}
		if s := meta.SnapshotByID(ref.SnapshotID); s != nil {
			out = append(out, checkpoint{tag: name, snap: s})
		}
	}
	slices.SortFunc(out, func(a, b checkpoint) int { return cmp.Compare(a.snap.SequenceNumber, b.snap.SequenceNumber) })
	return out
}

// BeforeExpire moves the checkpoints (Checkpoint) before a maintenance pass
// stages its expiry on the table they leave.
func (r *Retention) BeforeExpire(ctx context.Context, tbl *table.Table, now time.Time, holdFromMs int64) error {
	_, err := r.Checkpoint(ctx, tbl, now, holdFromMs)
	return err
}

// Checkpoint tags the head as a new checkpoint when the newest is a
// quarter of the retention old (or there is none), and drops the oldest
// checkpoint once the next one is older than the retention: the changes
// between them are past retention.ms. A checkpoint a consumer's pin still
// needs (holdFromMs, 0: none) stays. It commits the tags on its own
// (iceberg-go transactions cannot stage refs) and returns the table as
// committed, on which the caller expires snapshots.
func (r *Retention) Checkpoint(ctx context.Context, tbl *table.Table, now time.Time, holdFromMs int64) (*table.Table, error) {
	if !changelog.IsLSMTable(tbl.Properties()) {
		return tbl, nil
	}
	ret, err := changelog.ParseRetention(tbl.Properties(), changelog.DefaultRetention())
	if err != nil {
		return nil, err
	}
	// Unbounded retention (-1) still checkpoints, a week apart, and
	// never drops one.
	bounded := ret.Ms > 0
	keep := ret.MsDuration()
	if !bounded {
		keep = changelog.DefaultRetention().MsDuration()
	}
	meta := tbl.Metadata()
	head := meta.CurrentSnapshot()
	if head == nil {
		return tbl, nil
	}
	cps := checkpoints(meta)
	var updates []table.Update
	every := (keep / checkpointsPerRetention).Milliseconds()
	if n := len(cps); n == 0 || cps[n-1].snap.SnapshotID != head.SnapshotID && head.TimestampMs-cps[n-1].snap.TimestampMs >= every {
		name := changelog.LSMCheckpointTagPrefix + strconv.FormatInt(head.SnapshotID, 10)
		// A tag's own max age outlives any history.expire.max-ref-age-ms a
		// user sets: only this retention removes a checkpoint.
		updates = append(updates, table.NewSetSnapshotRefUpdate(name, head.SnapshotID, table.TagRef, checkpointMaxRefAge.Milliseconds(), 0, 0))
	}
	log, err := r.currentLog(ctx, tbl)
	if err != nil {
		return nil, err
	}
	if !bounded {
		ret.Ms = -1
	}
	for _, c := range expiredCheckpoints(cps, log, ret, now, holdFromMs) {
		updates = append(updates, table.NewRemoveSnapshotRefUpdate(c.tag))
	}
	if len(updates) == 0 {
		return tbl, nil
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	if _, _, err := r.cat.CommitTable(ctx, tbl.Identifier(), reqs, updates); err != nil {
		return nil, fmt.Errorf("commit changelog checkpoints of %s: %w", lakeName(tbl), err)
	}
	r.log.Debug().Str("table", lakeName(tbl)).Int("ref_updates", len(updates)).Msg("changelog checkpoints moved")
	fresh, err := r.cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		return nil, fmt.Errorf("reload %s after its checkpoints: %w", lakeName(tbl), err)
	}
	return fresh, nil
}

// currentLog reads the head of the changelog log the table names (an
// empty log if none); its segments load as needed.
func (r *Retention) currentLog(ctx context.Context, tbl *table.Table) (*changelog.LSMLog, error) {
	path := tbl.Properties()[changelog.PropLSMChangelogLog]
	if path == "" {
		return &changelog.LSMLog{}, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	return changelog.ReadLSMLogHead(fsys, path)
}

// expiredCheckpoints returns the oldest checkpoints the topic no longer
// needs: while the next one is older than retention.ms, or the changelog
// kept past expiry after the next one alone reaches retention.bytes, and
// the next one is no newer than what a pin holds (holdFromMs, 0: none).
func expiredCheckpoints(cps []checkpoint, log *changelog.LSMLog, ret changelog.Retention, now time.Time, holdFromMs int64) []checkpoint {
	cutoff := now.Add(-ret.MsDuration()).UnixMilli()
	n := 0
	for len(cps)-n >= 2 {
		next := cps[n+1].snap
		if !(ret.Ms > 0 && next.TimestampMs <= cutoff || ret.Bytes > 0 && loggedBytesAfter(log, next) >= ret.Bytes) {
			break
		}
		if holdFromMs > 0 && next.TimestampMs > holdFromMs {
			break // the changes between the two are pinned
		}
		n++
	}
	return cps[:n]
}

// loggedBytesAfter is the size of the changelog kept past expiry after
// snapshot s: what retention.bytes bounds once the checkpoint before s goes
// (like Kafka's, it counts whole segments: a checkpoint's span at a time).
func loggedBytesAfter(log *changelog.LSMLog, s *table.Snapshot) int64 {
	return log.BytesAfter(s.SequenceNumber)
}

// AfterExpire rewrites the changelog log in tx, which expires the snapshots
// in expired: the log is the chain of snapshots from the oldest
// checkpoint up to the main branch's oldest retained snapshot, drawn from
// the old log, the expiring snapshots and the retained ones. Only the
// log's head is rewritten: the old log's segments are loaded when the
// checkpoint moves past them, and full tails are sealed into new ones. The
// changelog of every expiring or logged snapshot that leaves the chain is
// deleted after the commit (Committed).
func (r *Retention) AfterExpire(ctx context.Context, tbl *table.Table, tx *table.Transaction, expired []table.Snapshot) error {
	props := tbl.Properties()
	if !changelog.IsLSMTable(props) {
		return nil
	}
	segEntries, err := changelog.ParseLSMLogSegmentEntries(props)
	if err != nil {
		return err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	oldPath := props[changelog.PropLSMChangelogLog]
	old, err := r.currentLog(ctx, tbl)
	if err != nil {
		return err
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return fmt.Errorf("staged expiry of %s: %w", lakeName(tbl), err)
	}
	sp, err := parseSpec(tbl.Schema(), props)
	if err != nil {
		return err
	}
	if old.Len() > 0 && old.Buckets != sp.buckets {
		return fmt.Errorf("changelog log of %s has %d buckets, the table %d", lakeName(tbl), old.Buckets, sp.buckets)
	}
	old.Buckets = sp.buckets
	walk, err := walkLog(staged.Metadata(), props, sp.buckets, old, expired, func(manifest string) (int64, error) {
		return changelogBytes(fsys, manifest)
	})
	if err != nil {
		return fmt.Errorf("changelog log of %s: %w", lakeName(tbl), err)
	}
	next, goneLogged, segFiles, broken, err := nextLog(fsys, old, walk)
	if err != nil {
		return fmt.Errorf("changelog log of %s: %w", lakeName(tbl), err)
	}
	kept := map[int64]bool{}
	if !broken {
		for _, e := range walk.entries {
			kept[e.SnapshotID] = true
		}
	}
	var gone []string
	for _, e := range goneLogged {
		if staged.Metadata().SnapshotByID(e.SnapshotID) == nil && e.Manifest != "" {
			gone = append(gone, e.Manifest)
		}
	}
	for i := range expired {
		s := &expired[i]
		if !kept[s.SnapshotID] && s.Summary != nil && s.Summary.Properties[changelog.SummaryLSMManifest] != "" {
			gone = append(gone, s.Summary.Properties[changelog.SummaryLSMManifest])
		}
	}
	dropped := segFiles
	for _, m := range gone {
		files, err := manifestFiles(fsys, m)
		if err != nil {
			return err
		}
		dropped = append(dropped, files...)
	}
	if broken && old.Len() > 0 {
		r.log.Warn().Str("table", lakeName(tbl)).Int("logged_snapshots", old.Len()).
			Msg("the table's history no longer leads from the oldest checkpoint to the main branch (a snapshot expired by another writer?): the changelog kept past expiry is dropped and the topic starts at the main branch")
	}
	// What left the topic at the previous expiry is deleted now, what
	// leaves it now at the next one: a gateway that located one of those
	// snapshots (or read the previous head's segments) just before has a
	// maintenance interval to read it.
	r.pending = slices.Clone(old.Dropped)
	next.Dropped = dropped
	if changelog.SameHead(old, next) && len(dropped) == 0 && len(old.Dropped) == 0 {
		return nil
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("file IO %T cannot write", fsys)
	}
	lay := newLayout(tbl.Location())
	sealed := 0
	for len(next.Tail) >= segEntries {
		path := lay.changelogLogSegment(next.Tail[segEntries-1].SequenceNumber)
		body, err := next.Seal(segEntries, path)
		if err != nil {
			return err
		}
		if err := wfs.WriteFile(path, body); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		sealed++
	}
	body, err := changelog.EncodeLSMLog(*next)
	if err != nil {
		return err
	}
	head := staged.Metadata().CurrentSnapshot()
	seq := int64(0)
	if head != nil {
		seq = head.SequenceNumber
	}
	path := lay.changelogLog(seq)
	if err := wfs.WriteFile(path, body); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tx.SetProperties(map[string]string{changelog.PropLSMChangelogLog: path}); err != nil {
		return fmt.Errorf("name the changelog log of %s: %w", lakeName(tbl), err)
	}
	if oldPath != "" {
		r.pending = append(r.pending, oldPath)
	}
	r.log.Debug().Str("table", lakeName(tbl)).Int("logged_snapshots", next.Len()).Int("segments", len(next.Segments)).
		Int("segments_sealed", sealed).Int("files_to_remove", len(r.pending)).Msg("changelog log rewritten")
	return nil
}

// logWalk is what an expiry adds to the changelog log.
type logWalk struct {
	// start is the oldest checkpoint, the snapshot the log starts after
	// (nil: the log is empty).
	start *table.Snapshot
	// entries are the snapshots newly logged, oldest first.
	entries []changelog.LSMLogEntry
	// joined: entries continue the old log, which keeps what is after
	// start; otherwise the old log is dropped whole.
	joined bool
	// broken: the history does not lead back to start; nothing is logged.
	broken bool
}

// walkLog walks back from the parent of the main branch's oldest retained
// snapshot through the retained and expiring snapshots until the oldest
// checkpoint or the old log's last entry. A chain that reaches neither
// logs nothing: without the checkpoint's live rows the logged changes
// could not rebuild the table. Only the old log's head is read.
func walkLog(meta table.Metadata, props map[string]string, buckets int, old *changelog.LSMLog, expired []table.Snapshot,
	sizeOf func(manifest string) (int64, error)) (logWalk, error) {
	cps := checkpoints(meta)
	if len(cps) == 0 {
		return logWalk{}, nil
	}
	start := cps[0].snap
	hist, err := changelog.MainHistory(meta)
	if err != nil || len(hist) == 0 {
		return logWalk{}, err
	}
	if slices.ContainsFunc(hist, func(r changelog.SnapshotRef) bool { return r.SnapshotID == start.SnapshotID }) {
		// The main branch still holds the oldest checkpoint: it keeps
		// more than the changelog retention does (a slow writer under
		// history.expire.min-snapshots-to-keep), and nothing needs to be
		// logged. The walk below would pass the checkpoint's ancestors by
		// and call the chain broken.
		return logWalk{}, nil
	}
	first := meta.SnapshotByID(hist[0].SnapshotID)
	if first == nil || first.ParentSnapshotID == nil {
		return logWalk{}, nil
	}
	known := map[int64]*table.Snapshot{}
	for i := range expired {
		known[expired[i].SnapshotID] = &expired[i]
	}
	oldLast, hasOld := old.LastID()
	w := logWalk{start: start}
	for cur := *first.ParentSnapshotID; cur != start.SnapshotID; {
		if hasOld && cur == oldLast {
			w.joined = true
			break
		}
		if len(w.entries) > len(known)+len(meta.Snapshots()) {
			return logWalk{}, fmt.Errorf("snapshot %d: ancestry loops", cur)
		}
		s := meta.SnapshotByID(cur)
		if s == nil {
			s = known[cur]
		}
		if s == nil {
			return logWalk{broken: true}, nil // the chain ends before the checkpoint
		}
		e, err := changelog.LogEntryOf(props, s, buckets)
		if err != nil {
			return logWalk{}, err
		}
		if e.Manifest != "" {
			if e.Bytes, err = sizeOf(e.Manifest); err != nil {
				return logWalk{}, err
			}
		}
		w.entries = append(w.entries, e)
		if e.ParentID < 0 {
			return logWalk{broken: true}, nil
		}
		cur = e.ParentID
	}
	slices.Reverse(w.entries)
	return w, nil
}

// nextLog is the old log after walk: cut to what follows the checkpoint
// and extended by the walked entries, or replaced by them. It returns the
// logged entries that left the log and the segment files dropped whole;
// broken reports a log that did not lead from the checkpoint after all,
// which is dropped.
func nextLog(fsys icebergio.IO, old *changelog.LSMLog, walk logWalk) (next *changelog.LSMLog, gone []changelog.LSMLogEntry, files []string, broken bool, err error) {
	next = old.Clone()
	next.Dropped = nil
	cut := int64(math.MaxInt64)
	if walk.joined {
		cut = walk.start.SequenceNumber
	}
	if gone, files, err = next.DropThrough(fsys, cut); err != nil {
		return nil, nil, nil, false, err
	}
	broken = walk.broken
	if walk.joined {
		if s, ok := next.StartID(); !ok || s != walk.start.SnapshotID {
			broken = true
		}
	}
	if broken {
		rest, restFiles, err := next.DropThrough(fsys, math.MaxInt64)
		if err != nil {
			return nil, nil, nil, false, err
		}
		return next, append(gone, rest...), append(files, restFiles...), true, nil
	}
	if err := next.Append(walk.entries); err != nil {
		return nil, nil, nil, false, err
	}
	return next, gone, files, false, nil
}

// manifestFiles returns a changelog manifest and the changelog files it
// lists; a manifest already gone lists nothing.
func manifestFiles(fsys icebergio.IO, path string) ([]string, error) {
	m, err := changelog.ReadLSMManifest(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := []string{path}
	for _, lf := range m.Files {
		out = append(out, lf.Path)
	}
	return out, nil
}

// changelogBytes is the size of a snapshot's changelog: its manifest and
// the changelog files it lists (0 for what is already gone).
func changelogBytes(fsys icebergio.IO, manifest string) (int64, error) {
	files, err := manifestFiles(fsys, manifest)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range files {
		f, err := fsys.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("open %s: %w", p, err)
		}
		st, err := f.Stat()
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("stat %s: %w", p, err)
		}
		n += st.Size()
	}
	return n, nil
}

// Committed deletes the changelog files that left the topic with the
// committed expiry. A file that cannot be deleted is logged and left to
// orphan cleanup: the commit already happened.
func (r *Retention) Committed(ctx context.Context, committed *table.Table) error {
	if len(r.pending) == 0 {
		return nil
	}
	fsys, err := committed.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	removed := 0
	for _, p := range r.pending {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn().Err(err).Str("file", p).Msg("cannot remove an expired changelog file; orphan cleanup will")
			continue
		}
		removed++
	}
	r.log.Debug().Str("table", lakeName(committed)).Int("removed", removed).Msg("expired changelog files removed")
	r.pending = nil
	return nil
}

// changelogSeqRE finds the sequence number in the name of a changelog
// file, a changelog manifest or a changelog log (layout.go).
var changelogSeqRE = regexp.MustCompile(`/(?:changelog/bucket-\d+/|metadata/lsm-changelog-(?:log-)?)(\d{12})-[^/]+$`)

// KeepFiles lists the files outside Iceberg's metadata that orphan cleanup
// must keep: every changelog file, manifest and log from the sequence
// number of the oldest snapshot in the metadata on (a checkpoint or the
// main branch's oldest), and the files the next expiry deletes. Older ones
// are past retention; Committed deletes them, orphan cleanup catches what
// a crash left.
func (r *Retention) KeepFiles(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	keep := map[string]bool{}
	if !changelog.IsLSMTable(tbl.Properties()) {
		return keep, nil
	}
	// The oldest snapshot in the metadata (a checkpoint, or the oldest of
	// the main branch) bounds what the topic can still read.
	after := int64(-1)
	for i, s := range tbl.Metadata().Snapshots() {
		if i == 0 || s.SequenceNumber-1 < after {
			after = s.SequenceNumber - 1
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	for _, dir := range []string{loc + "/changelog", loc + "/metadata"} {
		if err := walkFiles(fsys, dir, func(path string) {
			m := changelogSeqRE.FindStringSubmatch(path)
			if m == nil {
				return
			}
			seq, _ := strconv.ParseInt(m[1], 10, 64)
			if seq > after {
				keep[path] = true
				// Listings may drop the location's scheme; keep
				// the path as the table's metadata would name it too.
				if scheme, _, ok := strings.Cut(loc, "://"); ok && !strings.Contains(path, "://") {
					keep[scheme+"://"+path] = true
				}
			}
		}); err != nil {
			return nil, err
		}
	}
	if p := tbl.Properties()[changelog.PropLSMChangelogLog]; p != "" {
		keep[p] = true
		log, err := r.currentLog(ctx, tbl)
		if err != nil {
			return nil, err
		}
		for _, sg := range log.Segments {
			keep[sg.Path] = true
		}
		for _, f := range log.Dropped {
			keep[f] = true // the next expiry deletes them
		}
	}
	return keep, nil
}

// walkFiles calls fn with every file below dir; a missing dir has none.
func walkFiles(fsys icebergio.IO, dir string, fn func(path string)) error {
	lio, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return fmt.Errorf("file IO %T cannot list %s", fsys, dir)
	}
	err := lio.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fn(path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	return nil
}

func lakeName(tbl *table.Table) string { return strings.Join(tbl.Identifier(), ".") }
