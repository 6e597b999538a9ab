package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"benchd.dev/client/apitype"
)

func TestTranscript(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		mustCreate(t, s, apitype.Attempt{ID: "none", Task: "rt-01", Created: base})
		binary := "out\x00\xff\xfe not utf-8\n"
		tests := []struct {
			name    string
			id      string
			save    *apitype.Transcript // saved first, when set
			want    apitype.Transcript
			wantErr error
		}{
			{name: "save", id: "a1", save: &apitype.Transcript{Stdout: "hello\n", Stderr: "warn\n", StderrTruncated: true},
				want: apitype.Transcript{Stdout: "hello\n", Stderr: "warn\n", StderrTruncated: true}},
			{name: "replace, bytes kept", id: "a1", save: &apitype.Transcript{Stdout: binary, StdoutTruncated: true},
				want: apitype.Transcript{Stdout: binary, StdoutTruncated: true}},
			{name: "empty", id: "a1", save: &apitype.Transcript{}, want: apitype.Transcript{}},
			{name: "no transcript", id: "none", wantErr: ErrNotFound},
			{name: "unknown attempt", id: "nope", wantErr: ErrNotFound},
			{name: "save to unknown attempt", id: "nope", save: &apitype.Transcript{Stdout: "x"}, wantErr: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.save != nil {
					err := s.SaveTranscript(ctx, tt.id, *tt.save)
					if tt.wantErr != nil {
						wantErr(t, err, tt.wantErr)
						return
					}
					must(t, err)
				}
				got, err := s.Transcript(ctx, tt.id)
				wantErr(t, err, tt.wantErr)
				if got != tt.want {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			})
		}
	})
}

func TestSaveTranscriptFiles(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		dir := t.TempDir()
		write := func(name string, b []byte) string {
			p := filepath.Join(dir, name)
			must(t, os.WriteFile(p, b, 0o640))
			return p
		}
		big := bytes.Repeat([]byte("x"), MaxTranscriptBytes+10)
		tests := []struct {
			name               string
			stdout, stderr     string
			outTrunc, errTrunc bool
			want               apitype.Transcript
		}{
			{name: "both", stdout: write("out", []byte("o\n")), stderr: write("err", []byte("e\n")),
				want: apitype.Transcript{Stdout: "o\n", Stderr: "e\n"}},
			{name: "same file", stdout: write("both", []byte("oe")), stderr: filepath.Join(dir, "both"),
				want: apitype.Transcript{Stdout: "oe", Stderr: "oe"}},
			{name: "sandbox truncated", stdout: write("cut", []byte("o")), outTrunc: true, errTrunc: true,
				want: apitype.Transcript{Stdout: "o", StdoutTruncated: true, StderrTruncated: true}},
			{name: "missing and empty paths", stdout: filepath.Join(dir, "missing"), stderr: "",
				want: apitype.Transcript{}},
			{name: "over the cap", stdout: write("big", big), stderr: write("e2", []byte("e")),
				want: apitype.Transcript{Stdout: string(big[:MaxTranscriptBytes]), StdoutTruncated: true, Stderr: "e"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				must(t, s.SaveTranscriptFiles(ctx, "a1", tt.stdout, tt.stderr, tt.outTrunc, tt.errTrunc))
				got, err := s.Transcript(ctx, "a1")
				must(t, err)
				if got != tt.want {
					t.Errorf("got stdout %d bytes truncated %v, stderr %q truncated %v; want %d bytes %v, %q %v",
						len(got.Stdout), got.StdoutTruncated, got.Stderr, got.StderrTruncated,
						len(tt.want.Stdout), tt.want.StdoutTruncated, tt.want.Stderr, tt.want.StderrTruncated)
				}
			})
		}
		t.Run("unknown attempt", func(t *testing.T) {
			wantErr(t, s.SaveTranscriptFiles(ctx, "nope", "", "", false, false), ErrNotFound)
		})
	})
}
