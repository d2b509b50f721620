package e2e

import (
	"os"
	"testing"
)

// skipOrFailMissing skips a test whose external client is not installed,
// except in CI, where .ci/run installs every client and a missing one is a
// broken CI setup.
func skipOrFailMissing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, but CI must have it (scripts/install-test-deps.sh)", what)
	}
	t.Skipf("%s is not installed; run scripts/install-test-deps.sh", what)
}
