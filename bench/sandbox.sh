#!/usr/bin/env bash
# Sandbox start-up benchmark: set-up + /bin/true + tear-down, median of N
# runs (default 50), measured inside one long-running process as benchd
# does it, for benchd's sandbox alone, with a limits cgroup and a closed
# or open netns, and for `bwrap --unshare-all --ro-bind / / true` in the
# same run (the variants take turns in each round). Prints each median,
# wall clock and CPU time (this process plus its reaped children, which
# does not depend on the machine's load), and its ratio to bwrap's.
# Needs root.
#
#   sudo bench/sandbox.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
n=${1:-50}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/sandbox.test" ./sandbox/
load0=$(cut -d' ' -f1 /proc/loadavg)
"$tmp/sandbox.test" -test.run '^$' -test.bench '^BenchmarkStartup$' -test.benchtime "${n}x" -test.v >"$tmp/out"
awk -v n="$n" -v load="$load0 $(cut -d' ' -f1 /proc/loadavg)" '
/^BenchmarkStartup/ {
	for (i = 3; i <= NF; i++) {
		if ($i ~ /-cpums$/) { name = $i; sub(/-cpums$/, "", name); cpu[name] = $(i-1) }
		else if ($i ~ /-ms$/) { name = $i; sub(/-ms$/, "", name); wall[name] = $(i-1); order[++k] = name }
	}
}
END {
	if (!("bwrap" in wall)) { print "no bwrap figure: is bubblewrap installed?" > "/dev/stderr"; exit 1 }
	printf "sandbox start-up, median of %d (set-up + /bin/true + tear-down); load average %s\n", n, load
	printf "%-30s %9s %7s %9s %7s\n", "variant", "wall ms", "ratio", "CPU ms", "ratio"
	for (i = 1; i <= k; i++) {
		v = order[i]
		printf "%-30s %9.2f %7.2f %9.2f %7.2f\n", v, wall[v], wall[v] / wall["bwrap"], cpu[v], cpu[v] / cpu["bwrap"]
	}
}' "$tmp/out"
grep -E 'skipping|^(--- SKIP|FAIL)' "$tmp/out" || true
