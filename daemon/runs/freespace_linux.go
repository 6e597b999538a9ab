package runs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DefaultReserveBytes is the free space, beyond an attempt's whole
// disk, that the state directory's file system must have for an attempt
// to start (Config.ReserveBytes).
const DefaultReserveBytes = 1 << 30

// ErrDiskFull is the class of the refusal to start an attempt on a
// nearly full disk: an infra error, found before the agent starts.
var ErrDiskFull = fmt.Errorf("the state directory's disk is nearly full")

// checkFreeSpace refuses an attempt whose disk, filled to its size
// (need bytes), would leave less than the reserve free on the state
// directory's file system. It runs before anything of the attempt is
// made, so that a full disk ends the attempt before its agent starts,
// never while it runs.
func (e *Engine) checkFreeSpace(need int64) error {
	statfs := e.cfg.statfs
	if statfs == nil {
		statfs = unix.Statfs
	}
	var st unix.Statfs_t
	if err := statfs(e.cfg.StateDir, &st); err != nil {
		return fmt.Errorf("unable to read the free space of %s: %w", e.cfg.StateDir, err)
	}
	free := int64(st.Bavail) * st.Bsize
	reserve := e.cfg.ReserveBytes
	if reserve == 0 {
		reserve = DefaultReserveBytes
	}
	if reserve < 0 {
		return nil
	}
	if free < need+reserve {
		return fmt.Errorf("%w: %d MiB free on %s, the attempt needs %d MiB for its disk and %d MiB kept free: attempt not started",
			ErrDiskFull, free>>20, e.cfg.StateDir, need>>20, reserve>>20)
	}
	return nil
}
