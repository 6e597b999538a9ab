package store

import (
	"context"
	"slices"
	"testing"

	"benchd.dev/client/apitype"
)

// TestRunTasks: a run's tasks come back as stored, in order; a run
// stored without them has its one task as its tasks.
func TestRunTasks(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		tests := []struct {
			name string
			run  apitype.Run
			want []string
		}{
			{"several tasks", apitype.Run{ID: "r1", Tasks: []string{"rt-03", "rt-01", "rt-02"}, Attempts: []string{"a1", "a2", "a3"}}, []string{"rt-03", "rt-01", "rt-02"}},
			{"one task", apitype.Run{ID: "r2", Task: "rt-01", Tasks: []string{"rt-01"}}, []string{"rt-01"}},
			{"no tasks given", apitype.Run{ID: "r3", Task: "rt-02"}, []string{"rt-02"}},
			{"nothing", apitype.Run{ID: "r4"}, []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				must(t, s.CreateRun(ctx, tt.run))
				got, err := s.GetRun(ctx, tt.run.ID)
				must(t, err)
				if got.Tasks == nil || !slices.Equal(got.Tasks, tt.want) {
					t.Errorf("got tasks %#v, want %#v", got.Tasks, tt.want)
				}
				if got.Task != tt.run.Task {
					t.Errorf("got task %q, want %q", got.Task, tt.run.Task)
				}
			})
		}
	})
}

// TestMigrateRunTasks: a run stored by the schema before runs had tasks
// reads back, after the migration, with its one task as its tasks.
func TestMigrateRunTasks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, stepIndex(t, migrations, "the tasks of a run"))
	_, err := db.ExecContext(ctx, `INSERT INTO runs (id, task, agent, attempts, created) VALUES ('r1', 'rt-01', 'x', '["a1"]', 0)`)
	must(t, err)
	must(t, db.Close())
	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	r, err := s.GetRun(ctx, "r1")
	must(t, err)
	if !slices.Equal(r.Tasks, []string{"rt-01"}) || !slices.Equal(r.Attempts, []string{"a1"}) {
		t.Errorf("got run %+v, want tasks [rt-01] and attempts [a1]", r)
	}
}

// withTasks is r with Tasks tasks.
func withTasks(r apitype.Run, tasks ...string) apitype.Run {
	r.Tasks = tasks
	return r
}
