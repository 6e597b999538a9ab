package main

import "testing"

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		in    string
		lines bool
		want  string
	}{
		{"src/a.py", false, "src/a.py"},
		{"héllo \ufffd", false, "héllo \ufffd"},
		{"a\nb\tc", false, `a\x0ab\x09c`},
		{"a\nb\tc", true, "a\nb\tc"},
		{"\x1b[8mx\r\x1b[2KPASS", true, `\x1b[8mx\x0d\x1b[2KPASS`},
		{"\x1b]52;c;aGk=\x07", false, `\x1b]52;c;aGk=\x07`},
		{"\u202egnp.exe\u2066", false, `\u{202e}gnp.exe\u{2066}`},
		{"\u009b31m\xc2\x9b", false, `\u{009b}31m\u{009b}`},
		{"\xff\xfe\x7f", false, `\xff\xfe\x7f`},
	} {
		if got := visible(c.in, c.lines); got != c.want {
			t.Errorf("visible(%q, %v): got %q, want %q", c.in, c.lines, got, c.want)
		}
	}
}
