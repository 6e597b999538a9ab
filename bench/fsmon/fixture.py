"""Builds the fixture of bench/fsmon.sh (deterministic: same bytes on every run).

usage: fixture.py OUT NTARS

OUT/small-I.tar   for I in 0..NTARS-1: 2,000 small text files (100 B - 6 KiB)
                  in 100 directories, different content in each tarball (an
                  untar stores content the journal has not seen)
OUT/ws/files/     2,000 such files: the tree that read-all and the stat walk
                  go over
OUT/ws/repo/      a git repository holding another 2,000 such files, one commit
OUT/ws/proj/      a small Python project with 100 pytest tests
"""

import os
import random
import shutil
import subprocess
import sys
import tarfile

WORDS = ("alpha beta gamma delta value count index buffer parse token node "
         "tree walk write read close open state error return import class "
         "def self result config path name offset length").split()


def text(rng, size):
    """Python-looking lines of roughly size bytes."""
    out, n = [], 0
    while n < size:
        line = "    %s = %s(%s, %d)  # %s\n" % (
            rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS),
            rng.randrange(1000), " ".join(rng.choice(WORDS) for _ in range(4)))
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def small_tree(root, seed, needle_every):
    """2,000 files: 20 directories x 5 subdirectories x 20 files."""
    rng = random.Random(seed)
    for a in range(20):
        for b in range(5):
            d = os.path.join(root, "d%02d" % a, "s%d" % b)
            os.makedirs(d, exist_ok=True)
            for c in range(20):
                body = text(rng, rng.randrange(100, 6 * 1024))
                if (a * 100 + b * 20 + c) % needle_every == 0:
                    body += "# needle_marker\n"
                with open(os.path.join(d, "f%02d.py" % c), "w") as f:
                    f.write(body)


def project(root):
    """A package and 10 test modules of 10 tests each."""
    pkg = os.path.join(root, "calc")
    tests = os.path.join(root, "tests")
    os.makedirs(pkg)
    os.makedirs(tests)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("from .ops import add, mul, fib, clamp\n")
    with open(os.path.join(pkg, "ops.py"), "w") as f:
        f.write(
            "def add(a, b):\n    return a + b\n\n\n"
            "def mul(a, b):\n    return a * b\n\n\n"
            "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
            "        a, b = b, a + b\n    return a\n\n\n"
            "def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n")
    with open(os.path.join(root, "pytest.ini"), "w") as f:
        f.write("[pytest]\ntestpaths = tests\n")
    for m in range(10):
        lines = ["import calc\n"]
        for t in range(10):
            k = m * 10 + t
            lines.append(
                "\n\ndef test_case_%d():\n"
                "    assert calc.add(%d, 1) == %d\n"
                "    assert calc.mul(%d, 2) == %d\n"
                "    assert calc.fib(%d) >= 0\n"
                "    assert calc.clamp(%d, 0, 50) == %d\n"
                % (t, k, k + 1, k, 2 * k, k % 30, k, min(k, 50)))
        with open(os.path.join(tests, "test_mod%02d.py" % m), "w") as f:
            f.write("".join(lines))


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=bench",
                    "-c", "user.email=bench@localhost", *args],
                   check=True, stdout=subprocess.DEVNULL)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, ntars = sys.argv[1], int(sys.argv[2])
    ws = os.path.join(out, "ws")
    for i in range(ntars):
        src = os.path.join(out, "tarsrc")
        small_tree(src, 100 + i, 97)
        with tarfile.open(os.path.join(out, "small-%d.tar" % i), "w", format=tarfile.GNU_FORMAT) as tf:
            tf.add(src, arcname="t")
        shutil.rmtree(src)
    os.makedirs(ws)
    small_tree(os.path.join(ws, "files"), 1, 97)
    repo = os.path.join(ws, "repo")
    small_tree(repo, 2, 97)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fixture")
    project(os.path.join(ws, "proj"))


if __name__ == "__main__":
    main()
