package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// visible returns s with everything a terminal would act on rather than
// show made visible: C0 control characters and DEL (ESC, CR, BEL, the
// starts of CSI and OSC sequences, title and clipboard writes among
// them) as \xNN, C1 control characters (U+0080 to U+009F, which some
// terminals take as CSI and OSC) and the bidi controls U+202A-U+202E
// and U+2066-U+2069 (which reorder what follows them) as \u{NNNN}, and
// each byte of invalid UTF-8 as \xNN. With lines, \n and \t stay (the
// text's own line and column breaks: a transcript, a diff, a stored
// message); without, they are made visible too (a name, one field of a
// table or a line). It is the one function benchctl prints an agent's
// text through, to a terminal or not (--json and --raw print the bytes);
// its output holds no control character but the kept \n and \t.
func visible(s string, lines bool) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if mustShow(r, lines) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			if lines && (r == '\n' || r == '\t') {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\x%02x`, r)
			}
		case mustShow(r, lines):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// mustShow reports whether visible escapes r.
func mustShow(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
