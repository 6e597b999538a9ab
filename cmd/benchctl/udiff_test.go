package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{"equal", "x\ny\n", "x\ny\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n",
			"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added to empty", "", "one\ntwo\n",
			"--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
		{"all removed", "one\n", "",
			"--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-one\n"},
		{"newline added at the end", "a\nb", "a\nb\n",
			"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"context is three lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
		{"close changes merge", "1\n2\n3\n4\n5\n6\n7\n8\n", "one\n2\n3\n4\n5\n6\n7\neight\n",
			"--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n-1\n+one\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+eight\n"},
		{"insertion in the middle", "a\nb\nc\nd\n", "a\nb\nnew\nc\nd\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,5 @@\n a\n b\n+new\n c\n d\n"},
		{"binary", "a\x00b", "a\x00c", "Binary files a/f and b/f differ\n"},
		{"invalid utf-8", "\xff\n", "x\n", "Binary files a/f and b/f differ\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unifiedDiff("a/f", "b/f", []byte(tt.a), []byte(tt.b)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// lcs is the length of a longest common subsequence, by dynamic
// programming: a shortest edit script keeps exactly that many lines.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

func TestDiffLinesIsShortestAndCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a\n", "b\n", "c\n", "d\n"}
	gen := func() []string {
		n := r.IntN(25)
		out := make([]string, n)
		for i := range out {
			out[i] = words[r.IntN(len(words))]
		}
		return out
	}
	for i := 0; i < 2000; i++ {
		a, b := gen(), gen()
		es := diffLines(a, b)
		var gotA, gotB []string
		kept := 0
		for _, e := range es {
			if e.op != '+' {
				gotA = append(gotA, e.line)
			}
			if e.op != '-' {
				gotB = append(gotB, e.line)
			}
			if e.op == ' ' {
				kept++
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("case %d: the script does not turn %q into %q: %v", i, a, b, es)
		}
		if want := lcs(a, b); kept != want {
			t.Fatalf("case %d: got %d lines kept, want %d (a shortest script) for %q -> %q", i, kept, want, a, b)
		}
	}
}

func TestDiffLinesLargeFallsBack(t *testing.T) {
	// Two long files with nothing in common exceed the trace bound: the
	// script is still correct, all removed then all added.
	n := 3000
	a, b := make([]string, n), make([]string, n)
	for i := range a {
		a[i] = "a" + strings.Repeat("x", i%7) + "\n"
		b[i] = "b" + strings.Repeat("y", i%5) + "\n"
	}
	es := diffLines(a, b)
	if len(es) != 2*n || es[0].op != '-' || es[n].op != '+' {
		t.Errorf("got %d edits starting %c, want %d removals then %d additions", len(es), es[0].op, n, n)
	}
}
