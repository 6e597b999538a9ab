// Package repo_test holds checks on the repository as a whole: every
// package has a doc comment, imports follow the layers of
// docs/design.md, the functions its step table names exist, and no
// function of daemon/ outgrows its bound.
package repo_test

import (
	"encoding/json"
	"go/ast"
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
	"client/apitype": {"fsmon/journal"},
	"client":         {"client/apitype"},
	"cmd/benchctl":   {"client", "client/apitype", "fsmon/journal", "forensics", "reason", "draw", "tasks", "internal/modelfake", "internal/dsse", "viewer", "internal/buildinfo"},
	"viewer":         {"client", "client/apitype"},
	"fsmon/journal":  {},
	"fsmon":          {"fsmon/journal"},
	// A kernel facility imports no other facility and no daemon code;
	// internal/undo, the one undo stack, is neither (a leaf of the
	// standard library), so set-up in each unwinds on it.
	"limits":              {"internal/undo"},
	"netns":               {"internal/undo"},
	"sandbox":             {"internal/undo"},
	"confine":             {"limits", "netns", "sandbox", "internal/undo"},
	"tasks":               {"fsmon/journal"},
	"graders":             {"tasks", "client/apitype", "fsmon/journal", "reason", "graders/reportjudge"},
	"graders/reportjudge": {},
	"reason":              {},
	"forensics":           {"client/apitype", "fsmon/journal", "internal/dsse", "reason"},
	"draw":                {"tasks", "client/apitype", "fsmon/journal"},
	"daemon/store":        {"client/apitype", "fsmon/journal"},
	"daemon/runs":         {"*", "client/apitype", "-client"},
	"daemon":              {"*", "-client"},
	"daemon/e2e":          {},
	"cmd/benchd":          {"*", "-client"},
	"internal/testenv":    {},
	"internal/pgtest":     {"internal/testenv"},
	"internal/undo":       {},
	"internal/buildinfo":  {},
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

// TestClientLinksNoKernelCode checks that benchctl, the client, the
// journal format and the export archive's checker never link cgo, go-fuse or SQLite, so that they build
// with CGO_ENABLED=0 and run on any machine.
func TestClientLinksNoKernelCode(t *testing.T) {
	var patterns []string
	for _, d := range []string{"cmd/benchctl", "client", "fsmon/journal", "forensics"} {
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

// Bounds on the length of functions, in lines from func to its closing
// brace: any function of daemon/, the one that runs an attempt, and an
// HTTP handler (a method named handle...), which is transport only.
const (
	maxFuncLines    = 100
	maxExecuteLines = 50
	maxHandlerLines = 32
)

// TestFunctionLengths: no function of daemon/ is over maxFuncLines, and
// execute, which runs one attempt, is under maxExecuteLines: a longer one
// holds more than one decision.
func TestFunctionLengths(t *testing.T) {
	fset := token.NewFileSet()
	sawExecute := false
	err := filepath.WalkDir("daemon", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			name := filepath.ToSlash(p) + " " + fd.Name.Name
			if fd.Name.Name == "execute" {
				sawExecute = true
				if n >= maxExecuteLines {
					t.Errorf("%s is %d lines: want under %d", name, n, maxExecuteLines)
				}
			}
			if n > maxFuncLines {
				t.Errorf("%s is %d lines: at most %d", name, n, maxFuncLines)
			}
			if fd.Recv != nil && strings.HasPrefix(fd.Name.Name, "handle") && n > maxHandlerLines {
				t.Errorf("%s is %d lines: a handler decodes the request, calls the method that does the work and writes its answer, in at most %d", name, n, maxHandlerLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawExecute {
		t.Error("no function execute in daemon/: say here what runs one attempt now")
	}
}

// TestStepTable: each function docs/design.md's step table names (its
// package, and Type.Method or a function's name) exists in that
// package's code, so that the table a newcomer reads follows the code.
func TestStepTable(t *testing.T) {
	b, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## One attempt, step by step\n")
	if !ok {
		t.Fatal(`docs/design.md has no section "One attempt, step by step"`)
	}
	_, table, ok := strings.Cut(section, "\n| # | Step | Package | Function |\n")
	if !ok {
		t.Fatal("docs/design.md's steps have no table | # | Step | Package | Function |")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break // the table's end
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Errorf("step table row %q: want 4 cells", line)
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(cells[0]), "-") {
			continue // the header's rule
		}
		rows++
		pkg := strings.Trim(strings.TrimSpace(cells[2]), "`")
		fn := strings.Trim(strings.TrimSpace(cells[3]), "`")
		recv, name, isMethod := strings.Cut(fn, ".")
		if !isMethod {
			recv, name = "", fn
		}
		if !declared(t, pkg, recv, name) {
			t.Errorf("step %s (%s): %s has no %s", strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), pkg, fn)
		}
	}
	if rows < 12 {
		t.Errorf("got %d rows in the step table, want one at least for each of the 12 steps", rows)
	}
}

// declared reports whether package dir declares function name, a method
// of type recv when recv is not empty.
func declared(t *testing.T, dir, recv, name string) bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: no Go files (%v)", dir, err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != name || (fd.Recv == nil) != (recv == "") {
				continue
			}
			if recv == "" || receiverName(fd.Recv.List[0].Type) == recv {
				return true
			}
		}
	}
	return false
}

// receiverName is the type's name of a method's receiver (T or *T).
func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
