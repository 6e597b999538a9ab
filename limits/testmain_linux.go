package limits

import (
	"context"
	"fmt"
	"os"
)

// DelegateForTest is for the TestMain of packages whose tests make
// groups: as root on a unified host it prepares the test binary's cgroup
// as the daemon prepares its own (Delegate), and returns the function
// that undoes it after the tests. Elsewhere it does nothing. A failure is
// printed, not fatal: the tests that need groups then fail with the
// reason, and the others still run.
func DelegateForTest() (undo func()) {
	if os.Geteuid() != 0 || Mode() != Unified {
		return func() {}
	}
	d, err := Delegate(context.Background(), DelegateConfig{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "limits: cgroups not delegated to this test binary: %v\n", err)
		return func() {}
	}
	return func() {
		if err := d.Undo(); err != nil {
			fmt.Fprintf(os.Stderr, "limits: %v\n", err)
		}
	}
}
