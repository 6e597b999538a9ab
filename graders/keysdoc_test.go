package graders

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGraderKeysDocumented: every key a kind reads from [bench.grader]
// is in the package doc (go doc ./graders) and in docs/tasks.md, so that
// a task author never needs the source.
func TestGraderKeysDocumented(t *testing.T) {
	read := regexp.MustCompile(`(?:param[A-Za-z]*|numberParam)\(in, "([a-z_]+)"|Params\["([a-z_]+)"\]`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			keys[m[1]+m[2]] = f
		}
	}
	if len(keys) < 20 {
		t.Fatalf("found %d keys read (%v), want the 25 or so of the five kinds: is the pattern stale?", len(keys), keys)
	}
	pkgDoc, err := os.ReadFile("grader.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(pkgDoc)
	doc = doc[strings.Index(doc, "# Keys of each kind"):strings.Index(doc, "package graders")]
	guide, err := os.ReadFile("../docs/tasks.md")
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range keys {
		if !regexp.MustCompile(`(?m)^//\s+(\[` + k + `\]|` + k + ` = )`).MatchString(doc) {
			t.Errorf("key %s (read in %s) is not in the package doc's keys", k, f)
		}
		if !strings.Contains(string(guide), "| `"+k+"` |") {
			t.Errorf("key %s (read in %s) is not in docs/tasks.md", k, f)
		}
	}
}
