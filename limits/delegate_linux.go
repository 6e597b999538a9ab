package limits

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultLeaf is the leaf group a daemon moves itself into on a unified
// host (Delegate), so that the group it was given can hold the groups of
// its attempts; it is also the name to give systemd's DelegateSubgroup=.
// New and Cleanup, for a process whose own cgroup is a leaf of this name
// (or systemd's ".control" group of a delegated unit), make and look for
// groups beside it, in the delegated group.
const DefaultLeaf = "supervisor"

// controlLeaf is where systemd runs the control processes (ExecStopPost=
// and friends) of a unit with Delegate=yes once the unit's own group may
// no longer hold processes.
const controlLeaf = ".control"

// DelegatedParent returns the group in which a process whose v2 cgroup is
// own makes its groups by default: own's parent when own is a DefaultLeaf
// or a systemd ".control" leaf, own itself otherwise.
func DelegatedParent(own string) string {
	own = path.Clean(own)
	if b := path.Base(own); (b == DefaultLeaf || b == controlLeaf) && own != "/" {
		return path.Dir(own)
	}
	return own
}

// DelegateConfig says how Delegate prepares this process's cgroup.
type DelegateConfig struct {
	// Root, Layout and ProcCgroup are as in Config.
	Root       string
	Layout     Layout
	ProcCgroup string

	// Parent is the v2 group (relative to the hierarchy's root) below
	// which the groups are to be made: a delegated subtree the operator
	// gave benchd (its --cgroup-parent). Empty means the group this
	// process is in (see DelegatedParent).
	Parent string

	// Pid is the process to move into the leaf; default this process.
	// Only tests set it.
	Pid int

	// Scope asks the service manager to put Pid into a new group of its
	// own, delegated to it, when Pid shares its group with processes that
	// are not its own (a login session's scope), and returns the unit's
	// name. Nil means systemd's StartTransientUnit over D-Bus when
	// systemd runs (/run/systemd/system exists), and no scope otherwise.
	Scope func(ctx context.Context, pid int) (string, error)

	// Logger receives what Delegate did; nil discards it.
	Logger *slog.Logger
}

// Delegation is what Delegate found and did.
type Delegation struct {
	// Layout is the host's layout. On hybrid and legacy hosts Delegate
	// does nothing: v1 controllers have no "no internal processes" rule.
	Layout Layout
	// Parent is the group below which groups are made (Config.Parent):
	// empty where nothing had to be decided (hybrid, legacy, or a v2 root,
	// where New makes an intermediate group).
	Parent string
	// From is the group this process was in before it moved ("" if it
	// did not move), and Self the group it is in now.
	From, Self string
	// Scope is the unit the service manager made for it, if any.
	Scope string
	// Enabled are the controllers Delegate enabled in Parent's
	// cgroup.subtree_control (those already enabled are not listed).
	Enabled []string

	root string
	pid  int
}

// delegatedControllers are the controllers the groups need (cpu only
// where the host offers it: a group with a CPU limit fails in New
// without it).
var delegatedControllers = []string{"memory", "pids"}

// Delegate prepares this process's cgroup so that New can make groups
// with controllers below it. On cgroup v2 a group whose children use
// controllers may hold no process itself (the "no internal processes"
// rule), and a daemon starts inside the very group it was delegated
// (systemd's Delegate=yes puts the service's main process there). So on a
// unified host Delegate, as container runtimes do at start:
//
//   - finds the delegated group: cfg.Parent, or the group this process is
//     in, or that group's parent when this process already sits in a
//     DefaultLeaf (systemd 254's DelegateSubgroup=supervisor, or a
//     previous Delegate);
//   - checks that memory and pids are offered there (cgroup.controllers),
//     saying which file lacks which controller and what to set;
//   - if this process is in the delegated group itself and alone there,
//     moves it into DefaultLeaf below it; if it shares the group with
//     processes that are not its own (started by hand from a login shell),
//     asks systemd for a scope of its own with Delegate=yes (cfg.Scope)
//     and starts again from there; without systemd it says what to do;
//   - enables memory, pids and (where offered) cpu in the delegated
//     group's cgroup.subtree_control.
//
// Call it once at start, before any group is made and before the process
// starts children. It never touches a group outside the delegated one
// (the scope is made by systemd, at its request) and never moves a
// process other than this one.
func Delegate(ctx context.Context, cfg DelegateConfig) (*Delegation, error) {
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	if cfg.ProcCgroup == "" {
		cfg.ProcCgroup = DefaultProcCgroup
	}
	if cfg.Pid == 0 {
		cfg.Pid = os.Getpid()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Scope == nil && systemdRunning() {
		cfg.Scope = systemdScope
	}
	if cfg.Root != DefaultRoot && cfg.Layout == "" {
		return nil, fmt.Errorf("root %s needs an explicit layout: %w", cfg.Root, ErrInvalid)
	}
	if cfg.Parent != "" && (!strings.HasPrefix(cfg.Parent, "/") || strings.Contains("/"+cfg.Parent+"/", "/../")) {
		return nil, fmt.Errorf("cgroup parent %q must be an absolute path that does not climb: %w", cfg.Parent, ErrInvalid)
	}
	layout := cfg.Layout
	if layout == "" {
		layout = Mode()
	}
	d := &Delegation{Layout: layout, root: cfg.Root, pid: cfg.Pid}
	if layout != Unified {
		if layout == Unavailable {
			return nil, fmt.Errorf("no cgroup hierarchy at %s: %w", cfg.Root, ErrUnavailable)
		}
		return d, nil
	}
	log := cfg.Logger.With("component", "limits")
	for attempt := 0; ; attempt++ {
		own, err := readProcCgroup(cfg.ProcCgroup)
		if err != nil {
			return nil, err
		}
		if !own.hasV2 {
			return nil, fmt.Errorf("%s has no cgroup v2 entry: %w", cfg.ProcCgroup, ErrUnavailable)
		}
		self := path.Clean(own.unified)
		d.Self = self
		parent := DelegatedParent(self)
		if cfg.Parent != "" {
			parent = path.Clean(cfg.Parent)
		}
		if parent == "/" {
			// The root may hold processes; New makes an intermediate
			// group there and checks the root's controllers.
			return d, nil
		}
		dir := filepath.Join(cfg.Root, parent)
		offered, err := checkOffered(dir, parent)
		if err != nil {
			return nil, err
		}
		if self == parent {
			others, err := foreignProcs(dir, cfg.Pid)
			if err != nil {
				return nil, err
			}
			if len(others) > 0 {
				if cfg.Scope == nil || attempt > 0 || cfg.Parent != "" {
					return nil, busyError(parent, others)
				}
				unit, err := cfg.Scope(ctx, cfg.Pid)
				if err != nil {
					return nil, fmt.Errorf("%w; asking systemd for a scope of benchd's own failed: %v", busyError(parent, others), err)
				}
				d.Scope = unit
				log.Info("moved into a systemd scope of its own", "unit", unit, "from", self)
				if err := waitMoved(ctx, cfg.ProcCgroup, self); err != nil {
					return nil, err
				}
				continue
			}
			leaf := path.Join(parent, DefaultLeaf)
			if err := os.Mkdir(filepath.Join(cfg.Root, leaf), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("make leaf group %s: %w", leaf, err)
			}
			if err := writeFile(filepath.Join(cfg.Root, leaf, "cgroup.procs"), strconv.Itoa(cfg.Pid)); err != nil {
				return nil, fmt.Errorf("move pid %d into its leaf group %s: %w", cfg.Pid, leaf, err)
			}
			d.From, d.Self = self, leaf
			log.Info("moved into a leaf group", "from", self, "to", leaf)
		}
		d.Parent = parent
		enabled, err := enableDelegated(dir, parent, offered)
		if err != nil {
			return nil, err
		}
		d.Enabled = enabled
		log.Debug("cgroup delegated", "parent", parent, "enabled", enabled)
		return d, nil
	}
}

// checkOffered reports, for the delegated group dir, which of the needed
// controllers its cgroup.controllers lacks and what to do about it, and
// returns what it offers.
func checkOffered(dir, rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", fmt.Errorf("read %s: %w (is %s a cgroup v2 group?)", filepath.Join(dir, "cgroup.controllers"), err, rel)
	}
	if m := missingControllers(string(b), delegatedControllers); len(m) > 0 {
		return "", fmt.Errorf("the %s controller%s not delegated to %s (its cgroup.controllers lists %q): "+
			"under systemd set Delegate=yes in the unit (systemctl edit benchd), "+
			"elsewhere enable %s in the parent's cgroup.subtree_control: %w",
			strings.Join(m, " and "), plural(len(m), " is", "s are"), rel, strings.TrimSpace(string(b)),
			strings.Join(m, " "), ErrNoController)
	}
	return string(b), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// foreignProcs lists the processes of the group dir other than pid.
func foreignProcs(dir string, pid int) ([]int, error) {
	pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "cgroup.procs"), err)
	}
	return slices.DeleteFunc(pids, func(p int) bool { return p == pid }), nil
}

// busyError says why a group shared with other processes cannot be
// delegated, and what to do.
func busyError(rel string, others []int) error {
	shown := others
	if len(shown) > 8 {
		shown = shown[:8]
	}
	return fmt.Errorf("cgroup %s also holds processes that are not benchd's (pids %v), so cgroup v2 "+
		"cannot enable controllers for groups below it: run benchd as its systemd service "+
		"(systemctl start benchd), or in a group of its own "+
		"(systemd-run --scope -p Delegate=yes benchd ...), or pass --cgroup-parent a delegated group "+
		"that holds no process: %w", rel, shown, ErrParentBusy)
}

// waitMoved waits until this process's v2 cgroup is no longer from.
func waitMoved(ctx context.Context, procCgroup, from string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		own, err := readProcCgroup(procCgroup)
		if err != nil {
			return err
		}
		if path.Clean(own.unified) != from {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("systemd made the scope but this process is still in %s: %w", from, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// enableDelegated enables the needed controllers (and cpu where offered)
// in the delegated group's subtree_control and returns those it enabled.
func enableDelegated(dir, rel, offered string) ([]string, error) {
	want := slices.Clone(delegatedControllers)
	if len(missingControllers(offered, []string{"cpu"})) == 0 {
		want = append(want, "cpu")
	}
	enabled, err := enableIn(dir, want, false)
	if errors.Is(err, ErrParentBusy) {
		others, _ := foreignProcs(dir, -1)
		return nil, fmt.Errorf("enable %v in %s: %w", want, rel, busyError(rel, others))
	}
	return enabled, err
}

// Undo reverses what Delegate did, as far as it can: disables the
// controllers it enabled (where no group below still uses them), moves the
// process back to the group it came from and removes the leaf. Tests call
// it so that the machine's cgroups are left as they were found; a daemon
// need not (its service's group goes when the service stops). The systemd
// scope, if one was made, ends with the process.
func (d *Delegation) Undo() error {
	if d == nil || d.Parent == "" {
		return nil
	}
	var errs []error
	dir := filepath.Join(d.root, d.Parent)
	if len(d.Enabled) > 0 {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), subtreeChange("-", d.Enabled)); err != nil {
			errs = append(errs, fmt.Errorf("disable %v in %s: %w", d.Enabled, d.Parent, err))
		}
	}
	if d.From != "" {
		if err := writeFile(filepath.Join(d.root, d.From, "cgroup.procs"), strconv.Itoa(d.pid)); err != nil {
			errs = append(errs, fmt.Errorf("move pid %d back to %s: %w", d.pid, d.From, err))
		} else if err := unix.Rmdir(filepath.Join(d.root, d.Self)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove leaf %s: %w", d.Self, err))
		}
	}
	return errors.Join(errs...)
}
