package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "", want: time.Time{}},
		{in: "2026-11-29", want: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
		{in: "2026-11-29T12:30:00Z", want: time.Date(2026, 11, 29, 12, 30, 0, 0, time.UTC)},
		{in: "2026-11-29T12:30:00+01:00", want: time.Date(2026, 11, 29, 11, 30, 0, 0, time.UTC)},
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "yesterday", wantErr: true},
		{in: "-3d", wantErr: true},
		{in: "-1h", wantErr: true},
		{in: "2026-13-01", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseWhen("--since", tt.in, now)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), `--since "`+tt.in+`"`) {
					t.Errorf("got %v, %v; want an error naming the value", got, err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestListFilters: list's filters reach the daemon as query
// parameters; a bad value is a usage error that names it, and nothing
// is asked.
func TestListFilters(t *testing.T) {
	list := filepath.Join(t.TempDir(), "batch.list")
	if err := os.WriteFile(list, []byte(testList), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    url.Values // the query, or nil for a usage error
		wantErr string
	}{
		{name: "none", args: nil, want: url.Values{"limit": {"20"}}},
		{name: "every filter", args: []string{"--agent", "claude -p", "--model", "opus", "--run", "r-1", "--task", "rt-01", "--task", "rt-02",
			"--state", "done", "--purpose", "check", "--since", "2026-11-29", "--until", "2026-11-30T06:00:00Z", "--limit", "5"},
			want: url.Values{"agent": {"claude -p"}, "model": {"opus"}, "run": {"r-1"}, "task": {"rt-01", "rt-02"}, "state": {"done"},
				"purpose": {"check"}, "since": {"2026-11-29T00:00:00Z"}, "until": {"2026-11-30T06:00:00Z"}, "limit": {"5"}}},
		{name: "builtin series", args: []string{"--series", "builtin"}, want: url.Values{"task": draw.BuiltinSeries().Tasks, "limit": {"20"}}},
		{name: "list series", args: []string{"--series", list}, want: url.Values{"task": {"rt-01", "rt-02"}, "limit": {"20"}}},
		{name: "series and task", args: []string{"--series", list, "--task", "rt-02"}, want: url.Values{"task": {"rt-02"}, "limit": {"20"}}},
		{name: "task out of series", args: []string{"--series", list, "--task", "rt-05"}, wantErr: "--task rt-05: none is a task of series"},
		{name: "bad purpose", args: []string{"--purpose", "fun"}, wantErr: `--purpose "fun": want one of run, check, index, review`},
		{name: "bad state", args: []string{"--state", "sleeping"}, wantErr: `--state "sleeping"`},
		{name: "bad since", args: []string{"--since", "yesterday"}, wantErr: `--since "yesterday"`},
		{name: "bad until", args: []string{"--until", "soon"}, wantErr: `--until "soon"`},
		{name: "since after until", args: []string{"--since", "2026-11-30", "--until", "2026-11-29"}, wantErr: "is not before --until"},
		{name: "bad series", args: []string{"--series", "nope"}, wantErr: `--series "nope": want builtin or a draw LIST file`},
		{name: "no all-purposes on list", args: []string{"--all-purposes"}, wantErr: "flag provided but not defined: -all-purposes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, nil)
			code, _, stderr := runCLI(t, d.Socket, nil, false, append([]string{"list"}, tt.args...)...)
			d.mu.Lock()
			queries := d.queries
			d.mu.Unlock()
			if tt.want == nil {
				if code != exitError || !strings.Contains(stderr, tt.wantErr) || !strings.HasPrefix(stderr, "benchctl list: ") {
					t.Errorf("got exit %d, stderr %q; want %d and a usage error with %q", code, stderr, exitError, tt.wantErr)
				}
				if len(queries) != 0 {
					t.Errorf("got %d requests, want none", len(queries))
				}
				return
			}
			if code != exitOK || len(queries) != 1 {
				t.Fatalf("got exit %d and %d requests, stderr %q; want 0 and one", code, len(queries), stderr)
			}
			for k, v := range queries[0] {
				if !slices.Equal(v, tt.want[k]) {
					t.Errorf("query %s: got %q, want %q", k, v, tt.want[k])
				}
			}
			for k := range tt.want {
				if _, ok := queries[0][k]; !ok {
					t.Errorf("query %s: missing, want %q", k, tt.want[k])
				}
			}
		})
	}
}

// TestScorecardPurposes: the attempts of tasks check are not among the
// scorecard's agents unless asked for with --purpose or --all-purposes.
func TestScorecardPurposes(t *testing.T) {
	const checked = "builtin:attempt:off-by-one"
	tests := []struct {
		name          string
		args          []string
		good, checked bool // which agents the scorecard lists
	}{
		{"runs only by default", nil, true, false},
		{"purpose check", []string{"--purpose", "check"}, false, true},
		{"purposes run and check", []string{"--purpose", "run", "--purpose", "check"}, true, true},
		{"all purposes", []string{"--all-purposes"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, nil)
			d.seed("good", "", everyTask("PP"))
			d.seedPurpose(checked, "", apitype.PurposeCheck, everyTask("F"))
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, append([]string{"scorecard", "--series", "builtin", "--json"}, tt.args...)...)
			if code != exitOK {
				t.Fatalf("got exit %d, stderr %q", code, stderr)
			}
			var sc draw.Scorecard
			if err := json.Unmarshal([]byte(stdout), &sc); err != nil {
				t.Fatal(err)
			}
			var agents []string
			for _, a := range sc.Series[0].Agents {
				agents = append(agents, a.Agent)
			}
			if got := slices.ContainsFunc(agents, func(a string) bool { return strings.HasPrefix(a, "good") }); got != tt.good {
				t.Errorf("got agents %v: good listed %v, want %v", agents, got, tt.good)
			}
			if got := slices.ContainsFunc(agents, func(a string) bool { return strings.Contains(a, "off-by-one") }); got != tt.checked {
				t.Errorf("got agents %v: the check's agent listed %v, want %v", agents, got, tt.checked)
			}
		})
	}
	t.Run("both flags", func(t *testing.T) {
		d := newSuiteDaemon(t, nil)
		code, _, stderr := runCLI(t, d.Socket, nil, false, "scorecard", "--purpose", "check", "--all-purposes")
		if code != exitError || !strings.Contains(stderr, "--purpose and --all-purposes") {
			t.Errorf("got exit %d, stderr %q; want a usage error", code, stderr)
		}
	})
}

// TestBoardPurposes: a board's streaks count earlier runs, not the
// passes of other purposes, unless asked.
func TestBoardPurposes(t *testing.T) {
	const agent = "agent --fast"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"runs only by default", nil, exitNo, "rt-01  pass  streak 1 of 3"},
		{"all purposes", []string{"--all-purposes"}, exitOK, "rt-01  pass  streak 3 of 3"},
		{"purpose check and run", []string{"--purpose", "check", "--purpose", "run"}, exitOK, "rt-01  pass  streak 3 of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, nil)
			d.seedPurpose(agent, "", apitype.PurposeCheck, everyTask("PP"))
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, append([]string{"board", "--agent", agent}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stdout, tt.want) {
				t.Errorf("got exit %d, stderr %q, stdout\n%s\nwant %d and %q", code, stderr, stdout, tt.wantCode, tt.want)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			for _, r := range d.runs {
				if r.Purpose != "" && r.Purpose != apitype.PurposeRun {
					t.Errorf("got a board run of purpose %q, want run", r.Purpose)
				}
			}
		})
	}
	t.Run("since reaches the history", func(t *testing.T) {
		d := newSuiteDaemon(t, nil)
		code, _, stderr := runCLI(t, d.Socket, nil, false, "board", "--agent", agent, "--streak", "1", "--since", "2026-11-01")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, stderr)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.queries) == 0 {
			t.Fatal("no history read")
		}
		for _, q := range d.queries {
			if q.Get("since") != "2026-11-01T00:00:00Z" || q.Get("purpose") != apitype.PurposeRun {
				t.Errorf("got history query %v, want since 2026-11-01 and purpose run", q)
			}
		}
	})
}

func TestPrune(t *testing.T) {
	t.Run("dry run of checks", func(t *testing.T) {
		d := newSuiteDaemon(t, nil)
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "prune", "--before", "2026-11-01", "--purpose", "check", "--dry-run")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, stderr)
		}
		d.mu.Lock()
		prunes := d.prunes
		d.mu.Unlock()
		want := apitype.PruneRequest{Before: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Purposes: []string{"check"}, DryRun: true}
		if len(prunes) != 1 || !prunes[0].Before.Equal(want.Before) || !slices.Equal(prunes[0].Purposes, want.Purposes) || !prunes[0].DryRun {
			t.Errorf("got requests %+v, want %+v", prunes, want)
		}
		for _, w := range []string{
			"would prune 2 ended attempts created before 2026-11-01T00:00:00Z (1 emptied run, 3 unused blobs): 4.0 MiB freed (blobs 3.0 MiB, records 1.0 MiB, work directories 0 B)",
			"kept 1 attempt that a kept retry names (its signed retry_of): a-004",
			"work directory kept: a-003: backing is mounted",
		} {
			if !strings.Contains(stdout, w) {
				t.Errorf("got stdout\n%s\nwant %q", stdout, w)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		d := newSuiteDaemon(t, nil)
		code, stdout, _ := runCLI(t, d.Socket, nil, false, "prune", "--before", "30d", "--json")
		var p apitype.Prune
		if err := json.Unmarshal([]byte(stdout), &p); code != exitOK || err != nil || len(p.Attempts) != 2 || p.BlobBytes != 3<<20 {
			t.Errorf("got exit %d, %+v (%v), want the daemon's answer", code, p, err)
		}
	})
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no before", []string{"prune"}, "missing --before WHEN"},
		{"bad before", []string{"prune", "--before", "last week"}, `--before "last week"`},
		{"bad purpose", []string{"prune", "--before", "24h", "--purpose", "fun"}, `--purpose "fun"`},
		{"argument", []string{"prune", "--before", "24h", "x"}, `unexpected argument "x"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, nil)
			code, _, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitError || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("got exit %d, stderr %q; want %d and %q", code, stderr, exitError, tt.wantErr)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.prunes) != 0 {
				t.Errorf("got %d prune requests, want none", len(d.prunes))
			}
		})
	}
}

// TestListPurposeColumn: list shows each attempt's purpose, run for one
// stored without it.
func TestListPurposeColumn(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	d.seed("old", "", map[string]string{"rt-01": "P"})
	d.seedPurpose("builtin:attempt:x", "", apitype.PurposeCheck, map[string]string{"rt-01": "F"})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "list")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	for _, w := range []string{`(?m)^ATTEMPT\s+RUN\s+TASK\s+AGENT\s+PURPOSE\s+STATE\s+HOST\s+VERDICT`, `(?m)^a-002\s+rt-01\s+builtin:attempt:x\s+check\s+done\s+-\s+`, `(?m)^a-001\s+rt-01\s+old\s+run\s+done`} {
		if !regexp.MustCompile(w).MatchString(stdout) {
			t.Errorf("got stdout\n%s\nwant a line matching %s", stdout, w)
		}
	}
}

// TestListSaysWhatTheLimitCut: a list the limit cut says how many more
// match, in text and as the total in JSON; an uncut one says nothing.
func TestListSaysWhatTheLimitCut(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	d.seed("builtin:reference", "", map[string]string{"rt-01": "PPPPP"})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "list", "--limit", "2")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "3 more of 5 (use --limit)") {
		t.Errorf("got stdout\n%s\nwant it to say 3 more of 5", stdout)
	}
	if rows := strings.Count(stdout, "\na-"); rows != 2 {
		t.Errorf("got %d rows, want 2", rows)
	}
	_, stdout, _ = runCLI(t, d.Socket, nil, false, "list")
	if strings.Contains(stdout, "more of") {
		t.Errorf("uncut list: got stdout\n%s\nwant no \"more\" line", stdout)
	}
	_, stdout, _ = runCLI(t, d.Socket, nil, false, "list", "--limit", "2", "--json")
	var got apitype.AttemptList
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if got.Total != 5 || len(got.Attempts) != 2 {
		t.Errorf("json: got total %d and %d attempts, want 5 and 2", got.Total, len(got.Attempts))
	}
}
