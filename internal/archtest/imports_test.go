package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rule is what one package's doc.go says about its imports of other lakegw
// packages, by path inside the module. A pattern ending in /... also
// matches the packages below it, as in go list.
type rule struct {
	// may lists every lakegw package the package may import, where its
	// doc.go gives that list; nil when it only says what it must not.
	may []string
	// mustNot lists what it must not import.
	mustNot []string
}

// none is a may-list for packages that import nothing of lakegw's.
var none = []string{}

// rules holds one entry per package of the module; a new package needs
// one (from its doc.go) before this test passes.
var rules = map[string]rule{
	// The binary wires everything together.
	"cmd/lakegw": {},
	// End-to-end tests drive real servers and tables; e2e/doc.go states
	// no import rule.
	"e2e":       {},
	"e2e/bench": {},
	"e2e/soak":  {},
	// "It is a test-harness leaf: it imports no lakegw product package".
	"e2e/internal/procs": {may: none},
	// "protocol/ may import fetch/, topics/, offsets/, state/ and
	// protocol/groups/"; internal/bytepool/doc.go: "protocol/ frames
	// responses in them"; internal/limitedlog/doc.go: "protocol/ and
	// fetch/ keep one each".
	"protocol": {
		may: []string{"fetch", "topics", "offsets", "state", "produce", "txn", "cluster", "protocol/groups", "internal/bytepool", "internal/limitedlog",
			"internal/kafkaseq"},
		mustNot: []string{"lsm", "changelog"},
	},
	// "It may import changelog/, lake/, lsm/ and maintain/; it must not
	// import protocol/, fetch/, topics/, offsets/ or derive/".
	"produce": {
		may:     []string{"changelog", "lake", "lsm", "maintain", "internal/kafkaseq"},
		mustNot: []string{"protocol/...", "fetch", "topics", "offsets", "derive"},
	},
	// "It may import internal/kafkaseq alone".
	"txn": {may: []string{"internal/kafkaseq"}},
	// "It must not import fetch/, topics/, derive/, changelog/, lake/,
	// lsm/ or state/"; protocol/doc.go: "nothing below it imports
	// protocol/".
	"protocol/groups": {mustNot: []string{"protocol", "fetch", "topics", "derive", "changelog", "lake", "lsm", "state"}},
	// "It may import topics/, offsets/ and changelog/; it must not import
	// protocol/ or lsm/"; internal/bytepool/doc.go: "fetch/ reads record
	// batches into these buffers"; internal/sizedlru/doc.go: "fetch/ keeps
	// encoded record batches in another"; internal/limitedlog/doc.go:
	// "protocol/ and fetch/ keep one each".
	"fetch": {
		may:     []string{"topics", "offsets", "changelog", "internal/bytepool", "internal/sizedlru", "internal/limitedlog"},
		mustNot: []string{"protocol/...", "lsm"},
	},
	// "it may import offsets/, derive/, changelog/, lake/ and state/; it
	// must not import protocol/, fetch/ or lsm/"; internal/sizedlru/doc.go:
	// "topics/ keeps derived snapshots in one".
	"topics": {
		may:     []string{"offsets", "derive", "changelog", "lake", "state", "internal/sizedlru"},
		mustNot: []string{"protocol/...", "fetch", "lsm"},
	},
	// "must not import protocol/, fetch/, derive/, changelog/, topics/,
	// lake/, lsm/ or state/ ... persists through the Store interface it
	// defines".
	"offsets": {may: none},
	// "must not import derive/, protocol/, fetch/, offsets/, topics/ or
	// lsm/ ... It may import lake/ and lake/files".
	"changelog": {
		may:     []string{"lake", "lake/files"},
		mustNot: []string{"derive", "protocol/...", "fetch", "offsets", "topics", "lsm"},
	},
	// "It may import changelog/, lake/, lake/files ... and
	// internal/bytepool; it must not import protocol/, fetch/, topics/,
	// offsets/, lsm/ or state/"; internal/bytepool/doc.go: "derive/ gives
	// them to its Parquet page readers".
	"derive": {
		may:     []string{"changelog", "lake", "lake/files", "internal/bytepool"},
		mustNot: []string{"protocol/...", "fetch", "topics", "offsets", "lsm", "state"},
	},
	// "It may import changelog/, lake/ and lake/files ...; it must not
	// import protocol/, fetch/, topics/ or offsets/."
	"lsm": {
		may:     []string{"changelog", "lake", "lake/files"},
		mustNot: []string{"protocol/...", "fetch", "topics", "offsets"},
	},
	// "It may import offsets/ and state/ only, and only tests import it."
	"offsets/offsetstest": {may: []string{"offsets", "state"}},
	// "It may import offsets/ and protocol/groups for those types alone;
	// it must not import protocol/, fetch/, topics/, derive/, changelog/,
	// lake/ or lsm/."
	"state": {may: []string{"offsets", "protocol/groups", "txn", "cluster"}},
	// "must not import protocol/, fetch/, offsets/, derive/, changelog/,
	// topics/ or lsm/". state/ too: the lake is the bottom layer, below the
	// gateway's own store (lake/doc.go does not name state/ yet).
	"lake": {mustNot: []string{"protocol/...", "fetch", "offsets", "derive", "changelog", "topics", "lsm", "state"}},
	// "it imports no other lakegw package".
	"lake/files": {may: none},
	// "it must not import protocol/, fetch/, topics/ or offsets/".
	"quickstart": {mustNot: []string{"protocol/...", "fetch", "topics", "offsets"}},
	// "It may import lake/, changelog/ ..., internal/sizedlru ... and iceberg-go; it must not
	// import protocol/, fetch/, topics/ or state/."
	"maintain": {
		may:     []string{"lake", "changelog", "internal/sizedlru"},
		mustNot: []string{"protocol/...", "fetch", "topics", "state", "offsets"},
	},
	// "It imports nothing of lakegw's."
	"internal/bytepool": {may: none},
	// "imports nothing of lakegw's".
	"internal/archtest": {may: none},
	// "It imports nothing of lakegw's."
	"internal/lsmmodel": {may: none},
	// "It imports nothing of lakegw's."
	"internal/sizedlru": {may: none},
	// "It imports nothing of lakegw's."
	"internal/limitedlog": {may: none},
	// "It imports nothing of lakegw's."
	"internal/kafkaseq": {may: none},
	// "It imports nothing of lakegw's; only tests and the benchmark ...
	// import it."
	"internal/pgtest": {may: none},
	// "It imports nothing of lakegw's; only tests import it."
	"internal/s3test": {may: none},
	// "It imports nothing of lakegw's".
	"cluster": {may: none},
}

// everywhere holds the rules for all packages: what they must not import,
// except the packages listed.
var everywhere = []struct {
	target string
	except []string
}{
	// Commands are not libraries.
	{"cmd/...", nil},
	// Tests and benchmarks are not libraries either.
	{"e2e/...", []string{"e2e/..."}},
	// offsets/offsetstest/doc.go: "only tests import it".
	{"offsets/offsetstest", nil},
	// internal/s3test/doc.go: "only tests import it" (it builds and
	// starts a server).
	{"internal/s3test", nil},
	// protocol/doc.go: "nothing below it imports protocol/" (groups is
	// part of protocol/, below it only in name), but for state/, which
	// implements groups.OffsetStore (state/doc.go).
	{"protocol/...", []string{"cmd/...", "e2e/...", "protocol", "state"}},
}

func match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// TestImportsFollowTheDocRules checks every package's imports (not its
// tests': a test may use any fixture it needs) against the rules.
func TestImportsFollowTheDocRules(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs := listPackages(t, root)
	if len(pkgs) < len(rules)/2 {
		t.Fatalf("go list found only %d packages under %s", len(pkgs), root)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[strings.TrimPrefix(p.ImportPath, module+"/")] = true
	}
	for _, p := range pkgs {
		pkg := strings.TrimPrefix(p.ImportPath, module+"/")
		r, ok := rules[pkg]
		if !ok {
			t.Errorf("package %s has no import rule: add the one its doc.go states to rules", pkg)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if r.may != nil && !matchAny(r.may, dep) {
				t.Errorf("%s imports %s: its doc.go allows only %v", pkg, dep, r.may)
			}
			if matchAny(r.mustNot, dep) {
				t.Errorf("%s imports %s: its doc.go says it must not import %v", pkg, dep, r.mustNot)
			}
			for _, e := range everywhere {
				if match(e.target, dep) && !matchAny(e.except, pkg) {
					t.Errorf("%s imports %s: nothing but %v may import %s", pkg, dep, e.except, e.target)
				}
			}
		}
	}
	// A rule naming a package that is gone (renamed, moved) would pass
	// forever without checking anything.
	exists := func(pattern string) bool {
		for pkg := range seen {
			if match(pattern, pkg) {
				return true
			}
		}
		return false
	}
	for pkg, r := range rules {
		if !seen[pkg] {
			t.Errorf("rules name package %s, which go list does not find", pkg)
		}
		for _, dep := range append(slices.Clone(r.may), r.mustNot...) {
			if !exists(dep) {
				t.Errorf("the rule of %s names %s, which go list does not find", pkg, dep)
			}
		}
	}
}

// TestRulesCatchAForbiddenImport makes sure the checks above can fail: a
// table that matches nothing would pass any import.
func TestRulesCatchAForbiddenImport(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"topics", "offsets", true},
		{"topics", "fetch", false},
		{"topics", "lsm", false},
		{"fetch", "protocol/groups", false},
		{"protocol", "protocol/groups", true},
		{"protocol/groups", "protocol", false},
		{"lake", "state", false},
		{"state", "lake", false},
		{"internal/bytepool", "state", false},
		{"quickstart", "lake", true},
		{"quickstart", "cmd/lakegw", false},
		{"lsm", "e2e/bench", false},
		{"topics", "derive", true},
		{"derive", "changelog", true},
		{"changelog", "derive", false},
		{"derive", "topics", false},
		{"derive", "lsm", false},
		{"e2e/bench", "topics", true},
		{"e2e/bench", "e2e/internal/procs", true},
		{"e2e/internal/procs", "lake", false},
	} {
		if got := allowed(c.pkg, c.dep); got != c.ok {
			t.Errorf("%s importing %s: allowed %v, want %v", c.pkg, c.dep, got, c.ok)
		}
	}
}

// allowed reports whether the rules let pkg import dep.
func allowed(pkg, dep string) bool {
	r := rules[pkg]
	if (r.may != nil && !matchAny(r.may, dep)) || matchAny(r.mustNot, dep) {
		return false
	}
	for _, e := range everywhere {
		if match(e.target, dep) && !matchAny(e.except, pkg) {
			return false
		}
	}
	return true
}

// moduleRoot finds the directory of go.mod above the working directory and
// the module path it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

// listPackages runs go list -json on every package of the module at root.
func listPackages(t *testing.T, root string) []goPackage {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", root, err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
