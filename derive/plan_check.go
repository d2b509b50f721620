//go:build lakegw_checkplans

package derive

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// checkPlans is set by the lakegw_checkplans build tag, which `make test`
// and `make check` set: every plan extendPlan derives, in every test of
// every package, is then compared with iceberg-go's plan of the snapshot
// (same files, same delete files, same sequence numbers and row ids), and
// a difference panics. Without the tag (plan_check_off.go) the check is
// not compiled in: it plans every snapshot in full, the cost extendPlan
// exists to avoid.
const checkPlans = true

func checkExtendedPlan(tbl *table.Table, s *table.Snapshot, got livePlan) {
	want, err := planFiles(context.Background(), tbl, s, nil)
	if err != nil {
		panic(fmt.Sprintf("check extended plan of snapshot %d: %v", s.SnapshotID, err))
	}
	if diff := planDifference(want, got); diff != "" {
		panic(fmt.Sprintf("extended plan of snapshot %d differs from the planner's: %s", s.SnapshotID, diff))
	}
}

func planDifference(want, got livePlan) string {
	for p := range want {
		if _, ok := got[p]; !ok {
			return "missing data file " + p
		}
	}
	for p, g := range got {
		w, ok := want[p]
		if !ok {
			return "extra data file " + p
		}
		for _, l := range [][2][]iceberg.DataFile{
			{w.DeleteFiles, g.DeleteFiles}, {w.EqualityDeleteFiles, g.EqualityDeleteFiles}, {w.DeletionVectorFiles, g.DeletionVectorFiles},
		} {
			if !slices.Equal(paths(l[0]), paths(l[1])) {
				return fmt.Sprintf("%s: delete files %v, planner %v", p, paths(l[1]), paths(l[0]))
			}
		}
		if dataSeq(w) != dataSeq(g) || fmt.Sprint(ptr(w.FirstRowID)) != fmt.Sprint(ptr(g.FirstRowID)) ||
			w.Start != g.Start || w.Length != g.Length || g.Residual != nil {
			return fmt.Sprintf("%s: task %+v, planner %+v", p, g, w)
		}
	}
	return ""
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
