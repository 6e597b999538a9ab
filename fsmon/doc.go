// Package fsmon is the journaled workspace: a FUSE loopback view of a
// backing directory that records every mutating operation in a journal
// and enforces the task's edit policy.
//
// # The view
//
// Mount serves the backing directory at a mountpoint through go-fuse v2.
// Every access to the workspace goes through the view; the backing
// directory itself must not be reachable by the agent (the sandbox masks
// it). Because fsmon is then the only writer of the backing directory,
// the kernel may cache entries and attributes for a long time (Config.
// CacheTimeout): repeated lookups and stats never reach the daemon.
//
// # The journal
//
// The journal (package journal) gets one record per mutating operation
// or denied attempt: create, mkdir, mknod, open for writing, write (in
// writes mode), truncate, rename, unlink, rmdir, symlink, link, chmod,
// chown, utimens, setxattr, removexattr, fallocate, copy_file_range, and
// release of a file that was open for writing. Record 1 (mount) carries
// the hash of the initial tree's manifest, the last record (unmount) the
// final tree's; every file's content in both trees and at every release
// is stored in the content-addressed blob store, so the tree can be
// rebuilt at any record.
//
// Each record names the caller: pid (in benchd's pid namespace), uid, and
// the command name read from /proc/PID/comm when the operation arrives.
// A process that exits before its operation is served is recorded with
// an empty command name.
//
// # Modes
//
// In ModeContent (the default) reads and writes use FUSE passthrough: the
// kernel sends them straight to the backing file and they never reach
// fsmon, so I/O runs at native speed. fsmon still sees every open for
// writing, create, setattr, rename, unlink and release, and records the
// file's content hash at each release of a written file (and, for files
// still open, at unmount). A shared mmap write reaches the backing file
// through passthrough and is captured at the release that follows
// munmap and close.
//
// In ModeWrites passthrough is off and every write is recorded with its
// offset and length (content is still captured at release).
//
// # Policy
//
// The policy (journal.Policy) has allow and ignore globs. A mutating
// operation on an allowed path is performed and recorded as allowed; on
// an ignored path (noise such as __pycache__/) it is performed and
// recorded as ignored, and never counts in a changeset; on any other path
// it is refused with EACCES and recorded as denied. Operations that touch
// two paths need both to be writable: a rename must not move a protected
// file away (for a directory, every path below it is checked, old name
// and new), a hard link must not give a protected file a second, writable
// name, and neither may replace a protected path. Symlinks are resolved by
// the kernel, so opening an allowed symlink that points at a protected
// file reaches that file's node and is refused there. Setuid and setgid
// bits are refused (EPERM) on create, mkdir and chmod, and so are device
// nodes. Ioctls are refused (ENOTTY) so that no flag can be set on a
// backing file through a read-only descriptor.
//
// # Forking from the serving process
//
// Never start a child process of the serving process with its working
// directory in the view (exec.Cmd.Dir): Go forks with CLONE_VM|CLONE_VFORK,
// and the child's chdir waits for a FUSE reply while the forking thread
// holds its scheduler slot, so a garbage collection that needs every
// thread stopped never completes and nothing answers. Start a helper that
// changes directory after its own exec (benchd watch does), or enter the
// view from a sandbox whose init mounts it after exec.
package fsmon
