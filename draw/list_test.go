package draw

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"benchd.dev/tasks"
)

const fixtureSeed = 20261004

func loadFixture(t *testing.T) *Library {
	t.Helper()
	lib, err := Load(LoadConfig{Manifests: []string{fixturePath}})
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func drawFixture(t *testing.T, cap int) *Result {
	t.Helper()
	res, err := Draw(loadFixture(t), Rule{Seed: fixtureSeed, Cap: cap})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSeed000Figures draws the fixture with seed 000's seed and checks
// every figure the seed publishes, in the result and in the list.
func TestSeed000Figures(t *testing.T) {
	res := drawFixture(t, DefaultCap)
	var workFiles WorldCount
	for _, w := range res.Worlds {
		if w.World == "work-files" {
			workFiles = w
		}
	}
	figures := []struct {
		name      string
		got, want int
	}{
		{"library size", res.LibrarySize, 312},
		{"excluded before the draw", len(res.Excluded), 3},
		{"eligible", res.Eligible, 309},
		{"groups", res.Groups, 128},
		{"drawn", len(res.Drawn), 170},
		{"removed after the draw", len(res.Removed), 1},
		{"listed", len(res.List), 169},
		{"worlds in the list", res.WorldsIn, 10},
		{"worlds in the library", res.WorldsAll, 11},
		{"work files share, percent", workFiles.Percent, 40},
	}
	for _, f := range figures {
		t.Run(f.name, func(t *testing.T) {
			if f.got != f.want {
				t.Errorf("got %d, want %d", f.got, f.want)
			}
		})
	}
	t.Run("exclusion reasons", func(t *testing.T) {
		for _, e := range res.Excluded {
			if e.Reason != ReasonAccountsInternet {
				t.Errorf("%s: got reason %q, want %q", e.ID, e.Reason, ReasonAccountsInternet)
			}
		}
		if len(res.Removed) == 1 && (res.Removed[0].ID != "tix-concert-presale-1" || res.Removed[0].Reason != ReasonRobotCheck) {
			t.Errorf("got removed %+v, want the robot-check task tix-concert-presale-1", res.Removed[0])
		}
	})
	t.Run("the missing world is the robot-check world", func(t *testing.T) {
		for _, w := range res.Worlds {
			if (w.Listed == 0) != (w.World == "ticketing") {
				t.Errorf("world %s: got %d listed", w.World, w.Listed)
			}
		}
	})
	t.Run("counts printed", func(t *testing.T) {
		list := string(res.Render())
		_, counts, ok := strings.Cut(list, "\ncounts\n")
		if !ok {
			t.Fatalf("got no counts section in\n%s", list)
		}
		for _, want := range []string{
			"library 312\n", "excluded-before 3\n", "eligible 309\n", "groups 128\n", "drawn 170\n",
			"removed-after 1\n", "removed tix-concert-presale-1 ticketing: " + ReasonRobotCheck + "\n",
			"listed 169\n", "worlds 10 of 11\n", "world work-files listed 68 share 40% ",
			"excluded bank-live-balance-1 banking: " + ReasonAccountsInternet + "\n",
		} {
			if !strings.Contains(counts, want) {
				t.Errorf("got counts\n%s\nwant them to contain %q", counts, want)
			}
		}
	})
}

// TestGoldenList pins the whole list drawn from the fixture with seed
// 20261004: a re-implementation of the rule can compare against it.
func TestGoldenList(t *testing.T) {
	const golden = "testdata/draw-20261004.list"
	got := drawFixture(t, DefaultCap).Render()
	if *updateFixtures {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := Compare(got, want); d != nil {
		t.Errorf("the list differs from %s: %s", golden, d.Message)
	}
}

func TestListInvariants(t *testing.T) {
	lib := loadFixture(t)
	byID := map[string]Task{}
	for _, tk := range lib.Tasks {
		byID[tk.ID] = tk
	}
	for _, cap := range []int{1, 2, 3} {
		res := drawFixture(t, cap)
		per := map[string]int{}
		for i, p := range res.Drawn {
			per[p.Group]++
			if i > 0 && res.Drawn[i-1].Shuffle >= p.Shuffle {
				t.Errorf("cap %d: the draw is not in shuffle order at %d", cap, i)
			}
			if _, ex := ExcludedBefore(byID[p.ID]); ex {
				t.Errorf("cap %d: excluded task %s was drawn", cap, p.ID)
			}
			if GroupKey(byID[p.ID]) != p.Group {
				t.Errorf("cap %d: task %s listed in group %s, its key is %s", cap, p.ID, p.Group, GroupKey(byID[p.ID]))
			}
		}
		for g, n := range per {
			if n > cap {
				t.Errorf("cap %d: group %s gave %d tasks", cap, g, n)
			}
		}
	}
}

func TestCap(t *testing.T) {
	lib := loadFixture(t)
	var eligible []Task
	for _, tk := range lib.Tasks {
		if _, ex := ExcludedBefore(tk); !ex {
			eligible = append(eligible, tk)
		}
	}
	groups := Groups(eligible)
	tests := []struct {
		cap       int
		wantDrawn int
	}{
		{1, 128},
		{2, 170},
		{3, 0}, // computed below: the sum over groups of min(size, 3)
	}
	for _, g := range groups {
		tests[2].wantDrawn += min(len(g.Tasks), 3)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("cap %d", tt.cap), func(t *testing.T) {
			res := drawFixture(t, tt.cap)
			if got := len(res.Drawn); got != tt.wantDrawn {
				t.Errorf("got %d drawn, want %d", got, tt.wantDrawn)
			}
			if got, want := len(res.List), tt.wantDrawn-1; got != want {
				t.Errorf("got %d listed, want %d (the robot-check task is alone in its group)", got, want)
			}
		})
	}
	if tests[2].wantDrawn <= 170 {
		t.Errorf("cap 3 draws %d, want more than cap 2's 170", tests[2].wantDrawn)
	}
	if _, err := Draw(lib, Rule{Seed: 1, Cap: 0}); err == nil {
		t.Error("cap 0: got no error, want one")
	}
}

func TestGapFilling(t *testing.T) {
	tag := func(tags ...string) []string { return tags }
	tests := []struct {
		name string
		cap  int
		// members in shuffle order, with their tags
		tags [][]string
		want []string // picked members by index, then how
	}{
		{"second fills a missing tag", 2,
			[][]string{tag(tasks.TagConnector), tag(tasks.TagConnector), tag(tasks.TagApproval), tag(tasks.TagProactive)},
			[]string{"0 first", "2 fills:approval"}},
		{"a tag the first has fills nothing", 2,
			[][]string{tag(tasks.TagConnector, tasks.TagApproval), tag(tasks.TagApproval), tag(tasks.TagConnector)},
			[]string{"0 first", "1 next"}},
		{"no tags anywhere: the next in the shuffle", 2,
			[][]string{nil, nil, nil},
			[]string{"0 first", "1 next"}},
		{"the first without tags: any tag fills", 2,
			[][]string{nil, nil, tag(tasks.TagSafetyBoundary)},
			[]string{"0 first", "2 fills:safety-boundary"}},
		{"cap 1 takes the first only", 1,
			[][]string{nil, tag(tasks.TagApproval)},
			[]string{"0 first"}},
		{"cap 3: the third fills what neither has", 3,
			[][]string{tag(tasks.TagConnector), tag(tasks.TagApproval), tag(tasks.TagApproval), tag(tasks.TagConnector), tag(tasks.TagMultiSession)},
			[]string{"0 first", "1 fills:approval", "4 fills:multi-session"}},
		{"cap 3: nothing left to fill", 3,
			[][]string{tag(tasks.TagConnector), tag(tasks.TagApproval), tag(tasks.TagApproval), tag(tasks.TagConnector)},
			[]string{"0 first", "1 fills:approval", "2 next"}},
		{"a group smaller than the cap", 3,
			[][]string{nil, nil},
			[]string{"0 first", "1 next"}},
		{"several tags filled at once", 2,
			[][]string{tag(tasks.TagConnector), tag(tasks.TagApproval, tasks.TagProactive)},
			[]string{"0 first", "1 fills:approval,proactive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byID := map[string]Task{}
			pos := map[string]int{}
			var members []string
			for i, tags := range tt.tags {
				id := string(rune('a' + i))
				byID[id] = Task{ID: id, Difficulty: tags}
				pos[id] = i
				members = append(members, id)
			}
			picks := pickGroup(Group{Key: "k", World: "w"}, members, byID, pos, tt.cap)
			var got []string
			for _, p := range picks {
				got = append(got, string(rune('0'+pos[p.ID]))+" "+p.How)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGapFillingThroughDraw draws a small library whose shuffle order is
// known, so the gap-filling rule is seen end to end.
func TestGapFillingThroughDraw(t *testing.T) {
	ids := []string{"t-0", "t-1", "t-2", "t-3", "t-4", "t-5", "t-6", "t-7", "t-8", "t-9"}
	order := Shuffle(ids, fixtureSeed)
	// One group; every task but the one sixth in the shuffle carries
	// connector, that one carries connector and approval.
	var ts []Task
	for _, id := range ids {
		tags := []string{tasks.TagConnector}
		if id == order[5] {
			tags = append(tags, tasks.TagApproval)
		}
		ts = append(ts, Task{ID: id, World: "w", Difficulty: tags, Changeset: []string{"modified a"}})
	}
	lib, err := New(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Draw(lib, Rule{Seed: fixtureSeed, Cap: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.List {
		got = append(got, p.ID+" "+p.How)
	}
	want := []string{order[0] + " first", order[5] + " fills:approval"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestExcludedNeverDrawn(t *testing.T) {
	ts := []Task{
		{ID: "a", World: "w", Changeset: []string{"modified a"}, NeedsAccounts: true, NeedsInternet: true},
		{ID: "b", World: "w", Changeset: []string{"modified b"}, NeedsAccounts: true},
		{ID: "c", World: "w", Changeset: []string{"modified c"}, NeedsInternet: true},
		{ID: "d", World: "v", Changeset: []string{"modified d"}, RobotCheck: true},
	}
	lib, err := New(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Draw(lib, Rule{Seed: 1, Cap: 2})
	if err != nil {
		t.Fatal(err)
	}
	var listed, removed, excluded []string
	for _, p := range res.List {
		listed = append(listed, p.ID)
	}
	for _, r := range res.Removed {
		removed = append(removed, r.ID)
	}
	for _, r := range res.Excluded {
		excluded = append(excluded, r.ID)
	}
	slices.Sort(listed)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"listed", listed, []string{"b", "c"}},
		{"removed after", removed, []string{"d"}},
		{"excluded before", excluded, []string{"a"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	if res.WorldsIn != 1 || res.WorldsAll != 2 {
		t.Errorf("got %d of %d worlds, want 1 of 2", res.WorldsIn, res.WorldsAll)
	}
}

func TestDeterminism(t *testing.T) {
	a := drawFixture(t, DefaultCap).Render()
	b := drawFixture(t, DefaultCap).Render()
	if !bytes.Equal(a, b) {
		t.Fatal("two draws with one seed differ")
	}
	// The same tasks read in another order give the same list.
	lib := loadFixture(t)
	rev := slices.Clone(lib.Tasks)
	slices.Reverse(rev)
	lib2, err := New(rev, nil)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Draw(lib2, Rule{Seed: fixtureSeed, Cap: DefaultCap})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, res2.Render()) {
		t.Error("the list depends on the order the tasks were read in")
	}
	res3, err := Draw(lib, Rule{Seed: fixtureSeed + 1, Cap: DefaultCap})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, res3.Render()) {
		t.Error("seeds 20261004 and 20261005 give the same list")
	}
}

func TestPercent(t *testing.T) {
	tests := []struct{ n, total, want int }{
		{68, 169, 40}, {67, 169, 40}, {66, 169, 39}, {1, 8, 13}, {1, 200, 1}, {1, 201, 0}, {0, 0, 0}, {169, 169, 100},
	}
	for _, tt := range tests {
		if got := Percent(tt.n, tt.total); got != tt.want {
			t.Errorf("Percent(%d, %d): got %d, want %d", tt.n, tt.total, got, tt.want)
		}
	}
}

// editList returns list with its task lines changed by edit, which gets
// the task lines and returns new ones.
func editList(t *testing.T, list []byte, edit func([]string) []string) []byte {
	t.Helper()
	s := string(list)
	start := strings.Index(s, "\ntasks\n") + len("\ntasks\n")
	end := strings.Index(s, "\n\ncounts\n") + 1
	lines := strings.Split(strings.TrimSuffix(s[start:end], "\n"), "\n")
	return []byte(s[:start] + strings.Join(edit(lines), "\n") + "\n" + s[end:])
}

func TestVerify(t *testing.T) {
	lib := loadFixture(t)
	res := drawFixture(t, DefaultCap)
	list := res.Render()
	listed := map[string]bool{}
	for _, p := range res.List {
		listed[p.ID] = true
	}
	var undrawn string
	for _, tk := range lib.Tasks {
		if _, ex := ExcludedBefore(tk); !ex && !listed[tk.ID] && !tk.RobotCheck {
			undrawn = tk.ID
			break
		}
	}
	seed := uint64(fixtureSeed)
	other := uint64(fixtureSeed + 1)
	smaller, err := New(lib.Tasks[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		list     []byte
		lib      *Library
		seed     *uint64
		wantWhat string // "" for no difference
		wantLine int
	}{
		{"identical", list, lib, nil, "", 0},
		{"identical, seed asked", list, lib, &seed, "", 0},
		{"a task changed", editList(t, list, func(l []string) []string {
			l[4] = strings.Replace(l[4], " first", " next", 1)
			return l
		}), lib, nil, "changed", 16},
		{"a task added", editList(t, list, func(l []string) []string {
			return slices.Insert(l, 3, "4 "+undrawn+" w g first")
		}), lib, nil, "added", 15},
		{"a task removed", editList(t, list, func(l []string) []string {
			return slices.Delete(l, 6, 7)
		}), lib, nil, "removed", 18},
		{"two tasks swapped", editList(t, list, func(l []string) []string {
			a, b := strings.SplitN(l[7], " ", 2), strings.SplitN(l[8], " ", 2)
			l[7], l[8] = a[0]+" "+b[1], b[0]+" "+a[1]
			return l
		}), lib, nil, "reordered", 19},
		{"the seed changed", bytes.Replace(list, []byte("seed 20261004\n"), []byte("seed 20261005\n"), 1), lib, nil, "", -1},
		{"the seed is not the one asked for", list, lib, &other, "seed", 2},
		{"the library changed", list, smaller, nil, "head", 9},
		{"a count changed", bytes.Replace(list, []byte("groups 128\n"), []byte("groups 127\n"), 1), lib, nil, "counts", 0},
		{"cut short", list[:len(list)-40], lib, nil, "counts", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d, err := Verify(tt.list, tt.lib, tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantWhat == "" && tt.wantLine == 0:
				if d != nil {
					t.Errorf("got difference %q, want none", d.Message)
				}
				return
			case d == nil:
				t.Fatalf("got no difference, want one")
			case tt.wantWhat == "":
				// A changed seed redraws another list: any task line may
				// be the first to differ.
				if !slices.Contains([]string{"changed", "added", "removed", "reordered"}, d.What) {
					t.Errorf("got %q (%s), want a task difference", d.What, d.Message)
				}
				return
			}
			if d.What != tt.wantWhat {
				t.Errorf("got %q (%s), want %q", d.What, d.Message, tt.wantWhat)
			}
			if tt.wantLine > 0 && d.Line != tt.wantLine {
				t.Errorf("got line %d (%s), want %d", d.Line, d.Message, tt.wantLine)
			}
			if d.Message == "" {
				t.Error("got an empty message")
			}
		})
	}
}

func TestVerifyBadList(t *testing.T) {
	lib := loadFixture(t)
	for _, tt := range []struct{ name, list string }{
		{"empty", ""},
		{"not a list", "hello\n"},
		{"no seed", ListVersion + "\ncap 2\n\n"},
		{"seed not a number", ListVersion + "\nseed x\ncap 2\n\n"},
		{"cap 0", ListVersion + "\nseed 1\ncap 0\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Verify([]byte(tt.list), lib, nil); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
}
