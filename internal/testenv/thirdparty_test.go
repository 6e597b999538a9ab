package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestThirdParty(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "third_party")
	cases := []struct {
		name string
		repo string // the repository's root, below root
		has  bool   // whether root/shared/third_party exists
		want string
	}{
		{"beside the repository", "main", true, shared},
		{"above a deeper clone", "ci/x/repo", true, shared},
		{"nowhere", "lone/repo", false, filepath.Join(root, "lone", "shared", "third_party")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(root, "shared"))
			if c.has {
				if err := os.MkdirAll(shared, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			repo := filepath.Join(root, c.repo)
			if err := os.MkdirAll(filepath.Join(repo, "fsmon"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(filepath.Join(repo, "fsmon"))
			t.Setenv(ThirdPartyEnv, "")
			if got, err := ThirdParty(); err != nil || got != c.want {
				t.Errorf("ThirdParty() = %q, %v; want %q", got, err, c.want)
			}
			t.Setenv(ThirdPartyEnv, "/elsewhere/tp")
			if got, err := ThirdParty(); err != nil || got != "/elsewhere/tp" {
				t.Errorf("with %s set: ThirdParty() = %q, %v; want /elsewhere/tp", ThirdPartyEnv, got, err)
			}
		})
	}
}
