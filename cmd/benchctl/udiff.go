package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// diffContext is the number of unchanged lines around each change.
const diffContext = 3

// maxTrace bounds the memory of the line diff (in saved diagonal
// positions); past it, the differing middle of two files is shown as
// removed and added whole, which is correct if not minimal.
const maxTrace = 4 << 20

// isBinary reports whether content is not text: a NUL byte or invalid
// UTF-8.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b)
}

// unifiedDiff returns the unified diff from a (named aName) to b (bName),
// or "" when they are equal. Binary content gets a one-line note.
func unifiedDiff(aName, bName string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	var out strings.Builder
	if isBinary(a) || isBinary(b) {
		fmt.Fprintf(&out, "Binary files %s and %s differ\n", aName, bName)
		return out.String()
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	al, bl := splitLines(a), splitLines(b)
	es := diffLines(al, bl)
	// Each edit's position in a and b, 0-based, before it applies.
	ai, bi := make([]int, len(es)+1), make([]int, len(es)+1)
	for i, e := range es {
		ai[i+1], bi[i+1] = ai[i], bi[i]
		if e.op != '+' {
			ai[i+1]++
		}
		if e.op != '-' {
			bi[i+1]++
		}
	}
	for _, h := range hunks(es) {
		lo, hi := h[0], h[1]
		an, bn := ai[hi]-ai[lo], bi[hi]-bi[lo]
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ai[lo], an), hunkRange(bi[lo], bn))
		for _, e := range es[lo:hi] {
			out.WriteByte(e.op)
			if strings.HasSuffix(e.line, "\n") {
				out.WriteString(e.line)
			} else {
				out.WriteString(e.line)
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return out.String()
}

// hunkRange renders the start (1-based) and length of a hunk side, as
// diff -u does: the line before for an empty side, no length when 1.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits text after each newline; the last line may lack one.
func splitLines(b []byte) []string {
	var ls []string
	s := string(b)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			ls = append(ls, s)
			break
		}
		ls = append(ls, s[:i+1])
		s = s[i+1:]
	}
	return ls
}

// edit is one line of an edit script: ' ' kept, '-' removed, '+' added.
type edit struct {
	op   byte
	line string
}

// hunks groups the changes of es with their context: half-open index
// ranges, merged when fewer than 2*diffContext unchanged lines lie
// between two changes.
func hunks(es []edit) [][2]int {
	var hs [][2]int
	for i, e := range es {
		if e.op == ' ' {
			continue
		}
		lo, hi := max(0, i-diffContext), min(len(es), i+diffContext+1)
		if n := len(hs); n > 0 && lo <= hs[n-1][1] {
			hs[n-1][1] = max(hs[n-1][1], hi)
		} else {
			hs = append(hs, [2]int{lo, hi})
		}
	}
	return hs
}

// diffLines returns a shortest edit script from a to b (Myers' O(ND)
// algorithm), after taking off the common prefix and suffix.
func diffLines(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var es []edit
	for _, l := range a[:pre] {
		es = append(es, edit{' ', l})
	}
	es = append(es, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		es = append(es, edit{' ', l})
	}
	return es
}

// myers finds a shortest edit script. It keeps, for each number of
// differences d, the furthest x reached on every diagonal k in [-d, d],
// and walks those back from the end.
func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return wholesale(a, b)
	}
	maxD := n + m
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d][k+d] = v[k] after step d
	saved := 0
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		saved += 2*d + 1
		if x := v[off+n-m]; (n-m+d)%2 == 0 && n-m >= -d && n-m <= d && x >= n {
			return backtrack(a, b, trace)
		}
		if saved > maxTrace {
			return wholesale(a, b)
		}
	}
	return wholesale(a, b) // not reached: d = n+m always ends
}

// backtrack turns a trace into the edit script, from the end back.
func backtrack(a, b []string, trace [][]int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // prev[k+d-1] = v[k] after step d-1
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		// The step from (px, py), then a snake of equal lines to (x, y).
		mx, my := px+1, py
		if pk == k+1 {
			mx, my = px, py+1
		}
		for x > mx && y > my {
			x--
			y--
			rev = append(rev, edit{' ', a[x]})
		}
		if pk == k+1 {
			rev = append(rev, edit{'+', b[py]})
		} else {
			rev = append(rev, edit{'-', a[px]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{' ', a[x]})
	}
	es := make([]edit, len(rev))
	for i, e := range rev {
		es[len(rev)-1-i] = e
	}
	return es
}

// wholesale removes all of a and adds all of b.
func wholesale(a, b []string) []edit {
	es := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		es = append(es, edit{'-', l})
	}
	for _, l := range b {
		es = append(es, edit{'+', l})
	}
	return es
}
