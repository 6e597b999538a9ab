package draw

import (
	"testing"

	"benchd.dev/tasks"
)

func TestGroupKey(t *testing.T) {
	change := func(world string, cs ...string) Task {
		return Task{ID: "x", World: world, Changeset: cs}
	}
	replyTask := func(world string, needs, faults []string) Task {
		return Task{ID: "x", World: world, Difficulty: []string{tasks.TagReplyOnly}, Needs: needs, Faults: faults}
	}
	tests := []struct {
		name string
		a, b Task
		same bool
	}{
		{"same changes", change("work-files", "modified a.txt", "added b.txt"), change("work-files", "modified a.txt", "added b.txt"), true},
		{"same changes in another order", change("work-files", "added b.txt", "modified a.txt"), change("work-files", "modified a.txt", "added b.txt"), true},
		{"same changes in another world", change("work-files", "modified a.txt"), change("notes", "modified a.txt"), false},
		{"same path, different kinds", change("work-files", "added a.txt"), change("work-files", "modified a.txt"), false},
		{"a subset of the changes", change("work-files", "modified a.txt"), change("work-files", "modified a.txt", "added b.txt"), false},
		{"a rename is not a delete and an add", change("work-files", "renamed a.txt -> b.txt"), change("work-files", "deleted a.txt", "added b.txt"), false},
		{"renames to different places", change("work-files", "renamed a.txt -> b.txt"), change("work-files", "renamed a.txt -> c.txt"), false},
		{"reply-only, same world, nothing needed", replyTask("mail", nil, nil), replyTask("mail", nil, nil), true},
		{"reply-only, another world", replyTask("mail", nil, nil), replyTask("calendar", nil, nil), false},
		{"reply-only split by needs", replyTask("mail", []string{"memory-across-sessions"}, nil), replyTask("mail", nil, nil), false},
		{"reply-only, same needs", replyTask("mail", []string{"a", "memory-across-sessions"}, nil), replyTask("mail", []string{"a", "memory-across-sessions"}, nil), true},
		{"reply-only split by faults", replyTask("mail", nil, []string{"bounce"}), replyTask("mail", nil, nil), false},
		{"reply-only, different faults", replyTask("mail", nil, []string{"bounce"}), replyTask("mail", nil, []string{"timeout"}), false},
		{"reply-only, a need is not a fault", replyTask("mail", []string{"bounce"}, nil), replyTask("mail", nil, []string{"bounce"}), false},
		{"reply-only is not a change group", replyTask("mail", nil, nil), change("mail", "added mail/x.eml"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := GroupKey(tt.a), GroupKey(tt.b)
			if got := ka == kb; got != tt.same {
				t.Errorf("got same group %v (%s, %s), want %v", got, ka, kb, tt.same)
			}
		})
	}
}

func TestGroupKeyForm(t *testing.T) {
	tests := []struct {
		name string
		task Task
		want string
	}{
		{"changes", Task{World: "work-files", Changeset: []string{"modified a.txt"}},
			"work-files/changes:" + ChangesetDigest([]string{"modified a.txt"})},
		{"reply, nothing", Task{World: "mail"}, "mail/reply:needs=-:faults=-"},
		{"reply, needs and faults", Task{World: "mail", Needs: []string{"a", "b"}, Faults: []string{"f"}}, "mail/reply:needs=a+b:faults=f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GroupKey(tt.task); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// The digest: SHA-256 of "modified a.txt\n", first 16 hex digits
	// (sha256sum gives the same).
	if got, want := ChangesetDigest([]string{"modified a.txt"}), "1c46c6ddf7c8cecd"; got != want {
		t.Errorf("got digest %q, want %q", got, want)
	}
	if got, want := ChangesetDigest([]string{"b", "a"}), ChangesetDigest([]string{"a", "b"}); got != want {
		t.Errorf("digest depends on order: got %q, want %q", got, want)
	}
}

func TestGroups(t *testing.T) {
	ts := []Task{
		{ID: "c", World: "w", Changeset: []string{"modified a"}},
		{ID: "a", World: "w", Changeset: []string{"modified a"}},
		{ID: "b", World: "w", Changeset: []string{"added a"}},
		{ID: "d", World: "w", Difficulty: []string{tasks.TagReplyOnly}},
	}
	gs := Groups(ts)
	if len(gs) != 3 {
		t.Fatalf("got %d groups, want 3: %+v", len(gs), gs)
	}
	sizes := map[string]int{}
	for i, g := range gs {
		if i > 0 && gs[i-1].Key >= g.Key {
			t.Errorf("groups not sorted by key: %q before %q", gs[i-1].Key, g.Key)
		}
		for _, id := range g.Tasks {
			sizes[id] = len(g.Tasks)
		}
		if g.World != "w" {
			t.Errorf("group %s: got world %q, want w", g.Key, g.World)
		}
	}
	for id, want := range map[string]int{"a": 2, "c": 2, "b": 1, "d": 1} {
		if sizes[id] != want {
			t.Errorf("task %s: got a group of %d, want %d", id, sizes[id], want)
		}
	}
}

func TestExclusions(t *testing.T) {
	tests := []struct {
		name                string
		task                Task
		before, after       bool
		whyBefore, whyAfter string
	}{
		{"accounts and internet", Task{NeedsAccounts: true, NeedsInternet: true}, true, false, ReasonAccountsInternet, ""},
		{"accounts alone", Task{NeedsAccounts: true}, false, false, "", ""},
		{"internet alone", Task{NeedsInternet: true}, false, false, "", ""},
		{"robot check", Task{RobotCheck: true}, false, true, "", ReasonRobotCheck},
		{"nothing", Task{}, false, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, got := ExcludedBefore(tt.task)
			if got != tt.before || why != tt.whyBefore {
				t.Errorf("ExcludedBefore: got %v %q, want %v %q", got, why, tt.before, tt.whyBefore)
			}
			why, got = RemovedAfter(tt.task)
			if got != tt.after || why != tt.whyAfter {
				t.Errorf("RemovedAfter: got %v %q, want %v %q", got, why, tt.after, tt.whyAfter)
			}
		})
	}
}
