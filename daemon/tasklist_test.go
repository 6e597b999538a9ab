package daemon

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/tasks"
)

// TestTaskStoreBrokenBundle: GET /v1/tasks lists the bundles that load
// and names the one that does not; a bundle whose directory is not named
// after its id is found by its id; an unknown task's error names the
// known ones despite the broken bundle.
func TestTaskStoreBrokenBundle(t *testing.T) {
	root := t.TempDir()
	for src, dst := range map[string]string{"rt-01-circular-counter": "counter", "rt-02-fold-bug": "rt-02"} {
		if err := tasks.CopyTree(filepath.Join("../tasks", src), filepath.Join(root, dst)); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(root, "nc-07")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, tasks.ManifestFile), []byte("[task]\nid = \"nc-07\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{cfg: Config{TasksDir: root, MaxQueued: 10}, log: slog.New(slog.DiscardHandler)}

	rec := httptest.NewRecorder()
	s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/tasks", nil))
	var list apitype.TaskList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("GET /v1/tasks: got %d %s", rec.Code, rec.Body)
	}
	var ids []string
	for _, ti := range list.Tasks {
		ids = append(ids, ti.ID)
	}
	if got := strings.Join(ids, " "); got != "rt-01 rt-02" {
		t.Errorf("got tasks %q, want rt-01 rt-02", got)
	}
	if len(list.Broken) != 1 || list.Broken[0].Dir != bad || !strings.Contains(list.Broken[0].Error, bad) {
		t.Errorf("got broken %+v, want %s named", list.Broken, bad)
	}

	sub, err := s.validate(apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull})
	if err != nil || sub.tasks[0].task.ID != "rt-01" {
		t.Fatalf("validate rt-01 in directory counter: got %v", err)
	}
	_, err = s.validate(apitype.RunRequest{Task: "rt-09", Agent: apitype.AgentNull})
	if err == nil || !strings.Contains(err.Error(), "known tasks: rt-01, rt-02; 1 bundle(s) do not load, "+bad) {
		t.Errorf("validate rt-09: got %v, want the known tasks named", err)
	}
}
