package limits

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
)

// ownCgroups is what /proc/<pid>/cgroup says: the path of the process in
// each v1 controller's hierarchy (keyed by controller, "cpu" and "cpuacct"
// both present when they are mounted together) and in the v2 hierarchy.
type ownCgroups struct {
	v1      map[string]string
	unified string
	hasV2   bool // a "0::" line was present
}

// parseProcCgroup parses the format of /proc/<pid>/cgroup.
func parseProcCgroup(b []byte) (ownCgroups, error) {
	v1, unified, err := cgroups.ParseCgroupFromReaderUnified(bytes.NewReader(b))
	if err != nil {
		return ownCgroups{}, fmt.Errorf("parse cgroup membership: %w", err)
	}
	own := ownCgroups{v1: v1, unified: unified}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "0::") {
			own.hasV2 = true
		}
	}
	return own, nil
}

// readProcCgroup reads and parses a /proc/<pid>/cgroup file.
func readProcCgroup(path string) (ownCgroups, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ownCgroups{}, fmt.Errorf("read own cgroup: %w", err)
	}
	return parseProcCgroup(b)
}

// parseKeyed parses the "key value" lines of memory.stat, memory.events,
// memory.oom_control, pids.events, cgroup.events and cpu.stat. Lines that
// are not a key and an integer are an error.
func parseKeyed(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %q has no value: %w", line, ErrInvalid)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		out[k] = n
	}
	return out, s.Err()
}

// readKeyed reads a keyed file.
func readKeyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := parseKeyed(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseInt parses a single-value file ("1234\n"); "max" is -1.
func parseInt(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// readInt reads a single-value file.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := parseInt(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// parsePids parses cgroup.procs: one pid a line.
func parsePids(b []byte) ([]int, error) {
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs entry %q: %w", f, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// readPids reads a cgroup.procs file.
func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parsePids(b)
}

// procMemory is what /proc/<pid>/status says about a process's memory.
type procMemory struct {
	HWM int64 // VmHWM: peak resident set, bytes
	RSS int64 // VmRSS: resident set now, bytes
}

// parseStatus reads VmHWM and VmRSS from /proc/<pid>/status. A process
// without an address space (a kernel thread, a zombie) has neither and
// yields zeros.
func parseStatus(b []byte) (procMemory, error) {
	var m procMemory
	for line := range strings.SplitSeq(string(b), "\n") {
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &m.HWM
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &m.RSS
		default:
			continue
		}
		f := strings.Fields(line[strings.IndexByte(line, ':')+1:])
		if len(f) != 2 || f[1] != "kB" {
			return procMemory{}, fmt.Errorf("status line %q: %w", line, ErrInvalid)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procMemory{}, fmt.Errorf("status line %q: %w", line, err)
		}
		*dst = n * 1024
	}
	return m, nil
}
