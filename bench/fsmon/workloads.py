"""Workload driver of bench/fsmon.sh: runs in the directory under test.

usage: workloads.py FIXTURE REPS OUT

The current directory holds a copy of FIXTURE/ws (files/, repo/, proj/),
natively or through a view. Each workload runs once untimed (the warm-up:
it fills the page cache and the kernel's entry and attribute caches, and
pytest's __pycache__ and git's index), then REPS times back to back, each
run timed on the monotonic clock. Untar run I extracts FIXTURE/small-I.tar,
so every untar writes content not seen before. Set-up and clean-up (the untar
targets, the 256 MiB file) are not timed, and untarred trees are left in
place; after a run that
wrote files the driver waits SETTLE seconds, so that work a view does
after close (content capture at release) does not land in the next run.
Results go to OUT (outside the directory under test), one line per timed
run: "NAME MILLISECONDS".
"""

import os
import subprocess
import sys
import time

MIB = 1 << 20
BIG = "big.bin"
LOG = "appends.log"
SETTLE = {"untar": 0.3, "write256": 1.0, "appends": 0.3}

# Python writes __pycache__ as it would for an agent.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def run(argv, cwd=None):
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def untar(fixture, i):
    # A new directory each time, never removed here: creating files
    # soon after thousands were removed is many times slower on ext4
    # (natively and through a view alike), so bench/fsmon.sh removes the
    # trees only when the whole run is over.
    dest = "untar-%d" % i
    os.mkdir(dest)
    tarball = os.path.join(fixture, "small-%d.tar" % i)
    t0 = time.monotonic_ns()
    run(["tar", "-xf", tarball, "-C", dest, "--no-same-owner"])
    return time.monotonic_ns() - t0


def readall(_f, _i):
    t0 = time.monotonic_ns()
    run(["find", "files", "-type", "f", "-exec", "cat", "{}", "+"])
    return time.monotonic_ns() - t0


def statwalk(_f, _i):
    t0 = time.monotonic_ns()
    run(["find", "files", "-printf", "%s %T@\n"])
    return time.monotonic_ns() - t0


def pytest(_f, _i):
    t0 = time.monotonic_ns()
    run(["/usr/bin/python3", "-m", "pytest", "-q"], cwd="proj")
    return time.monotonic_ns() - t0


def write_big():
    buf = b"\xa5" * MIB
    fd = os.open(BIG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(256):
        os.write(fd, buf)
    os.close(fd)


def write256(_f, _i):
    t0 = time.monotonic_ns()
    write_big()
    t = time.monotonic_ns() - t0
    os.unlink(BIG)
    return t


def read256(_f, i):
    if i == 0:
        write_big()
        time.sleep(SETTLE["write256"])
    buf = bytearray(MIB)
    t0 = time.monotonic_ns()
    fd = os.open(BIG, os.O_RDONLY)
    total = 0
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        total += n
    os.close(fd)
    t = time.monotonic_ns() - t0
    if total != 256 * MIB:
        raise SystemExit("read256: read %d bytes, want %d" % (total, 256 * MIB))
    return t


def appends(_f, _i):
    line = b"x" * 99 + b"\n"
    t0 = time.monotonic_ns()
    fd = os.open(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
    for _ in range(20000):
        os.write(fd, line)
    os.close(fd)
    t = time.monotonic_ns() - t0
    os.unlink(LOG)
    return t


def gitstatus(_f, _i):
    t0 = time.monotonic_ns()
    run(["git", "status", "--porcelain"], cwd="repo")
    return time.monotonic_ns() - t0


def grep(_f, _i):
    t0 = time.monotonic_ns()
    run(["grep", "-r", "--exclude-dir=.git", "needle_marker", "repo"])
    return time.monotonic_ns() - t0


WORKLOADS = [
    ("untar", untar),
    ("readall", readall),
    ("statwalk", statwalk),
    ("pytest", pytest),
    ("write256", write256),
    ("read256", read256),
    ("appends", appends),
    ("gitstatus", gitstatus),
    ("grep", grep),
]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    fixture, reps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    only = os.environ.get("WORKLOADS", "").split()
    with open(out, "a") as res:
        for name, fn in WORKLOADS:
            if only and name not in only:
                continue
            for i in range(reps + 1):
                ns = fn(fixture, i)
                if i > 0:
                    res.write("%s %.3f\n" % (name, ns / 1e6))
                    res.flush()
                if name in SETTLE:
                    time.sleep(SETTLE[name])
            if name == "read256":
                os.unlink(BIG)


if __name__ == "__main__":
    main()
