package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// TestCheckNotScored: the attempts benchctl tasks check makes are of
// purpose check: the scorecard leaves them out unless asked (--purpose
// check), list finds them by purpose, and prune --purpose check
// deletes them and their work directories while a run of the same
// reference (which shares their blobs) keeps an export that verifies.
func TestCheckNotScored(t *testing.T) {
	require(t)
	d := startDaemon(t, newDaemonDir(t))
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	out, code := runBenchctlOn(t, d, "tasks", "check", "rt-05", "--json")
	// The last of the events is the answer.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var check apitype.TaskCheck
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &check); err != nil || code != 0 || !check.OK {
		t.Fatalf("tasks check rt-05: exit %d, %v\n%s", code, err, out)
	}
	var checks []string
	for _, r := range check.Results {
		checks = append(checks, r.Attempt)
		a, err := d.client.Attempt(ctx, r.Attempt)
		if err != nil {
			t.Fatal(err)
		}
		if a.Purpose != apitype.PurposeCheck {
			t.Errorf("check attempt %s (%s): got purpose %q, want %q", a.ID, r.Agent, a.Purpose, apitype.PurposeCheck)
		}
	}
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-05", Agent: apitype.AgentReference})
	if err != nil {
		t.Fatal(err)
	}
	ref := wait(t, d.client, run.Attempts[0])
	if ref.Purpose != apitype.PurposeRun || !ref.Pass {
		t.Fatalf("plain run %s: got purpose %q pass %v, want run and a pass", ref.ID, ref.Purpose, ref.Pass)
	}

	scored := func(args ...string) []string {
		t.Helper()
		out, code := runBenchctlOn(t, d, append([]string{"scorecard", "--series", "builtin", "--json"}, args...)...)
		var sc struct {
			Series []struct {
				Tasks []struct {
					Agents []struct {
						Attempts []struct {
							ID string `json:"id"`
						} `json:"attempts"`
					} `json:"agents"`
				} `json:"tasks"`
			} `json:"series"`
		}
		if err := json.Unmarshal([]byte(out), &sc); err != nil || code != 0 {
			t.Fatalf("scorecard %v: exit %d, %v\n%s", args, code, err, out)
		}
		var ids []string
		for _, s := range sc.Series {
			for _, task := range s.Tasks {
				for _, ag := range task.Agents {
					for _, a := range ag.Attempts {
						ids = append(ids, a.ID)
					}
				}
			}
		}
		slices.Sort(ids)
		return ids
	}
	sorted := slices.Sorted(slices.Values(checks))
	if got := scored(); !slices.Equal(got, []string{ref.ID}) {
		t.Errorf("scorecard: got attempts %v, want the plain run's alone (%s)", got, ref.ID)
	}
	if got := scored("--purpose", "check"); !slices.Equal(got, sorted) {
		t.Errorf("scorecard --purpose check: got attempts %v, want the check's %v", got, sorted)
	}
	listed, err := d.client.Attempts(ctx, client.AttemptFilter{Task: "rt-05", Purposes: []string{apitype.PurposeCheck}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range listed {
		ids = append(ids, a.ID)
	}
	if slices.Sort(ids); !slices.Equal(ids, sorted) {
		t.Errorf("list --purpose check: got %v, want %v", ids, sorted)
	}

	out, code = runBenchctlOn(t, d, "prune", "--before", time.Now().UTC().Format(time.RFC3339Nano), "--purpose", "check", "--json")
	var pr apitype.Prune
	if err := json.Unmarshal([]byte(out), &pr); err != nil || code != 0 {
		t.Fatalf("prune: exit %d, %v\n%s", code, err, out)
	}
	if got := slices.Sorted(slices.Values(pr.Attempts)); !slices.Equal(got, sorted) {
		t.Errorf("prune: got attempts %v, want the check's %v", got, sorted)
	}
	t.Logf("prune freed %d bytes: %d blobs of %d bytes, %d bytes of records, %d bytes of work directories", pr.Bytes(), pr.Blobs, pr.BlobBytes, pr.RecordBytes, pr.WorkBytes)
	for _, id := range checks {
		if _, err := d.client.Attempt(ctx, id); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("pruned attempt %s: got %v, want not found", id, err)
		}
		if _, err := os.Stat(filepath.Join(d.state, "attempts", id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pruned attempt %s: work directory: got %v, want it gone", id, err)
		}
	}
	archive := filepath.Join(t.TempDir(), "ref.tar")
	if out, code := runBenchctlOn(t, d, "export", ref.ID, "-o", archive); code != 0 {
		t.Fatalf("export of the kept run: exit %d\n%s", code, out)
	}
	if out, code := runBenchctlOn(t, d, "verify", archive); code != 0 && code != 3 {
		t.Errorf("verify of the kept run's export: exit %d, want 0 or 3 (no --key)\n%s", code, out)
	}
}
