package journal

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// smallJournal writes a three-record journal and returns its lines.
func smallJournal(t *testing.T, recs ...Record) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestReadRejects(t *testing.T) {
	lines := smallJournal(t,
		Record{Op: OpMount, Result: "ok", SHA256: EmptySHA256, Wall: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)},
		Record{Op: OpCreate, Path: "a<b", Result: "ok", Decision: Allowed},
		Record{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256},
	)
	edit := func(i int, f func(string) string) string {
		out := append([]string{}, lines...)
		out[i] = f(out[i])
		return strings.Join(out, "")
	}
	replace := func(i int, old, new string) string {
		return edit(i, func(l string) string {
			if !strings.Contains(l, old) {
				t.Fatalf("line %d %q has no %q", i+1, l, old)
			}
			return strings.Replace(l, old, new, 1)
		})
	}
	tests := []struct {
		name     string
		journal  string
		wantLine int
		reason   string
	}{
		{"garbage", edit(1, func(string) string { return "garbage\n" }), 2, "invalid character"},
		{"empty line", edit(1, func(string) string { return "\n" }), 2, "empty line"},
		{"cut inside a line", strings.Join(lines[:2], "") + lines[2][:40], 3, "unexpected end"},
		{"crlf", edit(0, func(l string) string { return strings.TrimSuffix(l, "\n") + "\r\n" }), 1, "canonical"},
		{"space after a colon", replace(1, `"op":"create"`, `"op": "create"`), 2, "canonical"},
		{"unknown key", replace(1, `"op":"create"`, `"op":"create","extra":1`), 2, "canonical"},
		{"repeated key", replace(1, `"op":"create"`, `"op":"create","op":"create"`), 2, "canonical"},
		{"key in another case", replace(1, `"op":"create"`, `"OP":"create"`), 2, "canonical"},
		{"other escaping", replace(1, `a\u003cb`, `a<b`), 2, "canonical"},
		{"time not in UTC", replace(0, `00:00:00.000000005Z`, `01:00:00.000000005+01:00`), 1, "canonical"},
		{"short hash", edit(2, func(l string) string { return l[:len(l)-5] + `"}` + "\n" }), 3, "64 hex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			if err := os.WriteFile(path, []byte(tt.journal), 0o644); err != nil {
				t.Fatal(err)
			}
			recs, err := Read(path)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %d records, %v; want a *ParseError", len(recs), err)
			}
			if pe.Line != tt.wantLine || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("got line %d %q, want line %d mentioning %q", pe.Line, err, tt.wantLine, tt.reason)
			}
			if len(recs) != tt.wantLine-1 {
				t.Errorf("got %d records before the error, want %d", len(recs), tt.wantLine-1)
			}
		})
	}
}

func TestReaderStreams(t *testing.T) {
	long := strings.Repeat("d/", 60000) + "f" // longer than the read buffer
	lines := smallJournal(t,
		Record{Op: OpMount, Result: "ok", SHA256: EmptySHA256},
		Record{Op: OpCreate, Path: long, Result: "ok", Decision: Allowed},
		Record{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256},
	)
	all := strings.Join(lines, "")
	tests := []struct {
		name    string
		journal string
	}{
		{"with final newline", all},
		{"without final newline", strings.TrimSuffix(all, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := NewReader(strings.NewReader(tt.journal))
			var got []Record
			for {
				r, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
				if rd.Line() != len(got) {
					t.Errorf("Line: got %d, want %d", rd.Line(), len(got))
				}
			}
			if len(got) != 3 || got[1].Path != long {
				t.Fatalf("got %d records, want 3 with the long path", len(got))
			}
			if err := Verify(got, nil); err != nil {
				t.Errorf("Verify: %v", err)
			}
			if _, err := rd.Next(); err != io.EOF {
				t.Errorf("Next after the end: got %v, want io.EOF", err)
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "none"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error matching os.ErrNotExist", err)
	}
	recs, err := Read(writeTemp(t, ""))
	if err != nil || len(recs) != 0 {
		t.Errorf("empty file: got %v, %v; want no records", recs, err)
	}
	if !reflect.DeepEqual(recs, []Record(nil)) {
		t.Errorf("empty file: got %#v, want nil", recs)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecodeCanonicalAgreesWithEncodingJSON(t *testing.T) {
	wall := time.Date(2026, 11, 29, 18, 24, 37, 123456789, time.UTC)
	tests := []struct {
		name string
		rec  Record
		fast bool // the fast decoder must take it
	}{
		{"minimal", Record{Op: OpMount, Result: "ok"}, true},
		{"every field", Record{Seq: 1<<64 - 1, Mono: -7, Wall: wall, Op: OpRename, Path: "a/b", Path2: "c d", Target: "t",
			PID: 1<<32 - 1, UID: 1, Comm: "sh", Offset: -1 << 63, Size: 1<<63 - 1, Mode: 0o100644, Flags: 2, Name: "user.k",
			Result: "EACCES", Decision: Denied, SHA256: EmptySHA256, Prev: GenesisHash}, true},
		{"unicode without escapes", Record{Op: OpCreate, Path: "données/日本.txt", Result: "ok"}, true},
		{"escaped quote", Record{Op: OpCreate, Path: `a"b`, Result: "ok"}, false},
		{"html escapes", Record{Op: OpCreate, Path: "a<b>", Result: "ok"}, false},
		{"control characters", Record{Op: OpCreate, Path: "a\nb", Result: "ok"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Hash = tt.rec.ComputeHash()
			line := []byte(strings.TrimSuffix(encodeLine(tt.rec), "\n"))
			var want Record
			if err := json.Unmarshal(line, &want); err != nil {
				t.Fatal(err)
			}
			var got Record
			ok := decodeCanonical(line, &got)
			if ok != tt.fast {
				t.Errorf("fast decoder took it: got %v, want %v", ok, tt.fast)
			}
			if ok && !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			parsed, err := parseLine(line)
			if err != nil || !reflect.DeepEqual(parsed, want) {
				t.Errorf("parseLine: got %+v, %v; want %+v", parsed, err, want)
			}
		})
	}
}
