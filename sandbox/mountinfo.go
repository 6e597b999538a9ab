package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// mount is one line of /proc/PID/mountinfo.
type mount struct {
	Dev    string // "major:minor" of the filesystem
	Root   string // the directory of the filesystem shown at Point
	Point  string // where it is mounted, as seen by the reader
	FSType string
}

// parseMountinfo reads the format of proc(5) /proc/PID/mountinfo.
func parseMountinfo(r io.Reader) ([]mount, error) {
	var ms []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("malformed mountinfo line %q", line)
		}
		ms = append(ms, mount{
			Dev:    f[2],
			Root:   unescapeMount(f[3]),
			Point:  unescapeMount(f[4]),
			FSType: f[sep+1],
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return ms, nil
}

// unescapeMount undoes the octal escapes (\040 for space, \011, \012,
// \134) that the kernel writes in mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// within reports whether p is dir or lies below it (both clean, absolute).
func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// rel returns p relative to dir (p within dir), "" when equal.
func rel(p, dir string) string {
	if p == dir {
		return ""
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}

// identity is where a host path's content lives: a filesystem and a
// directory of it. Two paths with equal identities show the same files,
// whatever mount makes them visible.
type identity struct {
	Dev  string
	Root string
}

// identify finds the identity of the absolute, symlink-free host path p
// in the mount table ms: the last (topmost) mount whose mount point is the
// longest prefix of p.
func identify(ms []mount, p string) (identity, bool) {
	best := -1
	for i, m := range ms {
		if !within(p, m.Point) {
			continue
		}
		if best < 0 || len(m.Point) >= len(ms[best].Point) {
			best = i
		}
	}
	if best < 0 {
		return identity{}, false
	}
	m := ms[best]
	return identity{Dev: m.Dev, Root: path.Join(m.Root, rel(p, m.Point))}, true
}

// exposures lists where, in the mount table ms, the content of id is
// visible: for each mount whose point lies within under (the tree being
// checked), either the path inside it that shows id (when the mount shows
// a directory above id) or the whole mount point (when the mount shows a
// part of id). Paths are as in ms.
func exposures(ms []mount, id identity, under string) []string {
	var out []string
	for _, m := range ms {
		if m.Dev != id.Dev || !within(m.Point, under) {
			continue
		}
		switch {
		case within(id.Root, m.Root):
			out = append(out, path.Join(m.Point, rel(id.Root, m.Root)))
		case within(m.Root, id.Root):
			out = append(out, m.Point)
		}
	}
	return out
}
