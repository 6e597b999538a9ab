// Package pgtest runs a private PostgreSQL cluster for tests: Debian's
// server binaries (testenv.Postgres), a data directory in a new
// temporary directory, no TCP listener (listen_addresses is empty) and
// one unix socket in that directory, fsync off. It never uses or touches
// the machine's own clusters or their service.
//
// initdb and the server refuse to run as root, so as root the cluster
// runs as nobody (the temporary directory is given to nobody); as any
// other user it runs as that user.
//
// A test binary shares one cluster (Shared, started on first use) and
// each test gets a database of its own (Database); TestMain stops the
// cluster with StopShared. A test binary killed before TestMain returns
// leaves its cluster running: its directory is named in the log, and
// Stop's pid is in DIR/data/postmaster.pid.
//
// Inputs are trusted: they are the test's own.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"benchd.dev/internal/testenv"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Cluster is a running private cluster.
type Cluster struct {
	dir  string // the temporary directory: data/, the socket, the log
	bin  string // the server binaries
	cred *syscall.Credential
	pid  int // the postmaster
	n    atomic.Int64
}

// Start initializes and starts a cluster in a new temporary directory.
func Start(ctx context.Context) (c *Cluster, err error) {
	bin, err := testenv.PostgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("unable to start postgres: %w", err)
	}
	c = &Cluster{dir: dir, bin: bin}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("unable to start postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("unable to start postgres: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	if err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--no-locale", "--no-sync"); err != nil {
		return nil, err
	}
	opts := strings.Join([]string{
		"-c listen_addresses=''",
		"-c unix_socket_directories=" + dir,
		"-c port=5432",
		"-c fsync=off",
		"-c synchronous_commit=off",
		"-c full_page_writes=off",
		"-c max_connections=100",
	}, " ")
	if err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, c.logTail())
	}
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("unable to start postgres: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if c.pid, err = strconv.Atoi(strings.TrimSpace(first)); err != nil || c.pid <= 1 {
		return nil, fmt.Errorf("unable to start postgres: postmaster.pid starts with %q", first)
	}
	return c, nil
}

// run runs one of the server binaries as the cluster's user.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + c.dir}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("unable to run %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// URL returns the URL of database name in the cluster.
func (c *Cluster) URL(name string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + name,
		RawQuery: url.Values{"host": {c.dir}, "sslmode": {"disable"}}.Encode()}
	return u.String()
}

// NewDatabase creates an empty database with a name not used before in
// the cluster and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test%d", c.n.Add(1))
	db, err := sql.Open("pgx", c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("unable to create database: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("unable to create database: %w", err)
	}
	return c.URL(name), nil
}

// Stop stops the cluster's postmaster (a fast shutdown: SIGINT to the
// pid it started with), waits for it to exit, and removes the directory.
func (c *Cluster) Stop() error {
	if err := syscall.Kill(c.pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("unable to stop postgres: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(c.pid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("unable to stop postgres: pid %d still runs after 30 s (directory %s)", c.pid, c.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return os.RemoveAll(c.dir)
}

var shared struct {
	mu  sync.Mutex
	c   *Cluster
	err error
}

// Shared returns the test binary's cluster, starting it on the first
// call. A failed start is reported to every caller.
func Shared() (*Cluster, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = Start(ctx)
	}
	return shared.c, shared.err
}

// StopShared stops the shared cluster, if it was started; TestMain calls
// it after the tests.
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		return nil
	}
	err := shared.c.Stop()
	shared.c, shared.err = nil, errors.New("the shared cluster was stopped")
	return err
}

// Database returns the URL of a new database in the shared cluster, or
// skips t (fails it in CI) when PostgreSQL is not installed.
func Database(t testing.TB) string {
	t.Helper()
	testenv.Require(t, testenv.Postgres)
	c, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}
