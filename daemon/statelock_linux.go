package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// stateLockName is the file in the state directory whose flock says which
// benchd owns the directory. The file holds the owner's pid, for the
// refusal's message; the lock, not the file, is what decides.
const stateLockName = "benchd.lock"

// lockState takes the state directory for this process: an exclusive,
// non-blocking flock on STATE/benchd.lock, held until the returned file
// is closed (or the process ends, however it ends: the kernel drops the
// lock with the last descriptor). A second benchd on the same directory
// gets an error matching errConflict naming the pid of the owner, before
// it has changed anything there.
func lockState(dir string) (*os.File, error) {
	path := filepath.Join(dir, stateLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("unable to open the state directory's lock: %w", err)
	}
	if err := flockNB(f); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("unable to lock the state directory: %w", err)
		}
		return nil, fmt.Errorf("state directory %s is in use by another benchd (%s holds %s): %w",
			dir, stateOwner(path), path, errConflict)
	}
	pid := strconv.Itoa(os.Getpid()) + "\n"
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(pid), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("unable to write the state directory's lock: %w", err)
	}
	return f, nil
}

// flockNB takes an exclusive flock on f without waiting.
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// stateOwner names the process the lock file at path says holds it.
func stateOwner(path string) string {
	b, err := os.ReadFile(path)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || pid <= 0 {
		return "a process that has not written its pid yet"
	}
	return "pid " + strconv.Itoa(pid)
}
