package fsmon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// pjdfstestExpected lists the assertions of pjdfstest that fail on the
// view, each with its reason; TestPjdfstest keeps it true.
const pjdfstestExpected = "testdata/pjdfstest-expected.txt"

// pjdfstestFileTimeout bounds one test file's run. Most take seconds
// (many sleep to see ctime change); rename/09.t and rename/10.t run over
// 2,000 assertions each and took more than 3 minutes in writes mode on a
// loaded 2-core machine.
const pjdfstestFileTimeout = 15 * time.Minute

// allowAll lets every path be edited: pjdfstest measures the file
// system, not the policy.
var allowAll = journal.Policy{Allow: []string{"**"}}

var pjdfstestBuild struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the pjdfstest build when the binary's tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if pjdfstestBuild.dir != "" {
		os.RemoveAll(pjdfstestBuild.dir)
	}
	os.Exit(code)
}

// buildPjdfstest unpacks and builds pjdfstest once per test binary and
// returns the directory of the build.
func buildPjdfstest(t *testing.T) string {
	t.Helper()
	testenv.Require(t, testenv.Pjdfstest)
	b := &pjdfstestBuild
	b.once.Do(func() {
		src, err := testenv.PjdfstestSource()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "benchd-pjdfstest-")
		if err != nil {
			b.err = err
			return
		}
		steps := [][]string{
			{"tar", "-xzf", src, "-C", dir},
			{"autoreconf", "-ifs"},
			{"./configure"},
			{"make", "pjdfstest"},
		}
		for _, s := range steps {
			cmd := exec.Command(s[0], s[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.err = fmt.Errorf("unable to build pjdfstest: %s: %v\n%s", strings.Join(s, " "), err, out)
				return
			}
		}
		b.dir = dir
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}

// TestPjdfstest runs the POSIX file system test suite pjdfstest against
// the view in each mode and compares the assertions that fail with
// testdata/pjdfstest-expected.txt. It fails on a failure not listed
// there and on a listed one that no longer fails. With
// BENCHD_PJDFSTEST_TAP set to a directory, each test file's TAP output
// is kept there (MODE/tests/...); with BENCHD_PJDFSTEST_RUN set to a
// regular expression, only the test files whose path (tests/chmod/00.t)
// it matches run, and only their listed failures are compared; with
// BENCHD_PJDFSTEST_FROM set to a directory BENCHD_PJDFSTEST_TAP filled,
// nothing runs: that run's output is compared with the listing. A run
// took 7-8 minutes per mode on a shared, loaded 2-core machine.
func TestPjdfstest(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Pjdfstest)
	if testing.Short() {
		t.Skip("skipping pjdfstest in -short mode")
	}
	want, err := readPjdfstestExpected(pjdfstestExpected)
	if err != nil {
		t.Fatal(err)
	}
	dir := buildPjdfstest(t)
	files, err := pjdfstestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if expr := os.Getenv("BENCHD_PJDFSTEST_RUN"); expr != "" {
		re, err := regexp.Compile(expr)
		if err != nil {
			t.Fatalf("BENCHD_PJDFSTEST_RUN: %v", err)
		}
		files = slices.DeleteFunc(files, func(f string) bool { return !re.MatchString(f) })
		for _, l := range want {
			for f := range l {
				if !re.MatchString(f) {
					delete(l, f)
				}
			}
		}
	}
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			if kept := os.Getenv("BENCHD_PJDFSTEST_FROM"); kept != "" {
				compareFailures(t, keptPjdfstest(t, filepath.Join(kept, string(mode)), files), want.forMode(string(mode)))
				return
			}
			v := mountWith(t, fsmon.Config{Mode: mode, Policy: allowAll})
			work := v.p("pjdfstest")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got := runPjdfstest(t, dir, files, work, string(mode))
			t.Logf("%d test files in %v; %d assertions failed", len(files), time.Since(start).Round(time.Second), got.count())
			v.finish()
			compareFailures(t, got, want.forMode(string(mode)))
		})
	}
}

// keptPjdfstest reads the failures of a run kept in dir.
func keptPjdfstest(t *testing.T, dir string, files []string) failures {
	t.Helper()
	got := failures{}
	for _, f := range files {
		out, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range parseTAP(out) {
			got.add(f, n)
		}
	}
	return got
}

// failures maps a test file (tests/chmod/00.t) to its failed assertions.
// Assertion 0 stands for a file whose plan is missing.
type failures map[string]map[int]bool

func (f failures) add(file string, n int) {
	if f[file] == nil {
		f[file] = map[int]bool{}
	}
	f[file][n] = true
}

func (f failures) count() int {
	c := 0
	for _, s := range f {
		c += len(s)
	}
	return c
}

// minus is what f holds and g does not, as "FILE RANGES" lines.
func (f failures) minus(g failures) []string {
	var lines []string
	for file, s := range f {
		var ns []int
		for n := range s {
			if !g[file][n] {
				ns = append(ns, n)
			}
		}
		if len(ns) > 0 {
			sort.Ints(ns)
			lines = append(lines, file+" "+formatRanges(ns))
		}
	}
	sort.Strings(lines)
	return lines
}

func compareFailures(t *testing.T, got, want failures) {
	t.Helper()
	if extra := got.minus(want); len(extra) > 0 {
		t.Errorf("assertions fail that %s does not list (list them with a reason, or fix the view):\n%s",
			pjdfstestExpected, strings.Join(extra, "\n"))
	}
	if fixed := want.minus(got); len(fixed) > 0 {
		t.Errorf("assertions listed in %s now pass (remove them):\n%s", pjdfstestExpected, strings.Join(fixed, "\n"))
	}
}

func formatRanges(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// pjdfstestFiles lists the test files below dir/tests, relative to dir.
func pjdfstestFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "tests"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".t") {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// runPjdfstest runs the test files two at a time (as prove -j2 would),
// the longest first,
// each with its working directory in work, and collects what failed.
func runPjdfstest(t *testing.T, dir string, files []string, work, mode string) failures {
	t.Helper()
	tapDir := os.Getenv("BENCHD_PJDFSTEST_TAP")
	got := failures{}
	var mu sync.Mutex
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for file := range jobs {
				out := runPjdfstestFile(dir, file, work)
				if tapDir != "" {
					p := filepath.Join(tapDir, mode, file)
					os.MkdirAll(filepath.Dir(p), 0o755)
					os.WriteFile(p, out, 0o644)
				}
				failed := parseTAP(out)
				mu.Lock()
				for _, n := range failed {
					got.add(file, n)
				}
				mu.Unlock()
			}
		}()
	}
	// The longest files first, so that two of them do not end the run
	// alone; a file's size is a fair guess at its length.
	order := slices.Clone(files)
	size := func(f string) int64 {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return 0
		}
		return st.Size()
	}
	slices.SortStableFunc(order, func(a, b string) int { return int(size(b) - size(a)) })
	for _, f := range order {
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	return got
}

// runPjdfstestFile runs one test file and returns its output. The shell
// changes into the view after its own exec: a child of the serving
// process must not be started with its working directory there (see
// the package doc).
func runPjdfstestFile(dir, file, work string) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), pjdfstestFileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `cd "$1" && exec /bin/sh "$2"`, "sh", work, filepath.Join(dir, file))
	cmd.Dir = "/"
	// On a timeout the whole process group goes, not only the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil && ctx.Err() != nil {
		fmt.Fprintf(&out, "\n# timed out after %v\n", pjdfstestFileTimeout)
	}
	return out.Bytes()
}

// parseTAP returns the failed assertions of a TAP stream: those reported
// "not ok" (but for TODO) and those of the plan that never ran; 0 when
// there is no plan.
func parseTAP(out []byte) []int {
	plan := -1
	seen := map[int]bool{}
	var failed []int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "1.."); ok && plan < 0 {
			if n, err := strconv.Atoi(strings.Fields(p + " ")[0]); err == nil {
				plan = n
			}
			continue
		}
		ok := true
		rest, found := strings.CutPrefix(line, "ok ")
		if !found {
			rest, found = strings.CutPrefix(line, "not ok ")
			ok = false
		}
		if !found {
			continue
		}
		n, err := strconv.Atoi(strings.Fields(rest + " ")[0])
		if err != nil {
			continue
		}
		seen[n] = true
		if !ok && !strings.Contains(strings.ToUpper(rest), "# TODO") {
			failed = append(failed, n)
		}
	}
	if plan < 0 {
		return append(failed, 0)
	}
	for n := 1; n <= plan; n++ {
		if !seen[n] {
			failed = append(failed, n)
		}
	}
	return failed
}

// pjdfstestListing is the parsed listing: per mode, the failures it
// expects.
type pjdfstestListing map[string]failures

func (l pjdfstestListing) forMode(mode string) failures {
	if l[mode] == nil {
		return failures{}
	}
	return l[mode]
}

// readPjdfstestExpected parses the listing. Each line that is not blank
// or a # comment is
//
//	FILE ASSERTIONS MODES CAUSE: REASON
//
// with ASSERTIONS a comma-separated list of numbers and ranges (3-5),
// MODES content, writes or both, and CAUSE by-design or bug.
func readPjdfstestExpected(p string) (pjdfstestListing, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	l := pjdfstestListing{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(why string) error { return fmt.Errorf("%s:%d: %s: %q", p, i+1, why, line) }
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, bad("want FILE ASSERTIONS MODES CAUSE: REASON")
		}
		if f[3] != "by-design:" && f[3] != "bug:" {
			return nil, bad("cause must be by-design: or bug:")
		}
		var modes []string
		switch f[2] {
		case "both":
			modes = []string{string(fsmon.ModeContent), string(fsmon.ModeWrites)}
		case string(fsmon.ModeContent), string(fsmon.ModeWrites):
			modes = []string{f[2]}
		default:
			return nil, bad("modes must be content, writes or both")
		}
		for _, r := range strings.Split(f[1], ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			z := a
			var err2 error
			if isRange {
				z, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || z < a {
				return nil, bad("bad assertion range " + r)
			}
			for n := a; n <= z; n++ {
				for _, m := range modes {
					if l[m] == nil {
						l[m] = failures{}
					}
					if l[m][f[0]][n] {
						return nil, bad(fmt.Sprintf("assertion %d listed twice", n))
					}
					l[m].add(f[0], n)
				}
			}
		}
	}
	return l, nil
}
