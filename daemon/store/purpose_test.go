package store

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/pgtest"
)

// TestPurposeRoundTrip: an attempt keeps its purpose through create,
// update, retry and list; an empty purpose is stored as run, an unknown
// one refused.
func TestPurposeRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		tests := []struct {
			name, id, purpose, want string
		}{
			{"empty is run", "a0", "", apitype.PurposeRun},
			{"run", "a1", apitype.PurposeRun, apitype.PurposeRun},
			{"check", "a2", apitype.PurposeCheck, apitype.PurposeCheck},
			{"index", "a3", apitype.PurposeIndex, apitype.PurposeIndex},
			{"review", "a4", apitype.PurposeReview, apitype.PurposeReview},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				mustCreate(t, s, apitype.Attempt{ID: tt.id, Run: "r1", Task: "rt-01", Purpose: tt.purpose, Created: base})
				got, err := s.GetAttempt(ctx, tt.id)
				must(t, err)
				if got.Purpose != tt.want {
					t.Errorf("got purpose %q, want %q", got.Purpose, tt.want)
				}
				// An update keeps it, whatever it passes: one rebuilt
				// without it (as the daemon's end of an attempt is), or
				// one naming another.
				for _, p := range []string{"", apitype.PurposeReview, "fun"} {
					up := got
					up.State, up.Purpose = apitype.StateInfraError, p
					must(t, s.UpdateAttempt(ctx, up))
					again, err := s.GetAttempt(ctx, tt.id)
					must(t, err)
					if again.Purpose != tt.want {
						t.Errorf("after an update with purpose %q: got purpose %q, want %q", p, again.Purpose, tt.want)
					}
				}
			})
		}
		t.Run("a retry of a check is a check", func(t *testing.T) {
			must(t, s.CreateRetry(ctx, apitype.Attempt{ID: "a2r", Run: "r1", Task: "rt-01", Purpose: apitype.PurposeCheck}, "a2", nil))
			got, err := s.GetAttempt(ctx, "a2r")
			must(t, err)
			if got.Purpose != apitype.PurposeCheck {
				t.Errorf("got purpose %q, want %q", got.Purpose, apitype.PurposeCheck)
			}
		})
		t.Run("unknown purpose", func(t *testing.T) {
			wantErr(t, s.CreateAttempt(ctx, apitype.Attempt{ID: "bad", Task: "rt-01", Purpose: "fun"}), ErrInvalid)
			wantErr(t, s.CreateRetry(ctx, apitype.Attempt{ID: "bad", Run: "r1", Task: "rt-01", Purpose: "fun"}, "a3", nil), ErrInvalid)
		})
	})
}

// TestListFilters: each filter of ListAttempts on its own and with
// others, in SQL on both backends.
func TestListFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r2", Task: "rt-02", Created: base}))
		setup := []struct {
			id, run, task, agent, model, purpose, state string
			at                                          time.Duration
		}{
			{"a1", "r1", "rt-01", "builtin:reference", "", apitype.PurposeRun, apitype.StateDone, 0},
			{"a2", "r1", "rt-01", "builtin:attempt:wrong", "", apitype.PurposeCheck, apitype.StateDone, time.Hour},
			{"a3", "r2", "rt-02", "claude -p {plan}", "opus", apitype.PurposeRun, apitype.StateInfraError, 2 * time.Hour},
			{"a4", "r2", "rt-02", "claude -p {plan}", "sonnet", apitype.PurposeRun, apitype.StateDone, 3 * time.Hour},
			{"a5", "", "rt-03", "builtin:reference", "", apitype.PurposeIndex, apitype.StateQueued, 4 * time.Hour},
		}
		for _, a := range setup {
			at := apitype.Attempt{ID: a.id, Run: a.run, Task: a.task, Purpose: a.purpose, Created: base.Add(a.at),
				Agent: apitype.AgentIdentity{Spec: a.agent, Model: a.model}}
			mustCreate(t, s, at)
			if a.state != apitype.StateQueued {
				at.State = a.state
				must(t, s.UpdateAttempt(ctx, at))
			}
		}
		tests := []struct {
			name    string
			f       Filter
			want    []string
			wantErr error
		}{
			{name: "none", f: Filter{}, want: []string{"a5", "a4", "a3", "a2", "a1"}},
			{name: "purpose run", f: Filter{Purposes: []string{apitype.PurposeRun}}, want: []string{"a4", "a3", "a1"}},
			{name: "purposes check and index", f: Filter{Purposes: []string{apitype.PurposeCheck, apitype.PurposeIndex}}, want: []string{"a5", "a2"}},
			{name: "agent", f: Filter{Agent: "builtin:reference"}, want: []string{"a5", "a1"}},
			{name: "agent with spaces", f: Filter{Agent: "claude -p {plan}"}, want: []string{"a4", "a3"}},
			{name: "model", f: Filter{Model: "opus"}, want: []string{"a3"}},
			{name: "tasks", f: Filter{Tasks: []string{"rt-01", "rt-03"}}, want: []string{"a5", "a2", "a1"}},
			{name: "since", f: Filter{Since: base.Add(2 * time.Hour)}, want: []string{"a5", "a4", "a3"}},
			{name: "until", f: Filter{Until: base.Add(2 * time.Hour)}, want: []string{"a2", "a1"}},
			{name: "since and until", f: Filter{Since: base.Add(time.Hour), Until: base.Add(3 * time.Hour)}, want: []string{"a3", "a2"}},
			{name: "agent, purpose and state", f: Filter{Agent: "claude -p {plan}", Purposes: []string{apitype.PurposeRun}, States: []string{apitype.StateDone}}, want: []string{"a4"}},
			{name: "run and model", f: Filter{Run: "r2", Model: "sonnet"}, want: []string{"a4"}},
			{name: "no match", f: Filter{Agent: "builtin:null"}, want: []string{}},
			{name: "unknown purpose", f: Filter{Purposes: []string{"fun"}}, wantErr: ErrInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				list, err := s.ListAttempts(ctx, tt.f)
				wantErr(t, err, tt.wantErr)
				if tt.wantErr != nil {
					return
				}
				if got := ids(list); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			})
		}
	})
}

// TestMigratePurposes: attempts stored before purposes existed read as
// runs, except those of the built-in agents builtin:attempt:NAME, which
// only tasks check submitted; on both backends.
func TestMigratePurposes(t *testing.T) {
	step := func(steps []migration, name string) int {
		for i, m := range steps {
			if m.name == name {
				return i
			}
		}
		t.Fatalf("no migration named %q", name)
		return 0
	}
	for _, tt := range []struct {
		name string
		d    dialect
		// open returns a database at the version before purposes, and
		// the Config that opens it as a store.
		open func(t *testing.T) (*sql.DB, Config)
	}{
		{"sqlite", sqliteDialect{}, func(t *testing.T) (*sql.DB, Config) {
			dir := t.TempDir()
			return openAtVersion(t, dir, step(migrations, "purposes and the blobs of each journal")), Config{Dir: dir}
		}},
		{"postgres", postgresDialect{}, func(t *testing.T) (*sql.DB, Config) {
			url := pgtest.Database(t)
			raw, err := sql.Open("pgx", url)
			must(t, err)
			must(t, migrate(context.Background(), postgresDialect{}, raw, pgMigrations[:step(pgMigrations, "purposes")], quiet))
			return raw, Config{Dir: t.TempDir(), Database: url}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			raw, cfg := tt.open(t)
			db := db{DB: raw, d: tt.d}
			for id, spec := range map[string]string{"plain": "python3 agent.py", "ref": "builtin:reference", "known": "builtin:attempt:off-by-one"} {
				a := fullAttempt(id)
				a.Run, a.Agent.Spec = "", spec
				insertOld(t, db, a)
			}
			must(t, raw.Close())
			s, err := Open(ctx, cfg)
			must(t, err)
			defer s.Close()
			for id, want := range map[string]string{"plain": apitype.PurposeRun, "ref": apitype.PurposeRun, "known": apitype.PurposeCheck} {
				got, err := s.GetAttempt(ctx, id)
				must(t, err)
				if got.Purpose != want {
					t.Errorf("attempt %s (agent %s): got purpose %q, want %q", id, got.Agent.Spec, got.Purpose, want)
				}
			}
		})
	}
}
