package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// TestTasksListBroken: a bundle that does not load is named on stderr
// and in --json; the others are still listed.
func TestTasksListBroken(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		replyJSON(w, apitype.TaskList{
			Tasks:  []apitype.TaskInfo{{ID: "rt-01", Name: "counter", Grader: "pytest"}, {ID: "rt-02", Name: "fold", Grader: "pytest"}},
			Broken: []apitype.BrokenBundle{{Dir: "/srv/tasks/nc-07", Error: "invalid task: task.toml: line 3: expected '='\x1b[2J"}},
		})
	})
	serveSocket(t, sock, mux)

	code, stdout, stderr := runCLI(t, sock, nil, false, "tasks", "list")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "rt-01") || !strings.Contains(stdout, "rt-02") {
		t.Errorf("got stdout %q, want rt-01 and rt-02 listed", stdout)
	}
	if !strings.Contains(stderr, "warning: bundle /srv/tasks/nc-07 does not load, not listed: invalid task: task.toml: line 3") {
		t.Errorf("got stderr %q, want the broken bundle named", stderr)
	}
	if strings.Contains(stderr, "\x1b") {
		t.Errorf("got stderr %q with a raw escape", stderr)
	}
	code, stdout, _ = runCLI(t, sock, nil, false, "tasks", "list", "--json")
	var list apitype.TaskList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != exitOK {
		t.Fatalf("--json: got exit %d, %v", code, err)
	}
	if len(list.Tasks) != 2 || len(list.Broken) != 1 || list.Broken[0].Dir != "/srv/tasks/nc-07" {
		t.Errorf("--json: got %d tasks and broken %+v, want 2 and /srv/tasks/nc-07", len(list.Tasks), list.Broken)
	}
}
