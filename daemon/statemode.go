package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"benchd.dev/daemon/store"
)

// State directory and database modes: readable by root and the API's
// group only, whatever the directory had (an operator's mkdir with a
// loose umask, a copy, a restore). The SQLite database is made here
// when missing so that it is born 0640: SQLite gives its -wal and -shm
// files the database file's mode.
const (
	stateDirMode = 0o750
	stateDBMode  = 0o640
)

// secureState sets the state directory's owner (root, group cfg.Group,
// root's own when that group does not exist) and mode, and those of the
// SQLite database files; with PostgreSQL there are none.
func secureState(cfg *Config, log *slog.Logger) error {
	gid := 0
	if g, err := user.LookupGroup(cfg.Group); err == nil {
		gid, _ = strconv.Atoi(g.Gid)
	} else {
		log.Warn("the state directory's group does not exist: root's only", "group", cfg.Group)
	}
	paths := []string{cfg.StateDir}
	if !store.IsPostgres(cfg.Database) {
		db := filepath.Join(cfg.StateDir, store.DBName)
		f, err := os.OpenFile(db, os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW, stateDBMode)
		if err != nil {
			return fmt.Errorf("unable to create the database: %w", err)
		}
		f.Close()
		paths = append(paths, db, db+"-wal", db+"-shm")
	}
	for i, p := range paths {
		mode := os.FileMode(stateDBMode)
		if i == 0 {
			mode = stateDirMode
		}
		if err := os.Chmod(p, mode); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("unable to secure the state directory: %w", err)
		}
		if os.Geteuid() == 0 {
			if err := os.Chown(p, 0, gid); err != nil {
				return fmt.Errorf("unable to secure the state directory: %w", err)
			}
		}
	}
	return nil
}
