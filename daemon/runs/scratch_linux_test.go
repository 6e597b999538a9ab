package runs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScratchDir: the default scratch directory is the state dir's
// sibling, private; a shared one (sticky, world-writable: /tmp) or one
// inside the state dir is refused.
func TestScratchDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	e, err := New(Config{StateDir: state, TasksDir: tasksDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.cfg.ScratchDir, state+".scratch"; got != want {
		t.Errorf("got scratch dir %s, want %s", got, want)
	}
	if fi, err := os.Stat(e.cfg.ScratchDir); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("got %v (%v), want mode 0711", fi.Mode(), err)
	}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o1777)
	for _, bad := range []string{os.TempDir(), shared, filepath.Join(state, "scratch")} {
		if _, err := New(Config{StateDir: state, TasksDir: tasksDir(t), ScratchDir: bad}); err == nil {
			t.Errorf("New accepted scratch dir %s", bad)
		}
	}
	if fi, err := os.Stat(os.TempDir()); err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("%s lost its sticky bit: %v (%v)", os.TempDir(), fi.Mode(), err)
	}
}
