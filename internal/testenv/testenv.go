// Package testenv gates tests that need root or a kernel feature.
//
// Every such test calls Require with the features it needs. Where a
// feature is missing the test is skipped with the reason; where the
// environment variable CI is set (CI runs as root on a machine that has
// every feature), a missing feature fails the test instead, so that a
// test can never skip silently in CI.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Feature is something a test needs from the machine.
type Feature string

// The features tests may ask for.
const (
	Root       Feature = "root"
	FUSE       Feature = "fuse"       // /dev/fuse usable by this process
	Cgroups    Feature = "cgroups"    // a writable cgroup hierarchy below our own cgroup
	Netns      Feature = "netns"      // new network namespaces
	Userns     Feature = "namespaces" // mount, pid, ipc and uts namespaces
	Python     Feature = "python3"    // Debian's /usr/bin/python3
	Pytest     Feature = "pytest"     // Debian's python3-pytest
	Bindfs     Feature = "bindfs"
	Bubblewrap Feature = "bwrap"
	Node       Feature = "node"     // node on PATH
	Git        Feature = "git"      // git on PATH
	CC         Feature = "cc"       // a C compiler as cc on PATH
	Chromium   Feature = "chromium" // Debian's /usr/bin/chromium, for headless page tests
	// Loop: loop devices (/dev/loop-control and a free /dev/loopN) and
	// mkfs.ext4 (e2fsprogs), for the attempts' disks.
	Loop Feature = "loop"
	// NodeAgents: the agent CLIs codex, claude and qwen installed by
	// scripts/setup-agents under AgentsPrefix, and node to run qwen.
	NodeAgents Feature = "node-agents"
	// Postgres: Debian's PostgreSQL server binaries (initdb, pg_ctl,
	// postgres) under /usr/lib/postgresql/VERSION/bin, for a private
	// cluster (internal/pgtest).
	Postgres Feature = "postgres"
	// Pjdfstest: the pjdfstest source kept outside the repository
	// (ThirdParty) and the tools that build and run it (autoreconf,
	// automake, libtoolize, make, cc, prove).
	Pjdfstest Feature = "pjdfstest"
)

// ThirdPartyEnv names the environment variable that overrides where
// ThirdParty looks.
const ThirdPartyEnv = "BENCHD_THIRD_PARTY"

// ThirdParty is the directory of third-party sources that tests build
// at test time and the repository does not hold: $BENCHD_THIRD_PARTY,
// or else shared/third_party in the nearest directory above the
// repository's root (the directory holding go.mod above the working
// directory) that has one: ../shared/third_party for a clone beside the
// project's shared directory, and the same directory for a clone made
// deeper below it (as a CI checkout may be). Where none has one, it is
// ../shared/third_party, for the missing feature's message.
func ThirdParty() (string, error) {
	if d := os.Getenv(ThirdPartyEnv); d != "" {
		return filepath.Abs(d)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
	first := filepath.Join(filepath.Dir(dir), "shared", "third_party")
	for up := filepath.Dir(dir); ; {
		d := filepath.Join(up, "shared", "third_party")
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, nil
		}
		next := filepath.Dir(up)
		if next == up {
			return first, nil
		}
		up = next
	}
}

// PjdfstestSource is the path of pjdfstest's source archive.
func PjdfstestSource() (string, error) {
	d, err := ThirdParty()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pjdfstest", "pjdfstest-src.tar.gz"), nil
}

// AgentsPrefix is where scripts/setup-agents installs the agent CLIs
// (agents.DefaultPrefix).
const AgentsPrefix = "/opt/benchd-agents"

var (
	mu    sync.Mutex
	cache = map[Feature]error{}
)

// InCI reports whether the tests run in CI, where no skip is allowed.
func InCI() bool { return os.Getenv("CI") != "" }

// Require skips t (or fails it, in CI) unless every feature is available.
func Require(t testing.TB, features ...Feature) {
	t.Helper()
	for _, f := range features {
		if err := Check(f); err != nil {
			if InCI() {
				t.Fatalf("test needs %s, which is missing in CI: %v", f, err)
			}
			t.Skipf("skipping: needs %s: %v", f, err)
		}
	}
}

// Check reports why feature f is unavailable, or nil when it is there.
func Check(f Feature) error {
	mu.Lock()
	defer mu.Unlock()
	if err, ok := cache[f]; ok {
		return err
	}
	err := probe(f)
	cache[f] = err
	return err
}

func probe(f Feature) error {
	switch f {
	case Root:
		if os.Geteuid() != 0 {
			return fmt.Errorf("running as uid %d, not root", os.Geteuid())
		}
		return nil
	case FUSE:
		if err := probe(Root); err != nil {
			return err
		}
		fd, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("cannot open /dev/fuse: %w", err)
		}
		fd.Close()
		return nil
	case Cgroups:
		if err := probe(Root); err != nil {
			return err
		}
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), ":memory:") && !strings.HasPrefix(string(b), "0::") {
			return errors.New("no memory controller in /proc/self/cgroup")
		}
		return nil
	case Netns, Userns:
		if err := probe(Root); err != nil {
			return err
		}
		out, err := exec.Command("unshare", "--net", "--mount", "--pid", "--fork", "--ipc", "--uts", "true").CombinedOutput()
		if err != nil {
			return fmt.Errorf("unshare failed: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	case Python:
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			return fmt.Errorf("Debian's python3 is not installed: %w", err)
		}
		return nil
	case Pytest:
		out, err := exec.Command("/usr/bin/python3", "-c", "import pytest").CombinedOutput()
		if err != nil {
			return fmt.Errorf("python3-pytest is not installed: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	case Postgres:
		_, err := PostgresBin()
		return err
	case Chromium:
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			return fmt.Errorf("Debian's chromium is not installed: %w", err)
		}
		return nil
	case NodeAgents:
		if _, err := exec.LookPath("node"); err != nil {
			return fmt.Errorf("node is not installed: %w", err)
		}
		for _, cli := range []string{"codex", "claude", "qwen"} {
			p := AgentsPrefix + "/node_modules/.bin/" + cli
			fi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s is not installed (run scripts/setup-agents): %w", cli, err)
			}
			if fi.Mode().Perm()&0o111 == 0 {
				return fmt.Errorf("%s is not executable", p)
			}
		}
		return nil
	case Loop:
		if err := probe(Root); err != nil {
			return err
		}
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			return fmt.Errorf("mkfs.ext4 is not installed (Debian's e2fsprogs): %w", err)
		}
		ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("no loop devices (the loop module is not loaded, or /dev is a container's): %w", err)
		}
		defer ctl.Close()
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("no free loop device: LOOP_CTL_GET_FREE: %w", err)
		}
		if _, err := os.Stat(fmt.Sprintf("/dev/loop%d", n)); err != nil {
			return fmt.Errorf("the free loop device has no node in /dev: %w", err)
		}
		return nil
	case Pjdfstest:
		src, err := PjdfstestSource()
		if err != nil {
			return err
		}
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("no pjdfstest source (set %s to the directory holding pjdfstest/): %w", ThirdPartyEnv, err)
		}
		for _, tool := range []string{"autoreconf", "automake", "libtoolize", "make", "cc", "prove", "tar"} {
			if _, err := exec.LookPath(tool); err != nil {
				return fmt.Errorf("%s is not installed (scripts/setup-deps installs autoconf, automake and libtool): %w", tool, err)
			}
		}
		return nil
	case Bindfs, Bubblewrap, Node, Git, CC:
		if _, err := exec.LookPath(string(f)); err != nil {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown feature %q", f)
}

// PostgresBin returns the directory of Debian's PostgreSQL server
// binaries, the newest version installed.
func PostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		ok := true
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(d, b)); err != nil || fi.Mode().Perm()&0o111 == 0 {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server under /usr/lib/postgresql/*/bin (apt-get install postgresql-15)")
}

// pgVersion is the major version in a /usr/lib/postgresql/VERSION/bin path.
func pgVersion(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}
