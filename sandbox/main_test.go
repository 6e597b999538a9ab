package sandbox_test

import (
	"os"
	"testing"

	"benchd.dev/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
