// Package e2e holds benchd's end-to-end tests: they build the real benchd
// and benchctl binaries, start benchd on a temporary socket and state
// directory, and drive it through benchd.dev/client, raw HTTP on the
// socket and benchctl, as root. The package has no code of its own.
package e2e
