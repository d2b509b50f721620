package lsm

// CompactionOptions configures universal compaction, with Paimon's
// defaults.
type CompactionOptions struct {
	// Trigger is the number of sorted runs of a bucket that starts a
	// compaction (num-sorted-run.compaction-trigger, 5).
	Trigger int
	// MaxSizeAmplificationPercent: when the runs above the oldest exceed
	// this percentage of it, everything is merged (200).
	MaxSizeAmplificationPercent int
	// SizeRatioPercent: a run joins the candidates while it is no larger
	// than (100 + ratio)% of their total (1).
	SizeRatioPercent int
	// MaxLevel is the highest level (5; Paimon's num-levels - 1).
	MaxLevel int
}

func (o CompactionOptions) withDefaults() CompactionOptions {
	if o.Trigger <= 0 {
		o.Trigger = 5
	}
	if o.MaxSizeAmplificationPercent <= 0 {
		o.MaxSizeAmplificationPercent = 200
	}
	if o.SizeRatioPercent <= 0 {
		o.SizeRatioPercent = 1
	}
	if o.MaxLevel <= 0 {
		o.MaxLevel = 5
	}
	return o
}

// sortedRun is one run of a bucket: an L0 file, or all files of a level.
type sortedRun struct {
	level int
	files []*runFile
	size  int64
}

// runsOf groups a bucket's files (newest first, as state orders them)
// into sorted runs, newest first.
func runsOf(files []*runFile) []sortedRun {
	var runs []sortedRun
	for _, f := range files {
		if f.level > 0 && len(runs) > 0 && runs[len(runs)-1].level == f.level {
			r := &runs[len(runs)-1]
			r.files = append(r.files, f)
			r.size += f.df.FileSizeBytes()
			continue
		}
		runs = append(runs, sortedRun{level: f.level, files: []*runFile{f}, size: f.df.FileSizeBytes()})
	}
	return runs
}

// compactionUnit is what to merge: the newest n runs, written to level.
type compactionUnit struct {
	runs  []sortedRun
	level int
}

// pick is Paimon's universal compaction picker: size amplification first
// (merge everything), then size ratio, then the run count. full forces
// merging every run (lakegw compact); it still skips a bucket that is one
// run without deletes.
func (o CompactionOptions) pick(runs []sortedRun, full bool) *compactionUnit {
	if full {
		if len(runs) == 0 || len(runs) == 1 && !hasDeletes(runs[0]) && runs[0].level == o.MaxLevel {
			return nil
		}
		return &compactionUnit{runs: runs, level: o.MaxLevel}
	}
	if len(runs) < o.Trigger {
		return nil
	}
	// Size amplification: everything above the oldest run against it.
	var above int64
	for _, r := range runs[:len(runs)-1] {
		above += r.size
	}
	if oldest := runs[len(runs)-1].size; oldest > 0 && above*100 > int64(o.MaxSizeAmplificationPercent)*oldest {
		return &compactionUnit{runs: runs, level: o.MaxLevel}
	}
	if u := o.pickSizeRatio(runs, 1); u != nil {
		return u
	}
	return o.pickSizeRatio(runs, len(runs)-o.Trigger+1)
}

// pickSizeRatio takes at least minCount newest runs and keeps adding the
// next while it is no larger than (100+ratio)% of the candidates' size.
func (o CompactionOptions) pickSizeRatio(runs []sortedRun, minCount int) *compactionUnit {
	n := max(minCount, 1)
	var size int64
	for _, r := range runs[:min(n, len(runs))] {
		size += r.size
	}
	for n < len(runs) && runs[n].size*100 <= size*int64(100+o.SizeRatioPercent) {
		size += runs[n].size
		n++
	}
	if n < 2 {
		return nil
	}
	return o.unit(runs, n)
}

// unit merges the newest n runs into the level just below the next run's,
// taking further runs while that would be level 0 (L0 holds single files).
func (o CompactionOptions) unit(runs []sortedRun, n int) *compactionUnit {
	for n < len(runs) {
		if lvl := runs[n].level - 1; lvl > 0 {
			return &compactionUnit{runs: runs[:n], level: lvl}
		}
		n++
	}
	return &compactionUnit{runs: runs, level: o.MaxLevel}
}

func hasDeletes(r sortedRun) bool {
	for _, f := range r.files {
		if f.hasDeletes() {
			return true
		}
	}
	return false
}
