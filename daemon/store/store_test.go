package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Blobs().Dir; got != filepath.Join(dir, BlobsName) {
		t.Errorf("got blob dir %s, want %s", got, filepath.Join(dir, BlobsName))
	}
	tests := []struct {
		name string
		db   *sql.DB
		q    string
		want string
	}{
		{"journal mode", s.w.DB, "PRAGMA journal_mode", "wal"},
		{"synchronous FULL", s.w.DB, "PRAGMA synchronous", "2"},
		{"foreign keys", s.w.DB, "PRAGMA foreign_keys", "1"},
		{"busy timeout", s.w.DB, "PRAGMA busy_timeout", "5000"},
		{"readers foreign keys", s.r.DB, "PRAGMA foreign_keys", "1"},
		{"readers query only", s.r.DB, "PRAGMA query_only", "1"},
		{"schema version", s.w.DB, "SELECT version FROM schema_version", fmt.Sprint(SchemaVersion())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			if err := tt.db.QueryRowContext(ctx, tt.q).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s: got %q, want %q", tt.q, got, tt.want)
			}
		})
	}
	t.Run("readers cannot write", func(t *testing.T) {
		_, err := s.r.ExecContext(ctx, `INSERT INTO runs (id, task, agent, attempts, created) VALUES ('r', 't', 'a', '[]', 0)`)
		if err == nil {
			t.Error("got no error writing through a read connection, want one")
		}
	})
	t.Run("reopen keeps data", func(t *testing.T) {
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Agent: "builtin:null", Created: base}))
		must(t, s.Close())
		s2, err := Open(ctx, Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if _, err := s2.GetRun(ctx, "r1"); err != nil {
			t.Errorf("got %v after reopening, want the run", err)
		}
	})
	t.Run("no dir", func(t *testing.T) {
		_, err := Open(ctx, Config{})
		wantErr(t, err, ErrInvalid)
	})
}

func TestRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		r1 := apitype.Run{ID: "r1", Task: "rt-01", Agent: "builtin:reference", Attempts: []string{"a2", "a1", "a3"}, Created: base}
		must(t, s.CreateRun(ctx, r1))
		tests := []struct {
			name    string
			create  *apitype.Run // created first, when set
			get     string
			want    apitype.Run
			wantErr error
		}{
			{name: "get", get: "r1", want: withTasks(r1, "rt-01")}, // stored without tasks: its one task
			{name: "not found", get: "nope", wantErr: ErrNotFound},
			{name: "duplicate id", create: &apitype.Run{ID: "r1", Task: "rt-02"}, wantErr: ErrConflict},
			{name: "empty id", create: &apitype.Run{Task: "rt-02"}, wantErr: ErrInvalid},
			{name: "no attempts", create: &apitype.Run{ID: "r2", Task: "rt-02", Agent: "x", Created: base},
				get: "r2", want: apitype.Run{ID: "r2", Task: "rt-02", Tasks: []string{"rt-02"}, Agent: "x", Created: base}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.create != nil {
					err := s.CreateRun(ctx, *tt.create)
					if tt.get == "" {
						wantErr(t, err, tt.wantErr)
						return
					}
					must(t, err)
				}
				got, err := s.GetRun(ctx, tt.get)
				wantErr(t, err, tt.wantErr)
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			})
		}
		t.Run("created defaults to now", func(t *testing.T) {
			before := time.Now()
			must(t, s.CreateRun(ctx, apitype.Run{ID: "r3"}))
			got, err := s.GetRun(ctx, "r3")
			must(t, err)
			if got.Created.Before(before.Add(-time.Second)) || got.Created.After(time.Now().Add(time.Second)) {
				t.Errorf("got Created %v, want about %v", got.Created, before)
			}
		})
	})
}

// fullAttempt has every field of an Attempt set.
func fullAttempt(id string) apitype.Attempt {
	started, finished := base.Add(time.Second), base.Add(3*time.Second)
	return apitype.Attempt{
		ID: id, Run: "r1", Task: "rt-01",
		Agent: apitype.AgentIdentity{Spec: "python3 agent.py {plan}", Exe: "/usr/bin/python3",
			SHA256: strings.Repeat("ab", 32), Args: []string{"agent.py", "/workspace/plan.md"},
			Version: "1.2", Model: "m", Env: []string{"API_KEY"}},
		State: apitype.StateDone, Phase: apitype.PhaseStore,
		Pass: false, Reward: 0,
		Reasons:  []apitype.Reason{{Code: "edit_violation", Message: "tests/test_counter.py: unlink denied"}},
		ExitCode: -1, Signal: 9, TimedOut: true, OOM: true, WallMS: 600000,
		PeakMemoryBytes: 1 << 30, MaxRSSBytes: 1 << 29, Edits: 12, Denied: 1,
		Changeset: []apitype.Change{{Kind: "modified", Path: "src/counter.py", Type: "file", SHA256: strings.Repeat("cd", 32)},
			{Kind: "renamed", Path: "b", From: "a", Type: "file"}},
		Network: apitype.Network{Mode: "closed",
			Attempts: []apitype.NetAttempt{{Time: base.Add(2 * time.Second), Proto: "tcp", Dst: "1.2.3.4:443"}},
			DNS:      []apitype.DNSQuery{{Time: base.Add(2 * time.Second), Name: "example.com", Type: "A"}},
			Gateways: []apitype.GatewayUse{{Name: "model", Endpoint: "10.0.0.1:443", Conns: 2, BytesIn: 10, BytesOut: 20}},
			BytesIn:  10, BytesOut: 20},
		JournalHead: strings.Repeat("ef", 32), InfraError: "", TaskSHA256: strings.Repeat("01", 32),
		Purpose: apitype.PurposeCheck, Created: base, Started: &started, Finished: &finished,
	}
}

func TestCreateAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		mustCreate(t, s, apitype.Attempt{ID: "dup", Task: "rt-01", Created: base})
		tests := []struct {
			name      string
			in        apitype.Attempt
			wantErr   error
			wantState string
		}{
			{name: "empty state is queued", in: apitype.Attempt{ID: "a1", Run: "r1", Task: "rt-01", Created: base}, wantState: apitype.StateQueued},
			{name: "queued", in: apitype.Attempt{ID: "a2", Task: "rt-01", State: apitype.StateQueued, Created: base}, wantState: apitype.StateQueued},
			{name: "no run", in: apitype.Attempt{ID: "a3", Task: "rt-01", Created: base}, wantState: apitype.StateQueued},
			{name: "running", in: apitype.Attempt{ID: "a4", Task: "rt-01", State: apitype.StateRunning}, wantErr: ErrInvalid},
			{name: "empty id", in: apitype.Attempt{Task: "rt-01"}, wantErr: ErrInvalid},
			{name: "duplicate id", in: apitype.Attempt{ID: "dup", Task: "rt-01"}, wantErr: ErrConflict},
			{name: "missing run", in: apitype.Attempt{ID: "a5", Run: "r9", Task: "rt-01"}, wantErr: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := s.CreateAttempt(ctx, tt.in)
				wantErr(t, err, tt.wantErr)
				got, gerr := s.GetAttempt(ctx, tt.in.ID)
				if tt.wantErr != nil {
					if tt.wantErr != ErrConflict && !errors.Is(gerr, ErrNotFound) {
						t.Errorf("after a failed create: got %v, want ErrNotFound", gerr)
					}
					return
				}
				must(t, gerr)
				want := tt.in
				want.State = tt.wantState
				want.Purpose = apitype.PurposeRun // as an empty purpose is stored
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
		t.Run("every field round-trips", func(t *testing.T) {
			a := fullAttempt("full")
			q := a
			q.State = apitype.StateQueued
			must(t, s.CreateAttempt(ctx, q))
			must(t, s.UpdateAttempt(ctx, a))
			got, err := s.GetAttempt(ctx, "full")
			must(t, err)
			if !reflect.DeepEqual(got, a) {
				t.Errorf("got\n%+v\nwant\n%+v", got, a)
			}
		})
	})
}

func TestUpdateAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		mustCreate(t, s, apitype.Attempt{ID: "a1", Run: "r1", Task: "rt-01", Created: base})
		done := fullAttempt("a1")
		done.Purpose = apitype.PurposeRun // a1's, which an update keeps
		tests := []struct {
			name    string
			in      apitype.Attempt
			wantErr error
		}{
			{name: "running", in: apitype.Attempt{ID: "a1", Run: "r1", Task: "rt-01", State: apitype.StateRunning, Phase: apitype.PhaseMount, Purpose: apitype.PurposeRun, Created: base}},
			{name: "done", in: done},
			{name: "not found", in: apitype.Attempt{ID: "nope", State: apitype.StateRunning}, wantErr: ErrNotFound},
			{name: "unknown state", in: apitype.Attempt{ID: "a1", State: "sleeping"}, wantErr: ErrInvalid},
			{name: "empty state", in: apitype.Attempt{ID: "a1"}, wantErr: ErrInvalid},
			{name: "missing run", in: apitype.Attempt{ID: "a1", Run: "r9", State: apitype.StateDone}, wantErr: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before, _ := s.GetAttempt(ctx, "a1")
				err := s.UpdateAttempt(ctx, tt.in)
				wantErr(t, err, tt.wantErr)
				got, _ := s.GetAttempt(ctx, "a1")
				want := tt.in
				if tt.wantErr != nil {
					want = before // a failed update changes nothing
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
	})
}

func TestGetAttemptNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t)
		for _, id := range []string{"", "nope", "a1'; DROP TABLE attempts; --"} {
			t.Run(id, func(t *testing.T) {
				_, err := s.GetAttempt(context.Background(), id)
				wantErr(t, err, ErrNotFound)
				if err != nil && !strings.Contains(err.Error(), "not found") {
					t.Errorf("got message %q, want it to say not found", err)
				}
			})
		}
	})
}
