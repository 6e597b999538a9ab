package sandbox_test

import (
	"os"
	"testing"

	"benchd.dev/limits"
	"benchd.dev/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	undo := limits.DelegateForTest()
	code := m.Run()
	undo()
	os.Exit(code)
}
