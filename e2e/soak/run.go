package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/lakegw/lakegw/e2e/internal/procs"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/quickstart"
)

// specs are the soak's tables and the columns their copies are compared on.
func specs() []tableSpec {
	return []tableSpec{
		{topic: quickstart.DefaultTableName, ident: quickstart.DefaultTable(), key: "order_id",
			cols: []string{"order_id", "customer", "product", "status", "quantity", "note"}},
		{topic: "soak.pk", ident: pkIdent, key: "id", cols: []string{"id", "name", "n"}},
		{topic: "soak.foreign", ident: foreignIdent, key: "id", cols: []string{"id", "name", "n"}},
	}
}

func run(ctx context.Context, c config) (*results, error) {
	began := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("-timeout %v", c.timeout))
	defer cancel()
	cleanup, err := prepare(&c)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(c.work, "lakegw-data")
	logf("work directory %s; %d commits per table, maintenance %s", c.work, c.commits, onOff(c.maintain))
	cat, err := lake.OpenCatalog(ctx, dataDir, nil)
	if err != nil {
		return nil, err
	}
	writers, err := newWriters(ctx, cat, c)
	if err != nil {
		return nil, err
	}
	metaDirs := map[string]string{}
	for _, w := range writers {
		tbl, err := cat.LoadTable(ctx, w.ident)
		if err != nil {
			return nil, err
		}
		metaDirs[w.topic] = metadataDir(tbl.MetadataLocation())
	}

	g, err := startGateway(ctx, c, dataDir)
	if err != nil {
		return nil, err
	}
	defer func() { g.Stop() }()
	topics := make([]string, 0, len(writers))
	for _, s := range specs() {
		topics = append(topics, s.topic)
	}
	if _, err := settledEnds(ctx, g.Addr, topics); err != nil {
		return nil, fmt.Errorf("the gateway does not list every topic: %w", err)
	}

	res := &results{Commits: c.commits, Window: c.window(), Maintain: c.maintain}
	live := newGroup("soak-live", specs())
	resumed := newGroup("soak-resumed", specs())
	ends, smp, stoppedAt, err := writePhase(ctx, c, g, dataDir, metaDirs, writers, live, resumed, topics)
	if err != nil {
		return nil, err
	}
	if err := writeTimeline(c.out, smp, writers); err != nil {
		return nil, fmt.Errorf("write the timeline: %w", err)
	}
	res.growthRatios(smp, writers, c.window(), c.pinWindow(resumed.name, stoppedAt))
	res.commitRatios(writers, c.window())
	for _, w := range writers {
		if w.expiries > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s expired its own snapshots %d times (keeping %d)", w.topic, w.expiries, c.foreignRetain))
		}
		if w.compactions > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s compacted its data files %d times", w.topic, w.compactions))
		}
	}

	oracle := map[string]map[string]string{}
	for _, s := range specs() {
		rows, snap, err := scanTable(ctx, cat, s)
		if err != nil {
			return res, err
		}
		oracle[s.topic] = rows
		res.Notes = append(res.Notes, fmt.Sprintf("%s: %d live rows at snapshot %d, log end %v", s.topic, len(rows), snap, ends[s.topic]))
	}
	for _, grp := range []*group{live, resumed} {
		for _, s := range specs() {
			m := grp.tables[s.topic]
			res.addCheck(fmt.Sprintf("group %s, %s (ops %v)", grp.name, s.topic, m.ops), diff(oracle[s.topic], m.rows()))
		}
	}
	res.Groups = append(groupOutcomes(live), groupOutcomes(resumed)...)
	for _, grp := range []*group{live, resumed} {
		res.addCheck(fmt.Sprintf("group %s: no silent skip (no compacted prefix entered mid-way without a truncation)", grp.name), strings.Join(grp.silentSkips, "; "))
	}

	// Restart on the same data directory and replay every topic cold,
	// c.coldReplays times: a topic served from changelog files replays a
	// window in a few milliseconds, where one scheduler hiccup doubles
	// it; the ratio compares the median windows.
	reps := make([][]replayResult, c.coldReplays)
	for pass := range reps {
		g.Stop()
		if g, err = startGateway(ctx, c, dataDir); err != nil {
			return res, fmt.Errorf("restart: %w", err)
		}
		after, err := settledEnds(ctx, g.Addr, topics)
		if err != nil {
			return res, err
		}
		label, endsCheck := "after restart", "log ends survive the restart"
		if pass > 0 {
			label, endsCheck = fmt.Sprintf("after restart %d", pass+1), fmt.Sprintf("log ends survive restart %d", pass+1)
		}
		res.addCheck(endsCheck, sameEnds(ends, after))
		for _, s := range specs() {
			rp, err := replay(ctx, g.Addr, s, after[s.topic], 1000)
			if err != nil {
				return res, err
			}
			logf("replayed %s %s: %d records in %v", s.topic, label, rp.records, rp.elapsed.Round(time.Millisecond))
			res.addCheck(fmt.Sprintf("cold replay %s, %s (ops %v)", label, s.topic, rp.mat.ops), diff(oracle[s.topic], rp.mat.rows()))
			reps[pass] = append(reps[pass], rp)
		}
	}
	res.replayRatios(reps)
	res.Elapsed = time.Since(began)
	return res, nil
}

func newWriters(ctx context.Context, cat catalog.Catalog, c config) ([]*writer, error) {
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(pkIdent), nil); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	demo, err := newDemoWriter(ctx, cat, c)
	if err != nil {
		return nil, err
	}
	pk, err := newPKWriter(ctx, cat, c)
	if err != nil {
		return nil, err
	}
	foreign, err := newForeignWriter(ctx, cat, c)
	if err != nil {
		return nil, err
	}
	return []*writer{demo, pk, foreign}, nil
}

// writePhase runs the writers, the sampler and both groups, and returns
// the settled log ends once both groups have read up to them, and when
// the resumed group stopped.
func writePhase(ctx context.Context, c config, g *procs.Proc, dataDir string, metaDirs map[string]string,
	writers []*writer, live, resumed *group, topics []string) (map[string]map[int32]int64, []sample, time.Time, error) {
	var stoppedAt atomic.Pointer[time.Time]
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	total := int64(c.commits * len(writers))
	committed := func() int64 {
		var n int64
		for _, w := range writers {
			n += w.commits.Load()
		}
		return n
	}
	// finalEnds is set once the writers are done and the gateway has
	// indexed their last snapshots; the groups stop when they reach it.
	var finalEnds atomic.Pointer[map[string]map[int32]int64]
	doneAt := func(grp *group) func() bool {
		return func() bool {
			e := finalEnds.Load()
			return e != nil && grp.caughtUp(*e)
		}
	}

	smp := &sampler{}
	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		smp.run(sctx, 250*time.Millisecond, g, dataDir, metaDirs, writers, c.maxDisk, abort)
	}()

	fns := []func(context.Context) error{
		func(ctx context.Context) error { return live.session(ctx, g.Addr, false, doneAt(live)) },
		func(ctx context.Context) error {
			// Read the first quarter live, stop through the middle of the
			// run (the foreign writer expires snapshots meanwhile), resume
			// at 60 % from the committed offsets.
			if err := resumed.session(ctx, g.Addr, false, func() bool { return committed() >= total/4 }); err != nil {
				return err
			}
			now := time.Now()
			stoppedAt.Store(&now)
			logf("group %s stopped after %d records at %d commits", resumed.name, resumed.records, committed())
			for committed() < total*6/10 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			logf("group %s resumes at %d commits", resumed.name, committed())
			return resumed.session(ctx, g.Addr, true, doneAt(resumed))
		},
		func(ctx context.Context) error {
			if err := waitAll(ctx, writerFns(c, writers)...); err != nil {
				return err
			}
			stopSampler()
			<-sdone
			logf("writers done: %d commits", committed())
			ends, err := settledEnds(ctx, g.Addr, topics)
			if err != nil {
				return err
			}
			finalEnds.Store(&ends)
			return nil
		},
	}
	if err := waitAll(ctx, fns...); err != nil {
		return nil, nil, time.Time{}, err
	}
	stopSampler()
	<-sdone
	if err := context.Cause(ctx); err != nil {
		return nil, nil, time.Time{}, err
	}
	return *finalEnds.Load(), smp.all(), *stoppedAt.Load(), nil
}

func writerFns(c config, writers []*writer) []func(context.Context) error {
	var fns []func(context.Context) error
	for _, w := range writers {
		fns = append(fns, func(ctx context.Context) error {
			t0 := time.Now()
			if err := w.run(ctx, c.commits); err != nil {
				return err
			}
			logf("%s: %d commits in %v", w.topic, c.commits, time.Since(t0).Round(time.Millisecond))
			return nil
		})
	}
	return fns
}

func groupOutcomes(grp *group) []string {
	var out []string
	for _, s := range specs() {
		var n int
		for _, tr := range grp.truncations {
			if len(tr) > len(s.topic) && tr[:len(s.topic)+1] == s.topic+"/" {
				n++
			}
		}
		m := grp.tables[s.topic]
		if n == 0 {
			out = append(out, fmt.Sprintf("%s, %s: every change, no truncation (%d compacted-prefix records)", grp.name, s.topic, m.ops["r"]))
		} else {
			out = append(out, fmt.Sprintf("%s, %s: %d detected truncations, each followed by the log from its start (%d compacted-prefix records in all)", grp.name, s.topic, n, m.ops["r"]))
		}
	}
	for _, tr := range grp.truncations {
		out = append(out, grp.name+", truncation: "+tr)
	}
	return out
}

func sameEnds(a, b map[string]map[int32]int64) string {
	if fmt.Sprint(a) == fmt.Sprint(b) {
		return ""
	}
	return fmt.Sprintf("before %v, after %v", a, b)
}
