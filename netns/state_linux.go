package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
)

// state is what the run dir keeps of a live namespace, so that Cleanup
// can undo it after a crash.
type state struct {
	Name  string `json:"name"`
	Mode  Mode   `json:"mode"`
	Pid   int    `json:"pid"`
	Start string `json:"start"` // the owner's start time, against pid reuse
	// Open mode: the host end of the veth, the nft table, and the
	// forwarding sysctls as they were before the first open namespace.
	HostIf     string            `json:"host_if,omitempty"`
	Table      string            `json:"table,omitempty"`
	Forwarding map[string]string `json:"forwarding,omitempty"`
}

// stateDir is the run dir's directory of state files; namespace names
// start with a letter or digit, so it never collides with one.
const stateDir = ".state"

type stateFile struct{ path string }

// createState writes the state file of a new namespace; it fails with
// ErrConflict if the name is taken.
func createState(runDir string, st *state) (*stateFile, error) {
	dir := filepath.Join(runDir, stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create run dir: %w", err)
	}
	path := filepath.Join(dir, st.Name+".json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("namespace %q in %s: %w", st.Name, runDir, ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("unable to create state file: %w", err)
	}
	f.Close()
	sf := &stateFile{path: path}
	if err := sf.write(st); err != nil {
		os.Remove(path)
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(runDir, st.Name)); err == nil {
		os.Remove(path)
		return nil, fmt.Errorf("namespace %q in %s: %w", st.Name, runDir, ErrConflict)
	}
	return sf, nil
}

func (sf *stateFile) write(st *state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := sf.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("unable to write state file: %w", err)
	}
	if err := os.Rename(tmp, sf.path); err != nil {
		return fmt.Errorf("unable to write state file: %w", err)
	}
	return nil
}

func (sf *stateFile) remove() error { return removeIfExists(sf.path) }

// procStart gives the start time of process pid (field 22 of its stat
// file), or "" if it is gone.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// live holds the state files of this process's open namespaces.
var live struct {
	mu    sync.Mutex
	paths map[string]bool
}

func registerLive(path string) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.paths == nil {
		live.paths = map[string]bool{}
	}
	live.paths[path] = true
}

func unregisterLive(path string) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.paths, path)
}

// alive reports whether the namespace of st still has its owner.
func (st *state) alive(path string) bool {
	if st.Pid == os.Getpid() {
		live.mu.Lock()
		defer live.mu.Unlock()
		return live.paths[path]
	}
	return st.Start != "" && procStart(st.Pid) == st.Start
}

// Cleanup removes what namespaces of runDir left behind when their owner
// died without Close: bind mounts and their files, veths, nft tables, and
// the host's forwarding settings (restored when no open namespace is
// left). Namespaces whose owner still runs are left alone. A missing
// runDir is not an error.
func Cleanup(runDir string) error {
	if runDir == "" {
		runDir = DefaultRunDir
	}
	dir := filepath.Join(runDir, stateDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to read run dir: %w", err)
	}
	var errs []error
	keep := map[string]bool{}
	openLeft := false
	var restore map[string]string
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(path)
			continue
		}
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(path)
		var st state
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err != nil || !nameRE.MatchString(st.Name) {
			errs = append(errs, fmt.Errorf("unable to read state file %s: %v", path, err))
			continue
		}
		if st.alive(path) {
			keep[st.Name] = true
			openLeft = openLeft || st.Mode == Open
			continue
		}
		if err := cleanupOne(&st); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", st.Name, err))
			keep[st.Name] = true
			continue
		}
		if st.Forwarding != nil {
			restore = st.Forwarding
		}
		if err := unmount(filepath.Join(runDir, st.Name)); err != nil {
			errs = append(errs, fmt.Errorf("unable to unmount %s: %w", st.Name, err))
			keep[st.Name] = true
			continue
		}
		os.Remove(filepath.Join(runDir, st.Name))
		os.Remove(path)
	}
	// Mount points left without a state file.
	ents, _ = os.ReadDir(runDir)
	for _, e := range ents {
		if e.Name() == stateDir || keep[e.Name()] || !nameRE.MatchString(e.Name()) {
			continue
		}
		p := filepath.Join(runDir, e.Name())
		if err := unmount(p); err != nil {
			errs = append(errs, fmt.Errorf("unable to unmount %s: %w", p, err))
			continue
		}
		os.Remove(p)
	}
	if restore != nil && !openLeft && forwardingRefs() == 0 {
		if err := writeForwarding(restore); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanupOne deletes the veth and nft table of a dead open namespace.
func cleanupOne(st *state) error {
	var errs []error
	if st.HostIf != "" && strings.HasPrefix(st.HostIf, vethPrefix) {
		if l, err := netlink.LinkByName(st.HostIf); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("unable to delete %s: %w", st.HostIf, err))
			}
		}
	}
	if st.Table != "" && strings.HasPrefix(st.Table, tablePrefix) {
		if nft, err := exec.LookPath("nft"); err == nil {
			if exec.Command(nft, "list", "table", "ip", st.Table).Run() == nil {
				if out, err := exec.Command(nft, "delete", "table", "ip", st.Table).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("unable to delete nft table %s: %v: %s", st.Table, err, out))
				}
			}
		}
	}
	return errors.Join(errs...)
}
