package maintain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// stageFunc stages one step of the pass on a transaction of tbl. It
// returns false when the step has nothing to do on this table state.
type stageFunc func(ctx context.Context, tbl *table.Table, tx *table.Transaction) (bool, error)

// commitStep loads the table, stages a step on it and commits it. Another
// writer committing in between (the demo commits every second, the LSM
// writer and compactor too) makes iceberg-go's SQL catalog refuse the
// commit without retrying it; the step is then staged again on the new
// table state, a bounded number of times. It returns the table the step
// was staged on and the committed table (nil when nothing was committed:
// nothing to do, or a dry run).
func (p *pass) commitStep(ctx context.Context, what string, stage stageFunc) (base, committed *table.Table, err error) {
	return p.commitStepWith(ctx, what, stage, lake.CommitOrClean)
}

// commitFunc commits a staged step of base.
type commitFunc func(ctx context.Context, base *table.Table, tx *table.Transaction) (*table.Table, error)

// commitStepWith is commitStep committing through commit.
func (p *pass) commitStepWith(ctx context.Context, what string, stage stageFunc, commit commitFunc) (base, committed *table.Table, err error) {
	err = p.retryConflicts(what, func() error {
		base, committed = nil, nil
		var err error
		if base, err = p.cat.LoadTable(ctx, p.ident); err != nil {
			return fmt.Errorf("%s: load %s: %w", what, p.name, err)
		}
		tx := base.NewTransaction()
		ok, err := stage(ctx, base, tx)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, p.name, err)
		}
		if !ok || p.opts.DryRun {
			return nil
		}
		if committed, err = commit(ctx, base, tx); err != nil {
			return fmt.Errorf("%s of %s: commit: %w", what, p.name, err)
		}
		return nil
	})
	return base, committed, err
}

// holdingWriters runs fn while this gateway's own writers of the table hold
// their commits (Options.HoldWriters; as is without it): for a step whose
// staging takes longer than a raw topic's commit interval.
func (p *pass) holdingWriters(ctx context.Context, fn func() error) error {
	if p.opts.HoldWriters == nil {
		return fn()
	}
	return p.opts.HoldWriters(ctx, fn)
}

// retryConflicts runs try again while it fails with a commit conflict (a
// writer committed between its load and its commit), at most
// CommitAttempts times; any other outcome is try's.
func (p *pass) retryConflicts(what string, try func() error) error {
	var lastErr error
	for attempt := 1; attempt <= p.opts.CommitAttempts; attempt++ {
		err := try()
		if err == nil || !lake.IsCommitConflict(err) {
			return err
		}
		lastErr = err
		p.log.Debug().Err(err).Str("step", what).Int("attempt", attempt).Msg("maintenance commit conflicted; reloading")
	}
	return fmt.Errorf("%s of %s: %w after %d conflicting commits: %w", what, p.name, errStarved, p.opts.CommitAttempts, lastErr)
}

// errStarved means other writers committed before every attempt of a step.
// The slow steps (compaction) report it and let the pass go on: the next
// pass tries again, and expiry must not wait for a quiet table.
var errStarved = errors.New("gave up")

// commitUnpinned commits tx without its assertion that the main branch is
// still where tx found it: an expiry stays right on any later head (it
// removes older snapshots only; a head it would remove is refused by the
// catalog, and a branch rolled back onto a removed snapshot too), and
// against a writer that commits every few hundred milliseconds the
// assertion would fail every attempt: expiry would starve and the metadata
// grow. Every other requirement (table UUID, tags) still holds.
func (p *pass) commitUnpinned(ctx context.Context, base *table.Table, tx *table.Transaction) (*table.Table, error) {
	tc, err := tx.TableCommit()
	if err != nil {
		return nil, err
	}
	reqs := make([]table.Requirement, 0, len(tc.Requirements))
	for _, r := range tc.Requirements {
		if isMainRefAssertion(r) {
			continue
		}
		reqs = append(reqs, r)
	}
	if len(tc.Updates) == 0 {
		return p.cat.LoadTable(ctx, p.ident)
	}
	meta, loc, err := p.cat.CommitTable(ctx, p.ident, reqs, tc.Updates)
	if err != nil {
		return nil, err
	}
	tx.MarkCommitted()
	if err := removeOldMetadata(ctx, base, meta, loc); err != nil {
		// The commit happened; a file left behind is orphan cleanup's.
		p.log.Warn().Err(err).Str("table", p.name).Msg("cannot remove metadata files that left the metadata log")
	}
	committed, err := p.cat.LoadTable(ctx, p.ident)
	if err != nil {
		return nil, fmt.Errorf("load %s after its commit: %w", p.name, err)
	}
	return committed, nil
}

// isMainRefAssertion reports whether r asserts where the main branch is.
func isMainRefAssertion(r table.Requirement) bool {
	if r.GetType() != "assert-ref-snapshot-id" {
		return false
	}
	var wire struct {
		Ref string `json:"ref"`
	}
	b, err := json.Marshal(r)
	return err == nil && json.Unmarshal(b, &wire) == nil && wire.Ref == table.MainBranch
}

// removeOldMetadata deletes the metadata files that fell out of the
// metadata log with a commit made through the catalog directly (a
// transaction's commit does it itself, when the table asks for it with
// write.metadata.delete-after-commit.enabled). The files are base's log
// and base itself: whatever a writer's commit pushed out in between, that
// writer deleted.
func removeOldMetadata(ctx context.Context, base *table.Table, committed table.Metadata, committedLoc string) error {
	if !committed.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return nil
	}
	kept := map[string]bool{committedLoc: true}
	for e := range committed.PreviousFiles() {
		kept[e.MetadataFile] = true
	}
	var gone []string
	for e := range base.Metadata().PreviousFiles() {
		if !kept[e.MetadataFile] {
			gone = append(gone, e.MetadataFile)
		}
	}
	if loc := base.MetadataLocation(); loc != "" && !kept[loc] {
		gone = append(gone, loc)
	}
	_, err := lake.RemoveFiles(ctx, base, gone)
	return err
}
