package fsmon

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FSType is the file system type of fsmon's views in /proc/self/mountinfo.
const FSType = "fuse.benchd"

type mountEntry struct {
	point  string
	fstype string
	source string
	dev    uint64 // the kernel's device number (major<<20 | minor)
}

// mountpoints parses /proc/self/mountinfo.
func mountpoints() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		a := strings.Fields(pre)
		b := strings.Fields(post)
		if len(a) < 5 || len(b) < 2 {
			continue
		}
		var major, minor uint64
		fmt.Sscanf(a[2], "%d:%d", &major, &minor)
		out = append(out, mountEntry{point: unescapeMount(a[4]), fstype: b[0], source: unescapeMount(b[1]), dev: major<<20 | minor})
	}
	return out, sc.Err()
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Cleanup aborts the FUSE connection of every fsmon view left by a
// crashed process whose mountpoint lies below dir ("" for anywhere), then
// lazily unmounts it, and returns the mountpoints it removed. Views of
// live processes are removed too: call it only when no benchd is running.
//
// The abort matters when the crashed server is not quite gone: a process
// killed while one of its own threads waits on a request to its own view
// (a release, an exec of a file in it) can stay a zombie that holds
// /dev/fuse open, so the connection never ends by itself and everything
// that touches the view hangs. Aborting ends every pending request with
// ENOTCONN, which lets that process exit; a lazy unmount alone does not.
func Cleanup(dir string) ([]string, error) {
	mounts, err := mountpoints()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	var ctl *fusectl
	defer func() {
		if ctl != nil {
			if err := ctl.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}()
	// Deepest first, so nested views go before their parents.
	for i := len(mounts) - 1; i >= 0; i-- {
		m := mounts[i]
		if m.fstype != FSType {
			continue
		}
		if dir != "" && m.point != dir && !strings.HasPrefix(m.point, strings.TrimSuffix(dir, "/")+"/") {
			continue
		}
		if ctl == nil {
			ctl, err = openFusectl()
			if err != nil {
				// Without fusectl a lazy unmount still hides the view.
				errs = append(errs, err)
				ctl = &fusectl{}
			}
		}
		if err := ctl.abort(m.dev); err != nil {
			errs = append(errs, fmt.Errorf("unable to abort the connection of %s: %w", m.point, err))
		}
		if err := unix.Unmount(m.point, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unable to unmount %s: %w", m.point, err))
			continue
		}
		done = append(done, m.point)
	}
	return done, errors.Join(errs...)
}

// fusectl is the FUSE control file system, where each connection is a
// directory named by its device number with an "abort" file. It is used
// where the host mounts it (/sys/fs/fuse/connections); otherwise it is
// mounted on a private temporary directory for the duration of a
// Cleanup, so the host's mounts are left as they were.
type fusectl struct {
	dir     string // "" when fusectl is unavailable
	mounted bool   // mounted by us, to be unmounted by close
}

const (
	hostFusectl  = "/sys/fs/fuse/connections"
	fusectlMagic = 0x65735543 // FUSECTL_SUPER_MAGIC, linux/magic.h
)

func openFusectl() (*fusectl, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(hostFusectl, &st); err == nil && st.Type == fusectlMagic {
		return &fusectl{dir: hostFusectl}, nil
	}
	dir, err := os.MkdirTemp("", "benchd-fusectl-")
	if err != nil {
		return nil, fmt.Errorf("unable to make a fusectl mountpoint: %w", err)
	}
	if err := unix.Mount("fusectl", dir, "fusectl", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("unable to mount fusectl: %w", err)
	}
	return &fusectl{dir: dir, mounted: true}, nil
}

// abort ends the connection with device number dev. A connection that is
// already gone is not an error.
func (c *fusectl) abort(dev uint64) error {
	if c.dir == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(c.dir, strconv.FormatUint(dev, 10), "abort"), os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("1")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *fusectl) close() error {
	if !c.mounted {
		return nil
	}
	if err := unix.Unmount(c.dir, 0); err != nil {
		return fmt.Errorf("unable to unmount fusectl at %s: %w", c.dir, err)
	}
	return os.Remove(c.dir)
}
