package maintain

import "context"

// SetBeforeCompactionCommit installs a hook between a compaction's rewrite
// and its commit, for the duration of a test.
func SetBeforeCompactionCommit(f func(context.Context)) func() {
	testBeforeCompactionCommit = f
	return func() { testBeforeCompactionCommit = nil }
}
