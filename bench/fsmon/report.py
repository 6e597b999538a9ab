"""Prints the table of bench/fsmon.sh from the driver's result files.

usage: report.py RESULTS_DIR

RESULTS_DIR holds native.txt, content.txt, writes.txt and bindfs.txt, each
with lines "NAME MILLISECONDS". For each workload: the median native time
and the ratio of each configuration's median to it, then one line per
target of the fsmon issue saying whether content mode met it.
"""

import os
import statistics
import sys

ROWS = [
    ("untar", "untar 2,000 small files"),
    ("readall", "read all 2,000 files"),
    ("statwalk", "stat walk"),
    ("pytest", "pytest, 100 tests"),
    ("write256", "256 MiB sequential write"),
    ("read256", "256 MiB sequential read"),
    ("appends", "20,000 appends of 100 B"),
    ("gitstatus", "git status, 2,000 files"),
    ("grep", "grep -r, 2,000 files"),
]
CONFIGS = ["native", "content", "writes", "bindfs"]

# Targets for content mode: (workloads, largest ratio to native).
TARGETS = [
    (("write256", "read256", "appends"), 1.3),
    (("pytest", "gitstatus"), 1.5),
    (("statwalk", "readall", "untar"), 2.0),
]


def load(path):
    runs = {}
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            name, ms = line.split()
            runs.setdefault(name, []).append(float(ms))
    return runs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    res = {c: load(os.path.join(sys.argv[1], c + ".txt")) for c in CONFIGS}
    med = {c: {k: statistics.median(v) for k, v in res[c].items()} for c in CONFIGS}
    ratio = {}
    print("%-26s %5s %10s %8s %8s %8s" % ("workload", "runs", "native ms", "content", "writes", "bindfs"))
    for key, label in ROWS:
        nat = med["native"].get(key)
        if nat is None:
            continue
        cells = []
        for c in CONFIGS[1:]:
            m = med[c].get(key)
            if m is None:
                cells.append("%8s" % "-")
                continue
            ratio[(c, key)] = m / nat
            cells.append("%8.2f" % (m / nat))
        print("%-26s %5d %10.1f %s" % (label, len(res["native"][key]), nat, " ".join(cells)))
    print()
    labels = dict(ROWS)
    for keys, limit in TARGETS:
        for key in keys:
            r = ratio.get(("content", key))
            if r is None:
                continue
            print("target %-26s content <= %.1fx native: %5.2fx  %s" % (
                labels[key], limit, r, "met" if r <= limit else "NOT MET"))
    for key, label in ROWS:
        r, b = ratio.get(("content", key)), ratio.get(("bindfs", key))
        if r is None or b is None:
            continue
        print("target %-26s content at or below bindfs: %5.2fx vs %5.2fx  %s" % (
            label, r, b, "met" if r <= b else "NOT MET"))


if __name__ == "__main__":
    main()
