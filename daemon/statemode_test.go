package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"benchd.dev/daemon/store"
	"benchd.dev/internal/testenv"
)

// TestSecureState: a state directory an operator made 0777, holding a
// database left 0666, becomes 0750 root:GROUP and the database 0640, and
// the files SQLite makes beside it once the store is open (-wal, -shm)
// are 0640 too: nothing of the state is readable by others.
func TestSecureState(t *testing.T) {
	testenv.Require(t, testenv.Root)
	group, gid := "", 0
	for _, name := range []string{"benchd", "nogroup", "adm", "daemon"} {
		if g, err := user.LookupGroup(name); err == nil {
			group = name
			gid, _ = strconv.Atoi(g.Gid)
			break
		}
	}
	if group == "" {
		t.Skip("skipping: no group to give the state directory to")
	}
	for _, fresh := range []bool{true, false} {
		t.Run("fresh db "+strconv.FormatBool(fresh), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(state, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(state, 0o777) // past the umask
			db := filepath.Join(state, store.DBName)
			if !fresh {
				os.WriteFile(db, nil, 0o666)
				os.Chmod(db, 0o666)
			}
			cfg := &Config{StateDir: state, Group: group}
			if err := secureState(cfg, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(context.Background(), store.Config{Dir: state, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			checkMode(t, state, 0o750|os.ModeDir, gid)
			for _, p := range []string{db, db + "-wal", db + "-shm"} {
				checkMode(t, p, 0o640, gid)
			}
		})
	}
}

// TestSecureStateNoGroup: with its group missing, the directory is
// root's alone.
func TestSecureStateNoGroup(t *testing.T) {
	testenv.Require(t, testenv.Root)
	state := t.TempDir()
	os.Chmod(state, 0o777)
	if err := secureState(&Config{StateDir: state, Group: "benchd-no-such-group"}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	checkMode(t, state, 0o750|os.ModeDir, 0)
	checkMode(t, filepath.Join(state, store.DBName), 0o640, 0)
}

func checkMode(t *testing.T, p string, want os.FileMode, gid int) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != want || st.Uid != 0 || int(st.Gid) != gid {
		t.Errorf("%s: got %v %d:%d, want %v 0:%d", filepath.Base(p), fi.Mode(), st.Uid, st.Gid, want, gid)
	}
}
