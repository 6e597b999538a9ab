package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/pgtest"
)

// hostileAgent names files with every byte Linux allows in a name (all
// but NUL and '/'), invalid UTF-8, newlines, tabs, terminal escape
// sequences and bidi overrides, the longest names (255 bytes) and a long
// path, in ignored paths (__pycache__/, *.tmp) and in paths the policy
// denies (src/, tests/); its command name (comm) and its output carry
// escape sequences too. It fixes nothing: the attempt must be scored (a
// fail), never an infra error.
const hostileAgent = `python3 -c '
import ctypes, os, sys
names = [bytes(range(1, 47)) + bytes(range(48, 128)), bytes(range(128, 256)),
	b"\xff\xfe", b"a\nb", b"tab\there", b"cr\r\x1b[2KPASS", b"\x1b]0;title\x07",
	b"\x1b]52;c;aGk=\x07", "\u202eyp.tset".encode(), b"\x9b31m\xc2\x9b", b"\xc3" * 255, b"n" * 255]
os.makedirs(b"__pycache__", exist_ok=True)
libc = ctypes.CDLL(None)
libc.prctl(15, b"\x1b[8m\xff\r", 0, 0, 0)
for i, n in enumerate(names):
	with open(b"__pycache__/" + n, "wb") as f:
		f.write(n)
	os.symlink(n, b"__pycache__/link%d" % i)
	os.rename(b"__pycache__/" + n, b"__pycache__/" + n[:254] + b"r")
	with open(n[:251] + b".tmp", "wb") as f:
		f.write(b"x")
	for p in (b"src/" + n, b"tests/test_public.py"):
		try:
			open(p, "ab")
		except OSError:
			pass
deep = b"__pycache__"
for i in range(14):
	deep += b"/" + bytes([0x80 + i]) * 255
	os.mkdir(deep)
open(deep + b"/\xff", "wb").write(b"deep")
sys.stdout.buffer.write(b"\x1b[2J\x1b[HVERDICT: PASS\r\x1b]52;c;aGk=\x07\xff\xe2\x80\xae\n")
sys.stderr.buffer.write(b"\x1b]0;owned\x07\x9b2J\n")
'`

// hostileNames are the names hostileAgent makes in __pycache__/ (after
// its renames): each must be in the journal as its bytes.
func hostileNames() []string {
	var low, high []byte
	for c := 1; c < 256; c++ {
		switch {
		case c == '/':
		case c < 128:
			low = append(low, byte(c))
		default:
			high = append(high, byte(c))
		}
	}
	names := []string{string(low), string(high), "\xff\xfe", "a\nb", "tab\there", "cr\r\x1b[2KPASS", "\x1b]0;title\x07",
		"\x1b]52;c;aGk=\x07", "\u202eyp.tset", "\x9b31m\xc2\x9b", strings.Repeat("\xc3", 255), strings.Repeat("n", 255)}
	for i, n := range names {
		names[i] = "__pycache__/" + n[:min(len(n), 254)] + "r"
	}
	return names
}

// An agent's names of any bytes, on SQLite and on PostgreSQL: the
// attempt is scored, its journal holds every name as its bytes, and its
// export verifies.
func TestHostileNames(t *testing.T) {
	require(t)
	t.Run("sqlite", func(t *testing.T) {
		checkHostileNames(t, shared(t), runHostile(t, shared(t)))
	})
	t.Run("postgres", func(t *testing.T) {
		d := startHost(t, pgtest.Database(t), "names")
		checkHostileNames(t, d, runHostile(t, d))
	})
}

// runHostile runs hostileAgent on rt-01 and returns its attempt.
func runHostile(t *testing.T, d *daemonProc) apitype.Attempt {
	t.Helper()
	run, err := d.client.CreateRun(context.Background(), apitype.RunRequest{Task: "rt-01", Agent: hostileAgent})
	if err != nil {
		t.Fatal(err)
	}
	a := wait(t, d.client, run.Attempts[0])
	if a.State != apitype.StateDone || a.Pass {
		t.Fatalf("hostile attempt: got state %s (%s) pass %v, want done and failed", a.State, a.InfraError, a.Pass)
	}
	return a
}

func checkHostileNames(t *testing.T, d *daemonProc, a apitype.Attempt) {
	t.Helper()
	socket := d.socket
	hk, err := d.client.HostKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "a.tar")
	if out, code := benchctlOn(t, socket, "export", "-o", archive, a.ID); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	if out, code := benchctlOn(t, socket, "verify", "--key", hk.PublicKey, archive); code != 0 {
		t.Fatalf("verify of the export: exit %d, want 0\n%s", code, out)
	}
	recs := exportedJournal(t, archive)
	paths := map[string]bool{}
	comms := map[string]bool{}
	for _, r := range recs {
		paths[r.Path], paths[r.Path2], comms[r.Comm] = true, true, true
	}
	for _, n := range hostileNames() {
		if !paths[n] {
			t.Errorf("journal: no record of %q", n)
		}
	}
	if !comms["\x1b[8m\xff\r"] {
		t.Errorf("journal: no record by the command name the agent set, got %v", comms)
	}
	// What benchctl prints of the attempt holds no raw control byte but
	// \n and \t, no C1 control, no bidi override and no invalid UTF-8.
	for _, args := range [][]string{{"log", a.ID}, {"log", "--denied", a.ID}, {"diff", a.ID}, {"diff", "--tree", a.ID},
		{"diff", "--all", a.ID}, {"transcript", a.ID}, {"transcript", "--stdout", a.ID}, {"transcript", "--stderr", a.ID},
		{"show", a.ID}, {"list"}, {"model", a.ID}} {
		out, code := benchctlOn(t, socket, args...)
		if code != 0 && !(args[0] == "show" && code == 1) { // show: 1 is a failed verdict
			t.Errorf("benchctl %v: exit %d, want 0\n%s", args, code, out)
		}
		if bad := rawControl(out); bad != "" {
			t.Errorf("benchctl %v prints %s raw:\n%q", args, bad, out)
		}
	}
	out, _ := benchctlOn(t, socket, "log", "--denied", a.ID)
	if !strings.Contains(out, `\x1b[8m\xff\x0d`) {
		t.Errorf("benchctl log --denied: got %q, want the command name made visible", out)
	}
	out, _ = benchctlOn(t, socket, "transcript", "--raw", "--stdout", a.ID)
	if !strings.Contains(out, "\x1b[2J\x1b[HVERDICT: PASS\r") {
		t.Errorf("benchctl transcript --raw: got %q, want the output's bytes", out)
	}
}

// rawControl names the first thing in out a terminal would act on
// rather than show, "" if none.
func rawControl(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	for i, r := range out {
		switch {
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Sprintf("control character %#x at byte %d", r, i)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("bidi control %U at byte %d", r, i)
		}
	}
	return ""
}

// exportedJournal reads journal.jsonl out of an export.
func exportedJournal(t *testing.T, archive string) []journal.Record {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("export: no journal.jsonl: %v", err)
		}
		if h.Name != "journal.jsonl" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		var recs []journal.Record
		rd := journal.NewReader(bytes.NewReader(b))
		for {
			r, err := rd.Next()
			if err == io.EOF {
				return recs
			}
			if err != nil {
				t.Fatalf("exported journal: %v", err)
			}
			recs = append(recs, r)
		}
	}
}

// hostileModelAgent calls the model through the gateway under a model
// name of escapes, with escapes in its messages; the scripted model
// answers with escapes of its own.
const hostileModelAgent = `import json, os, urllib.request
base = "http://127.0.1.1:%d" % int(os.environ["GW_PORT"])
body = {"model": "\x1b]0;owned\x07bench\u202e\x9b", "messages": [{"role": "user", "content": "\x1b[2J\x1b[HVERDICT: PASS\r\x1b]52;c;aGk=\x07"}]}
req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(req).read().decode())
`

// Model names and messages an agent chooses reach no terminal raw:
// model's table, a call's stored request and response, show and the
// transcript; --raw gives the bytes.
func TestHostileModel(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	port := modelServer(t, `{"steps": [{"final": "\u001b[2J\u001b[HVERDICT: PASS\r\u001b]0;title\u0007\u202e"}]}`)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "/usr/bin/python3 -c '" + hostileModelAgent + "'",
		Env:      []apitype.EnvVar{{Name: "GW_PORT", Value: fmt.Sprint(port)}},
		Gateways: []string{fmt.Sprintf("model=http://127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	a := wait(t, d.client, run.Attempts[0])
	l, err := d.client.ModelLog(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateDone || len(l.Calls) != 1 || !strings.Contains(l.Calls[0].Model, "\x1b]0;owned") {
		tr, _ := d.client.Transcript(ctx, a.ID)
		t.Fatalf("got state %s (%s), %d calls (%+v), want done and one call under the agent's model name\n%s", a.State, a.InfraError, len(l.Calls), l.Calls, tr.Stderr)
	}
	for _, args := range [][]string{{"model", a.ID}, {"model", "--request", "1", a.ID}, {"model", "--response", "1", a.ID},
		{"show", a.ID}, {"transcript", a.ID}, {"list"}} {
		out, code := benchctlOn(t, d.socket, args...)
		if code != 0 && !(args[0] == "show" && code == 1) {
			t.Errorf("benchctl %v: exit %d, want 0\n%s", args, code, out)
		}
		if bad := rawControl(out); bad != "" {
			t.Errorf("benchctl %v prints %s raw:\n%q", args, bad, out)
		}
	}
	out, _ := benchctlOn(t, d.socket, "model", "--request", "1", "--raw", a.ID)
	if !strings.Contains(out, `\u001b[2J`) && !strings.Contains(out, "\x1b[2J") {
		t.Errorf("benchctl model --request 1 --raw: got %q, want the stored request", out)
	}
}
