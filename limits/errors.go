package limits

import "errors"

// Sentinel errors. Every error returned by this package wraps one of these
// (or an error of the operating system, such as a *fs.PathError) with
// context; callers test them with errors.Is.
var (
	// ErrInvalid means a Config or argument is malformed: a bad group name,
	// a negative limit, a Root without a Layout.
	ErrInvalid = errors.New("invalid cgroup configuration")

	// ErrUnavailable means the host has no usable cgroup hierarchy.
	ErrUnavailable = errors.New("cgroups unavailable")

	// ErrNoController means a controller the configuration needs (memory
	// always; pids, cpu or freezer when asked for) is not mounted or not
	// enabled for the parent group.
	ErrNoController = errors.New("cgroup controller unavailable")

	// ErrExists means a group of that name already exists below the parent:
	// a leftover of a crash (see Cleanup) or a name used twice.
	ErrExists = errors.New("cgroup already exists")

	// ErrParentBusy means that, on cgroup v2, controllers cannot be enabled
	// for the children of the parent group because the parent itself holds
	// processes (the "no internal processes" rule) that Delegate could not
	// move away: processes that are not this one's.
	ErrParentBusy = errors.New("cgroup parent holds processes")

	// ErrNoProcess means Add was given a pid that does not exist (any more).
	ErrNoProcess = errors.New("no such process")

	// ErrClosed means the Group was closed; its directories are gone.
	ErrClosed = errors.New("cgroup closed")

	// ErrNotEmpty means Kill or Close gave up (its context ended) while
	// processes were still in the group, or a directory could not be
	// removed because it was still in use.
	ErrNotEmpty = errors.New("cgroup not empty")
)
