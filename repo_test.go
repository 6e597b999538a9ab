// Package repo_test holds checks on the repository as a whole: every
// package has a doc comment, and imports follow the layers of
// docs/design.md.
package repo_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "benchd.dev"

type goPackage struct {
	ImportPath string
	Dir        string
	Name       string
	CgoFiles   []string
	Imports    []string
	Deps       []string
	GoFiles    []string
	Standard   bool
}

// listPackages runs go list on patterns and decodes its JSON stream.
func listPackages(t *testing.T, args ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []goPackage
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %v found no packages", args)
	}
	return pkgs
}

func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t, "./...") {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset := token.NewFileSet()
		found := false
		for _, f := range append(p.GoFiles, p.CgoFiles...) {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil && strings.TrimSpace(af.Doc.Text()) != "" {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("package %s has no package doc comment", p.ImportPath)
		}
	}
}

// allowed lists, for each package of this module, the module packages it
// may import (the table of docs/design.md). A package missing here fails
// the test, so a new package must take its place in the layers.
var allowed = map[string][]string{
	"client/apitype":      {},
	"client":              {"client/apitype"},
	"cmd/benchctl":        {"client", "client/apitype", "fsmon/journal", "draw", "tasks", "internal/modelfake", "internal/dsse", "viewer"},
	"viewer":              {"client", "client/apitype"},
	"fsmon/journal":       {},
	"fsmon":               {"fsmon/journal"},
	"limits":              {},
	"netns":               {},
	"sandbox":             {},
	"confine":             {"limits", "netns", "sandbox", "internal/undo"},
	"tasks":               {"fsmon/journal"},
	"graders":             {"tasks", "fsmon/journal", "graders/reportjudge"},
	"graders/reportjudge": {},
	"draw":                {"tasks", "client/apitype", "fsmon/journal"},
	"daemon/store":        {"client/apitype", "fsmon/journal"},
	"daemon/runs":         {"*", "client/apitype", "-client"},
	"daemon":              {"*", "-client"},
	"daemon/e2e":          {},
	"cmd/benchd":          {"*", "-client"},
	"internal/testenv":    {},
	"internal/pgtest":     {"internal/testenv"},
	"internal/undo":       {},
	"internal/dsse":       {},
	"internal/modelfake":  {},
	"internal/scrub":      {"client/apitype"},
	"modelgw":             {"client/apitype", "internal/scrub"},
	"agents":              {},
	"e2e/agents":          {},
}

func TestImportLayers(t *testing.T) {
	for _, p := range listPackages(t, "./...") {
		if p.ImportPath == module {
			continue // this file's own test-only package
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		allow, ok := allowed[rel]
		if !ok {
			t.Errorf("package %s has no entry in the import layers of repo_test.go", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !mayImport(allow, dep) {
				t.Errorf("%s imports %s, which the layers of docs/design.md forbid", rel, dep)
			}
		}
	}
}

func mayImport(allow []string, dep string) bool {
	any := false
	for _, a := range allow {
		switch {
		case a == "*":
			any = true
		case strings.HasPrefix(a, "-") && dep == a[1:]:
			return false
		case a == dep:
			return true
		}
	}
	return any
}

// TestClientLinksNoKernelCode checks that benchctl, the client and the
// journal format never link cgo, go-fuse or SQLite, so that they build
// with CGO_ENABLED=0 and run on any machine.
func TestClientLinksNoKernelCode(t *testing.T) {
	var patterns []string
	for _, d := range []string{"cmd/benchctl", "client", "fsmon/journal"} {
		if _, err := os.Stat(d); err == nil {
			patterns = append(patterns, "./"+d+"/...")
		}
	}
	if len(patterns) == 0 {
		t.Fatal("no client-side package found")
	}
	for _, p := range listPackages(t, append([]string{"-deps"}, patterns...)...) {
		if p.Standard {
			continue
		}
		if len(p.CgoFiles) > 0 {
			t.Errorf("the client side links cgo through %s", p.ImportPath)
		}
		for _, bad := range []string{"github.com/hanwen/go-fuse", "github.com/mattn/go-sqlite3"} {
			if strings.HasPrefix(p.ImportPath, bad) {
				t.Errorf("the client side links %s", p.ImportPath)
			}
		}
	}
	cmd := exec.Command("go", append([]string{"build", "-o", os.DevNull}, patterns...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("client side does not build without cgo: %v\n%s", err, out)
	}
}
