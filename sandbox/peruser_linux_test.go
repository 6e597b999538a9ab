package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
)

// perUserLib opens what the kernel counts per uid: pipe buffer pages
// (fs.pipe-user-pages-soft), inotify instances (fs.inotify.
// max_user_instances) and POSIX message queue bytes (RLIMIT_MSGQUEUE).
const perUserLib = `
import ctypes, errno, fcntl, json, os, resource, sys, time
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
def err():
    return errno.errorcode[ctypes.get_errno()]
def inotify():
    fd = libc.inotify_init1(0)
    return fd if fd >= 0 else err()
def mq(name):
    fd = rt.mq_open(name.encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    return fd if fd >= 0 else err()
def pipe_1m():
    r, w = os.pipe()
    fresh = fcntl.fcntl(w, F_GETPIPE_SZ)
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
        big = fcntl.fcntl(w, F_GETPIPE_SZ)
    except OSError as e:
        big = errno.errorcode[e.errno]
    return fresh, big
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
`

// perUserHog takes all of its uid's allowances, reports what it got and
// holds them until killed.
const perUserHog = perUserLib + `
pages = int(open("/proc/sys/fs/pipe-user-pages-soft").read())
held = []
for i in range(pages // 16 + 8):
    held.append(os.pipe())
ino = []
while True:
    fd = inotify()
    if not isinstance(fd, int):
        ino_err = fd
        break
    ino.append(fd)
queues = []
for i in range(1000):
    fd = mq("/hog%d" % i)
    if not isinstance(fd, int):
        mq_err = fd
        break
    queues.append(fd)
fresh, big = pipe_1m()
print(json.dumps({"pipes": len(held), "inotify": len(ino), "inotify_err": ino_err, "mq": len(queues), "mq_err": mq_err,
    "pipe": fresh, "pipe_1m": big}), flush=True)
time.sleep(120)
`

// perUserProbe is what a neighbour needs: a pipe of 1 MiB, an inotify
// instance, a message queue.
const perUserProbe = perUserLib + `
fresh, big = pipe_1m()
i = inotify()
q = mq("/neighbour")
print(json.dumps({"pipe": fresh, "pipe_1m": big, "inotify": "ok" if isinstance(i, int) else i, "mq": "ok" if isinstance(q, int) else q}))
`

type perUserProbeResult struct {
	Pipe    int    `json:"pipe"`
	Pipe1M  any    `json:"pipe_1m"`
	Inotify string `json:"inotify"`
	MQ      string `json:"mq"`
}

// TestPerUserAllowances: a hog attempt takes every per-user allowance of
// its uid; a neighbour running beside it as another uid of the pool still
// gets a 1 MiB pipe, an inotify instance and a message queue, where a
// neighbour sharing the hog's uid (the control: what one uid for every
// agent gave) is refused each.
func TestPerUserAllowances(t *testing.T) {
	testenv.Require(t, testenv.Python)
	r, err := sandbox.ParseUIDRange(sandbox.DefaultUIDRange)
	if err != nil {
		t.Fatal(err)
	}
	passwd, err := os.Open("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	used, err := r.Accounts(passwd)
	passwd.Close()
	if err != nil || len(used) > 0 {
		t.Fatalf("the default range is not free here: %v %v", used, err)
	}
	pool := sandbox.NewUIDPool(r)
	hogUID, releaseHog, err := pool.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer releaseHog()
	otherUID, releaseOther, err := pool.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOther()
	if hogUID == otherUID {
		t.Fatalf("two live attempts share uid %d", hogUID)
	}

	hog := newRig(t)
	hogCfg := asUID(t, hog, hog.py(perUserHog), hogUID)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sandbox.Run(ctx, hogCfg)
		done <- err
	}()
	defer func() {
		cancel()
		<-done
	}()
	var took struct {
		Pipes, Inotify, MQ int
		InotifyErr         string `json:"inotify_err"`
		MQErr              string `json:"mq_err"`
		Pipe               int
		Pipe1M             any `json:"pipe_1m"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(hog.stdout(), "\n") {
		if time.Now().After(deadline) {
			t.Fatalf("the hog did not report; stderr:\n%s", hog.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	decode(t, hog.stdout(), hog.stderr(), &took)
	t.Logf("the hog (uid %d) holds %d pipes, %d inotify instances (then %s), %d message queues (then %s); its next pipe: %d bytes, 1 MiB: %v",
		hogUID, took.Pipes, took.Inotify, took.InotifyErr, took.MQ, took.MQErr, took.Pipe, took.Pipe1M)
	if took.InotifyErr != "EMFILE" || took.MQErr != "EMFILE" || took.Pipe > 8192 {
		t.Fatalf("the hog did not exhaust its allowances: %+v", took)
	}

	for _, tt := range []struct {
		name string
		uid  int
		ok   bool
	}{
		{"same uid as the hog", hogUID, false},
		{"own uid", otherUID, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newRig(t)
			res, out, errOut := n.run(asUID(t, n, n.py(perUserProbe), tt.uid))
			if res.ExitCode != 0 {
				t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
			}
			var got perUserProbeResult
			decode(t, out, errOut, &got)
			t.Logf("uid %d beside the hog: fresh pipe %d bytes, 1 MiB pipe %v, inotify %s, mqueue %s", tt.uid, got.Pipe, got.Pipe1M, got.Inotify, got.MQ)
			size, isNum := got.Pipe1M.(float64)
			if tt.ok {
				if got.Pipe != 65536 || !isNum || size != 1<<20 || got.Inotify != "ok" || got.MQ != "ok" {
					t.Errorf("got %+v; want a 64 KiB pipe, a 1 MiB pipe, an inotify instance and a queue", got)
				}
				return
			}
			if got.Pipe > 8192 || got.Pipe1M != "EPERM" || got.Inotify != "EMFILE" || got.MQ != "EMFILE" {
				t.Errorf("got %+v; the control should be starved, or the hog did not take what it claims", got)
			}
		})
	}
}

// asUID makes cfg run as uid (gid the same) in the rig's workspace.
func asUID(t *testing.T, r *rig, cfg sandbox.Config, uid int) sandbox.Config {
	t.Helper()
	if err := os.Chown(r.ws, uid, uid); err != nil {
		t.Fatal(err)
	}
	cfg.UID, cfg.GID = uid, uid
	return cfg
}
