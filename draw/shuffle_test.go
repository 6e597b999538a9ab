package draw

import (
	"slices"
	"testing"
)

func TestSplitMix64Vectors(t *testing.T) {
	tests := []struct {
		name string
		seed uint64
		want []uint64
	}{
		// The reference implementation's outputs for seed 1234567.
		{"reference seed 1234567", 1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423}},
		// Seed 000's draw date.
		{"seed 20261004", 20261004, []uint64{15094422879253478162, 6957478756839418767, 6507080491711065624, 16457088984900472575, 8144006063721356994}},
		{"seed 0", 0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewSplitMix64(tt.seed)
			for i, want := range tt.want {
				if got := g.Next(); got != want {
					t.Errorf("output %d: got %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestShuffleVector(t *testing.T) {
	// Given out of order: the shuffle sorts them first.
	ids := []string{"task-09", "task-03", "task-00", "task-07", "task-01", "task-05", "task-02", "task-08", "task-04", "task-06"}
	in := slices.Clone(ids)
	want := []string{"task-01", "task-04", "task-05", "task-06", "task-03", "task-07", "task-09", "task-08", "task-00", "task-02"}
	if got := Shuffle(ids, 20261004); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !slices.Equal(ids, in) {
		t.Errorf("Shuffle modified its input: got %v, want %v", ids, in)
	}
	if got := Shuffle(ids, 20261005); slices.Equal(got, want) {
		t.Errorf("seed 20261005 gives the same permutation as 20261004: %v", got)
	}
}

func TestShuffleSmall(t *testing.T) {
	if got := Shuffle(nil, 1); len(got) != 0 {
		t.Errorf("got %v, want nothing", got)
	}
	if got := Shuffle([]string{"a"}, 1); !slices.Equal(got, []string{"a"}) {
		t.Errorf("got %v, want [a]", got)
	}
}

func TestBelow(t *testing.T) {
	// Every value of [0, 3) comes up about a third of the time.
	g := NewSplitMix64(7)
	var counts [3]int
	for range 3000 {
		v := g.Below(3)
		if v >= 3 {
			t.Fatalf("got %d, want below 3", v)
		}
		counts[v]++
	}
	for v, c := range counts {
		if c < 900 || c > 1100 {
			t.Errorf("value %d: got %d of 3000, want about 1000", v, c)
		}
	}
	// With n = 2^63 + 1, t = 2^63 - 1: outputs below it are rejected.
	n := uint64(1)<<63 + 1
	want := uint64(1)<<63 - 1
	if got := -n % n; got != want {
		t.Errorf("threshold for 2^63+1: got %d, want %d", got, want)
	}
	// Below must throw away outputs under the threshold and reduce the
	// first one at or above it: replay that with a second generator.
	g, ref := NewSplitMix64(20261004), NewSplitMix64(20261004)
	rejected := 0
	for range 100 {
		x := ref.Next()
		for ; x < want; x = ref.Next() {
			rejected++
		}
		if got := g.Below(n); got != x%n {
			t.Fatalf("got %d, want %d", got, x%n)
		}
	}
	if rejected == 0 {
		t.Error("no output was rejected for n = 2^63+1, where about half should be")
	}
}
