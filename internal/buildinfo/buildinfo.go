// Package buildinfo says which build of benchd or benchctl is running,
// for their --version.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Line is what prog --version prints: "prog VERSION GOVERSION". VERSION
// is set, when not empty (the scripts pass git describe through
// -ldflags "-X main.version=..."); else the module version and the
// commit Go stamped into the binary, "(modified)" when the tree had
// changes; else "unknown".
func Line(prog, set string) string {
	v, goVersion := set, "go?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
			for _, s := range bi.Settings {
				switch {
				case s.Key == "vcs.revision":
					v += " " + s.Value
				case s.Key == "vcs.modified" && s.Value == "true":
					v += " (modified)"
				}
			}
		}
	}
	if v == "" {
		v = "unknown"
	}
	return fmt.Sprintf("%s %s %s\n", prog, v, goVersion)
}
