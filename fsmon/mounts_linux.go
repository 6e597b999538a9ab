package fsmon

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// FSType is the file system type of fsmon's views in /proc/self/mountinfo.
const FSType = "fuse.benchd"

type mountEntry struct {
	point  string
	fstype string
	source string
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
		out = append(out, mountEntry{point: unescapeMount(a[4]), fstype: b[0], source: unescapeMount(b[1])})
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

// Cleanup lazily unmounts every fsmon view left by a crashed process
// whose mountpoint lies below dir ("" for anywhere), and returns the
// mountpoints it removed. Views of live processes are removed too: call
// it only when no benchd is running.
func Cleanup(dir string) ([]string, error) {
	mounts, err := mountpoints()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	// Deepest first, so nested views go before their parents.
	for i := len(mounts) - 1; i >= 0; i-- {
		m := mounts[i]
		if m.fstype != FSType {
			continue
		}
		if dir != "" && m.point != dir && !strings.HasPrefix(m.point, strings.TrimSuffix(dir, "/")+"/") {
			continue
		}
		if err := unix.Unmount(m.point, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unable to unmount %s: %w", m.point, err))
			continue
		}
		done = append(done, m.point)
	}
	return done, errors.Join(errs...)
}
