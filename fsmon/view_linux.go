package fsmon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// Mode chooses how writes are observed.
type Mode string

// The modes of a view.
const (
	ModeContent Mode = "content" // passthrough I/O; content captured at release
	ModeWrites  Mode = "writes"  // no passthrough; every write journaled
)

// ParseMode parses a mode name; "" means ModeContent.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeContent:
		return ModeContent, nil
	case ModeWrites:
		return ModeWrites, nil
	}
	return "", fmt.Errorf("%w: mode %q (want content or writes)", ErrInvalid, s)
}

// Errors of the package.
var (
	ErrInvalid = errors.New("invalid argument")
	ErrBusy    = errors.New("mountpoint busy")
)

// Config describes one view.
type Config struct {
	Backing    string          // the real files
	Mountpoint string          // an empty directory
	Journal    *journal.Writer // receives the records; the caller closes it
	Policy     journal.Policy
	Mode       Mode
	// CacheTimeout is the kernel's entry and attribute cache time; fsmon
	// is the only writer of Backing, so it may be long. Default 1 hour.
	CacheTimeout time.Duration
	// MaxFiles caps the entries (files, directories, symlinks, names
	// of hard links) the tree may hold, the initial tree's included:
	// creating more fails with EDQUOT. Default DefaultMaxFiles.
	MaxFiles int64
	// MaxRecords caps the journal's records: once it holds that many,
	// every mutating operation fails with ENOSPC. Default
	// DefaultMaxRecords.
	MaxRecords int64
	// StorageBytes is the workspace's storage size; the view stores at
	// most BlobFactor times as many bytes of content as blobs (see
	// "Caps" in the package doc). Default DefaultStorageBytes.
	StorageBytes int64
	// MaxOpenFiles bounds the backing descriptors the view holds
	// (one per file the agent holds open, a shared one per file read
	// through the page cache): an open past it fails with EMFILE.
	// Default DefaultMaxOpenFiles().
	MaxOpenFiles int
	// MaxJournalBytes caps the journal's size: once it holds that many
	// bytes, every mutating operation fails with ENOSPC, as at
	// MaxRecords. Default DefaultMaxJournalBytes.
	MaxJournalBytes int64
	Logger          *slog.Logger
}

// The caps' defaults (see "Caps" in the package doc).
const (
	DefaultMaxFiles     = 100_000
	DefaultMaxRecords   = 1_000_000
	DefaultStorageBytes = 1 << 30
	// DefaultMaxJournalBytes is 256 MiB of journal lines: room for the
	// records of DefaultMaxFiles creates and their releases.
	DefaultMaxJournalBytes = 256 << 20
	// BlobFactor times Config.StorageBytes is the blob budget: room
	// for the initial and the final tree and content captured in
	// between.
	BlobFactor = 4
)

// View is a mounted, journaled workspace.
type View struct {
	cfg     Config
	backing string
	// backingReal is backing with symlinks resolved: the prefix of the
	// names the kernel gives the backing descriptors.
	backingReal string
	// rootFile is an O_PATH descriptor of the backing directory,
	// rootFd its number, dev its device: every path of the backing
	// tree is reached relative to it (see at_linux.go). It stays open
	// while the view serves.
	rootFile *os.File
	rootFd   int
	dev      uint64
	start    time.Time
	server   *fuse.Server
	root     *node
	log      *slog.Logger
	callers  callers
	// cpu is the CPU time of the view's requests in nanoseconds
	// (cpu_linux.go).
	cpu atomic.Int64

	// renameMu orders release records, whose path is read from the
	// backing descriptor, with the records of renames and unlinks,
	// which change that path: a release is recorded wholly before or
	// wholly after each of them.
	renameMu sync.RWMutex
	// contentMu orders the records that carry a file's content (a
	// release's capture, a truncate by path) as their reads of it: each
	// reads the content and appends its record under the lock of the
	// file's inode, taken before renameMu. Without it a release the
	// kernel sends after close returns could read the content, let a
	// truncate that follows the close read and record the new content,
	// and then record the older one last. Striped by inode number.
	contentMu [64]sync.Mutex
	// releasing holds the opens to uncount when their RELEASE is
	// finished, by the request's cancel channel (node.release).
	releasing sync.Map
	// captures holds the releases whose capture waits
	// (capture_linux.go).
	captures captureQueue
	// shared counts the nodes' shared read-only backing files
	// (iomode_linux.go).
	shared sharedFiles
	// fds is every backing descriptor the view holds (files_linux.go).
	fds openFiles

	// blobs is the journal's blob store, counting what the view adds.
	blobs *journal.Blobs
	// maxBlobBytes is the blob budget.
	maxBlobBytes int64

	mu sync.Mutex
	// open holds every file handle open for writing, for capture at
	// unmount.
	open map[*handle]struct{}
	// counted lists the handles of open whose content is not stored
	// yet, each with the size last seen (handle.size); openBytes is
	// the sum. A budget check refreshes sizeRefresh of them in turn,
	// from refreshAt (caps_linux.go), never all.
	counted   []*handle
	openBytes int64
	refreshAt int
	// sizeChecks counts the sizes asked by budget checks (tests).
	sizeChecks int64
	// waiting holds the handles released whose capture waits
	// (capture_linux.go), with their size at the release;
	// waitingBytes is the sum.
	waiting      map[*handle]int64
	waitingBytes int64
	records      int64
	counts       journal.Counts
	files        int64 // entries of the tree, reserved ones included
	blobBytes    int64 // bytes of the blobs the view added
	capsHit      []string
	// refused counts the operations each cap of capsHit refused.
	refused   map[string]*capCount
	unmounted bool
	err       error // first journal error; the view refuses writes after it
	// The trees at mount and at unmount, for the changeset.
	initial, final journal.Tree
}

// Stats counts what the view has journaled so far.
type Stats struct {
	Records   int64    // records appended, mount record included
	Edits     int64    // operations performed (journal.Counts)
	Denied    int64    // operations refused by the policy (journal.Counts)
	Files     int64    // entries the tree holds
	BlobBytes int64    // bytes of content the view stored as blobs
	Caps      []string // the caps hit (journal.CapFiles, ...), in order; each has one cap record
	OpenFiles int      // backing descriptors the view holds now (Config.MaxOpenFiles)
	// CPU is the CPU time benchd's threads spent serving the view's
	// requests so far (cpu_linux.go says what it counts).
	CPU time.Duration
}

// Mount snapshots the backing directory into the journal (record 1),
// mounts the view and returns it. On error nothing stays mounted.
func Mount(ctx context.Context, cfg Config) (*View, error) {
	if cfg.Journal == nil {
		return nil, fmt.Errorf("%w: no journal", ErrInvalid)
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	cfg.Mode = mode
	if cfg.CacheTimeout <= 0 {
		cfg.CacheTimeout = time.Hour
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.StorageBytes <= 0 {
		cfg.StorageBytes = DefaultStorageBytes
	}
	if cfg.MaxOpenFiles <= 0 {
		cfg.MaxOpenFiles = DefaultMaxOpenFiles()
	}
	if cfg.MaxJournalBytes <= 0 {
		cfg.MaxJournalBytes = DefaultMaxJournalBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	backing, err := filepath.Abs(cfg.Backing)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(backing); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: backing %s is not a directory", ErrInvalid, backing)
	}
	backingReal, err := filepath.EvalSymlinks(backing)
	if err != nil {
		return nil, err
	}
	mnt, err := filepath.Abs(cfg.Mountpoint)
	if err != nil {
		return nil, err
	}
	if err := checkMountpoint(mnt); err != nil {
		return nil, err
	}

	v := &View{cfg: cfg, backing: backing, backingReal: backingReal, open: map[*handle]struct{}{}, waiting: map[*handle]int64{}, log: cfg.Logger.With("component", "fsmon", "mountpoint", mnt)}
	v.maxBlobBytes = BlobFactor * cfg.StorageBytes
	// Shared files kept with no handle take at most a quarter of the
	// view's descriptors.
	v.shared.max = min(maxSharedFiles(), cfg.MaxOpenFiles/4)
	v.blobs = &journal.Blobs{Dir: cfg.Journal.Blobs().Dir, Added: v.blobAdded}
	initial, err := journal.SnapshotTree(backing, v.blobs)
	if err != nil {
		return nil, fmt.Errorf("unable to snapshot %s: %w", backing, err)
	}
	mf := initial.ManifestHash()
	v.initial = initial
	v.files = int64(len(initial))
	v.start = time.Now()
	if err := v.append(journal.Record{Op: journal.OpMount, Result: "ok", SHA256: mf}); err != nil {
		return nil, err
	}
	// The mount record is in the file before anything runs in the view:
	// a journal without it cannot be recovered (journal.Recover), and
	// benchd killed within the writer's first batch interval would
	// otherwise leave an empty file.
	if err := cfg.Journal.Flush(); err != nil {
		return nil, err
	}

	rootFd, err := unix.Open(backing, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("unable to open %s: %w", backing, err)
	}
	v.rootFile, v.rootFd = os.NewFile(uintptr(rootFd), backing), rootFd
	var st unix.Stat_t
	if err := unix.Fstat(rootFd, &st); err != nil {
		v.rootFile.Close()
		return nil, err
	}
	v.dev = st.Dev
	lroot := &fs.LoopbackRoot{Path: backing, Dev: st.Dev}
	v.root = &node{LoopbackNode: &fs.LoopbackNode{RootData: lroot}, v: v}
	lroot.RootNode = v.root

	timeout := cfg.CacheTimeout
	negative := time.Second
	opts := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &negative,
		// A file of mode 0000 is shown as it is: without this the
		// bridge shows it as 0644 (0755 for a directory), and the
		// kernel's permission checks would let any caller read it.
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			AllowOther:        true,
			DirectMountStrict: true,
			DirectMountFlags:  syscall.MS_NOSUID | syscall.MS_NODEV,
			// The mount's source in mountinfo, which the agent
			// reads: never the backing path (benchd's state).
			FsName:   "benchd",
			Name:     "benchd",
			MaxWrite: 1 << 20,
			// The kernel checks the mode bits and owners of the
			// view's files against the caller, as on a local file
			// system: without it every caller acts as benchd (root).
			Options: []string{"default_permissions"},
			// Without KILLPRIV_V2 every write(2) costs a GETXATTR of
			// security.capability, even with passthrough; with it,
			// only the first write after the inode's attributes were
			// (re)loaded does. NO_OPENDIR_SUPPORT: see rawView.
			ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2 | fuse.CAP_NO_OPENDIR_SUPPORT,
		},
	}
	if cfg.Mode == ModeWrites {
		opts.MountOptions.DisabledCapabilities |= fuse.CAP_PASSTHROUGH
	}
	raw := &rawView{RawFileSystem: fs.NewNodeFS(v.root, opts), v: v}
	server, err := fuse.NewServer(raw, mnt, &opts.MountOptions)
	if err != nil {
		v.rootFile.Close()
		return nil, fmt.Errorf("unable to mount %s: %w", mnt, err)
	}
	go func() {
		server.Serve()
		// The connection ended (unmounted, or aborted by a cleanup of
		// a crashed benchd's views): the root's descriptor goes, so it
		// holds the backing file system no longer.
		v.rootFile.Close()
	}()
	if err := server.WaitMount(); err != nil {
		// The serve loop ends by itself when the mount fails.
		v.rootFile.Close()
		return nil, fmt.Errorf("unable to mount %s: %w", mnt, err)
	}
	v.server = server
	v.startCaptures()
	return v, nil
}

// rawView sits between the kernel and go-fuse's node bridge. It answers
// OPENDIR with ENOSYS: from then on the kernel opens directories without
// asking (FUSE_NO_OPENDIR_SUPPORT), sends neither OPENDIR nor
// RELEASEDIR, and caches listings as if FOPEN_CACHE_DIR and
// FOPEN_KEEP_CACHE had been returned. That is safe because fsmon is the
// only writer of the backing tree and every change it makes goes through
// the kernel, which drops the cached listing of a directory it changes.
// It saves two round trips per directory per listing (a stat walk, git
// status and grep -r open every directory of the tree).
//
// Listings and fsyncdir then arrive with file handle 0. Each is served
// through a directory handle opened for that one request and positioned
// at the kernel's offset (the backing file system's own cookie).
type rawView struct {
	fuse.RawFileSystem
	v *View
}

// Release finishes the RELEASE of a file, then uncounts its open
// (iomode_linux.go).
func (r *rawView) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	defer r.timed()()
	r.RawFileSystem.Release(cancel, in)
	r.v.released(cancel)
}

func (r *rawView) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

// withDir runs fn with a directory handle: fh when the kernel sent one,
// else one opened for the call.
func (r *rawView) withDir(cancel <-chan struct{}, h *fuse.InHeader, fh uint64, fn func(fh uint64) fuse.Status) fuse.Status {
	if fh != 0 {
		return fn(fh)
	}
	var out fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: *h, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}, &out); !st.Ok() {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: *h, Fh: out.Fh})
	return fn(out.Fh)
}

func (r *rawView) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.timed()()
	return r.withDir(cancel, &in.InHeader, in.Fh, func(fh uint64) fuse.Status {
		req := *in
		req.Fh = fh
		return r.RawFileSystem.ReadDir(cancel, &req, out)
	})
}

func (r *rawView) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.timed()()
	return r.withDir(cancel, &in.InHeader, in.Fh, func(fh uint64) fuse.Status {
		req := *in
		req.Fh = fh
		return r.RawFileSystem.ReadDirPlus(cancel, &req, out)
	})
}

func (r *rawView) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.timed()()
	return r.withDir(cancel, &in.InHeader, in.Fh, func(fh uint64) fuse.Status {
		req := *in
		req.Fh = fh
		return r.RawFileSystem.FsyncDir(cancel, &req)
	})
}

// checkMountpoint refuses a mountpoint that is not an empty directory or
// is already a mountpoint.
func checkMountpoint(mnt string) error {
	st, err := os.Stat(mnt)
	if err != nil {
		return fmt.Errorf("%w: mountpoint: %w", ErrInvalid, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: mountpoint %s is not a directory", ErrInvalid, mnt)
	}
	if mounted, _ := IsMountpoint(mnt); mounted {
		return fmt.Errorf("%w: %s is already a mountpoint", ErrBusy, mnt)
	}
	ents, err := os.ReadDir(mnt)
	if err != nil {
		return fmt.Errorf("%w: mountpoint: %w", ErrInvalid, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: mountpoint %s is not empty", ErrBusy, mnt)
	}
	return nil
}

// IsMountpoint reports whether dir is the root of a mount (its device
// differs from its parent's, or /proc/self/mountinfo lists it).
func IsMountpoint(dir string) (bool, error) {
	mounts, err := mountpoints()
	if err != nil {
		return false, err
	}
	clean := filepath.Clean(dir)
	for _, m := range mounts {
		if m.point == clean {
			return true, nil
		}
	}
	return false, nil
}

// Stats returns the view's counters, after finishing the captures of
// the releases the view has received.
func (v *View) Stats() Stats {
	v.flushAll()
	held := v.openFilesHeld()
	v.mu.Lock()
	defer v.mu.Unlock()
	return Stats{Records: v.records, Edits: v.counts.Edits, Denied: v.counts.Denied, Files: v.files, BlobBytes: v.blobBytes, Caps: append([]string(nil), v.capsHit...), OpenFiles: held, CPU: time.Duration(v.cpu.Load())}
}

// Backing returns the backing directory.
func (v *View) Backing() string { return v.backing }

// Unmount captures the content of files still open for writing, unmounts
// the view (lazily if it is busy), snapshots the final tree and appends
// the unmount record. It does not close the journal.
func (v *View) Unmount(ctx context.Context) error {
	v.mu.Lock()
	if v.unmounted {
		v.mu.Unlock()
		return nil
	}
	v.unmounted = true
	v.mu.Unlock()
	// The releases received are captured as releases, not as files
	// still open.
	v.stopCaptures()
	v.mu.Lock()
	open := make([]*handle, 0, len(v.open))
	for h := range v.open {
		open = append(open, h)
	}
	v.mu.Unlock()
	for _, h := range open {
		h.capture(ctx, true)
	}
	var errs []error
	if err := v.server.Unmount(); err != nil {
		// Busy: detach it so that nothing stays mounted; the serve loop
		// ends when the last reference goes, and closes the root's
		// descriptor then (see Mount).
		if err2 := unix.Unmount(v.mountpoint(), unix.MNT_DETACH); err2 != nil {
			errs = append(errs, fmt.Errorf("unable to unmount %s: %w (lazy: %w)", v.mountpoint(), err, err2))
		}
	} else {
		v.rootFile.Close()
	}
	// No request is served any more (or, detached, none that matters):
	// the descriptors of files whose RELEASE the kernel dropped with
	// the mount are closed here, not by the garbage collector.
	v.closeAll()
	final, err := journal.SnapshotTree(v.backing, v.blobs)
	if err != nil {
		errs = append(errs, fmt.Errorf("unable to snapshot the final tree: %w", err))
	} else if err := v.setFinal(final); err != nil {
		errs = append(errs, err)
	} else if err := v.appendCapCounts(); err != nil {
		errs = append(errs, err)
	} else if err := v.append(journal.Record{Op: journal.OpUnmount, Result: "ok", SHA256: final.ManifestHash()}); err != nil {
		errs = append(errs, err)
	}
	if err := v.cfg.Journal.Flush(); err != nil {
		errs = append(errs, err)
	}
	v.callers.close()
	v.closeShared()
	return errors.Join(errs...)
}

// UnmountInterrupted is Unmount for an attempt cut short (canceled, out
// of time, benchd stopping): it first appends an interrupted record whose
// Name is cause, so that the journal says it ended early, then unmounts
// as Unmount does. After Unmount it does nothing.
func (v *View) UnmountInterrupted(ctx context.Context, cause string) error {
	v.mu.Lock()
	done := v.unmounted
	v.mu.Unlock()
	if done {
		return nil
	}
	// The releases received before the cut are recorded before it.
	v.flushAll()
	ierr := v.append(journal.Record{Op: journal.OpInterrupted, Name: cause, Result: "ok"})
	return errors.Join(ierr, v.Unmount(ctx))
}

func (v *View) mountpoint() string { return filepath.Clean(v.cfg.Mountpoint) }

// append stamps and appends a record.
func (v *View) append(r journal.Record) error {
	now := time.Now()
	r.Mono = int64(now.Sub(v.start))
	r.Wall = now.UTC()
	_, err := v.cfg.Journal.Append(r)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		if v.err == nil {
			v.err = err
			v.log.Error("journal append failed; refusing further changes", "err", err)
		}
		return err
	}
	v.records++
	v.counts.Add(r)
	return nil
}

// journalBroken reports whether an earlier append failed: then every
// mutating operation is refused, since it could not be recorded.
func (v *View) journalBroken() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err != nil
}

func (v *View) setFinal(t journal.Tree) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.final = t
	return nil
}

// Changeset is the net change between the tree at mount and the tree at
// unmount, ignored paths left out. It is an error before Unmount.
func (v *View) Changeset() (journal.Changeset, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.final == nil {
		return nil, fmt.Errorf("%w: the view is still mounted", ErrInvalid)
	}
	return journal.DiffTrees(v.initial, v.final, v.cfg.Policy.IsIgnored), nil
}

// lockContent takes the content lock of inode (View.contentMu) and
// returns its unlock.
func (v *View) lockContent(inode *fs.Inode) func() {
	mu := &v.contentMu[inode.StableAttr().Ino%uint64(len(v.contentMu))]
	mu.Lock()
	return mu.Unlock
}
