//go:build linux && !amd64

package sandbox

import (
	"fmt"
	"runtime"
)

// installFilter fails: the filter is written for x86_64 only, and an
// agent is never started without it.
func installFilter() error {
	return fmt.Errorf("no seccomp filter for %s: the sandbox runs agents on amd64 only", runtime.GOARCH)
}
