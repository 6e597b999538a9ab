#!/usr/bin/env bash
# bench/fsmon.sh: what fsmon's journaled view costs, as ratios to the same
# work on the native directory measured in the same run, for both modes of
# the view and for bindfs (Debian's C FUSE loopback) as the peer.
#
# usage: bench/fsmon.sh [-n REPS] [-r ROUNDS] [-o RESULTS_DIR]
#
#   -n REPS     timed runs of each workload per round (default 4)
#   -r ROUNDS   rounds; each mounts every configuration once, in the order
#               native, content, writes, bindfs, the next round in reverse
#               (default 2)
#   -o DIR      keep the raw results (NAME MILLISECONDS per run) in DIR
#
# Environment: BENCHD, a benchd binary to use (default: go build ./cmd/benchd);
# BENCH_NICE, a nice value for everything the script starts (default 0; the
# figures in bench/RESULTS-fsmon.md were taken with -10 on a shared host);
# TMPDIR, where the fixture and the backing directories go (default /var/tmp;
# it should be a disk file system, not tmpfs; a run needs about 2 GB there).
#
# Needs root, FUSE, bindfs, git, GNU tar/find/grep and /usr/bin/python3 with
# pytest. Workloads (bench/fsmon/workloads.py): untar of 2,000 small files,
# reading them all, a stat walk, pytest on a 100-test project, 256 MiB
# sequential write and read, 20,000 appends of 100 bytes, git status and
# grep -r over a 2,000-file repository. Each runs inside the directory
# under test (mount and unmount are not timed), once to warm up and then
# REPS times; the table shows medians over all rounds. Nothing is dropped
# from the page cache: every tree is warm.
#
# fsmon runs as `benchd watch --allow '**'`, so every mutating operation is
# journaled and checked against the policy; bindfs runs with
# `--multithreaded -o kernel_cache,big_writes`. A full run takes about eight
# minutes on two cores (-n 4 -r 2).
set -euo pipefail

reps=4 rounds=2 keep=""
while getopts "n:r:o:h" opt; do
	case $opt in
	n) reps=$OPTARG ;;
	r) rounds=$OPTARG ;;
	o) keep=$OPTARG ;;
	*) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/bench/fsmon
py=/usr/bin/python3
nice=${BENCH_NICE:-0}

die() { echo "fsmon.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (it mounts FUSE views)"
for t in bindfs git tar find grep; do
	command -v $t >/dev/null || die "$t is not installed"
done
$py -m pytest --version >/dev/null 2>&1 || die "$py has no pytest (apt-get install python3-pytest)"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/benchd-fsmon.XXXXXX")
bindmnt=$work/bindfs-mnt
cleanup() {
	if mountpoint -q "$bindmnt" 2>/dev/null; then
		umount "$bindmnt" 2>/dev/null || umount -l "$bindmnt"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

benchd=${BENCHD:-}
if [ -z "$benchd" ]; then
	benchd=$work/benchd
	(cd "$repo" && go build -o "$benchd" ./cmd/benchd) || die "go build ./cmd/benchd failed (set BENCHD to a built binary)"
fi

echo "building the fixture in $work ..." >&2
$py "$here/fixture.py" "$work/fx" $((reps + 1))
results=$work/results
mkdir -p "$results" "$work/journals" "$bindmnt"

# run CONFIG ROUND: one mount of CONFIG over a fresh copy of the workspace.
run() {
	local config=$1 round=$2 ws=$work/ws-$1-$2
	cp -a "$work/fx/ws" "$ws"
	local driver=("$py" "$here/workloads.py" "$work/fx" "$reps" "$results/$config.txt")
	echo "round $round: $config" >&2
	case $config in
	native)
		(cd "$ws" && nice -n "$nice" "${driver[@]}")
		;;
	content | writes)
		nice -n "$nice" "$benchd" watch --dir "$ws" --allow '**' --mode "$config" \
			--journal "$work/journals/$config-$round.jsonl" -- "${driver[@]}" >/dev/null
		;;
	bindfs)
		nice -n "$nice" bindfs --multithreaded -o kernel_cache,big_writes "$ws" "$bindmnt"
		(cd "$bindmnt" && nice -n "$nice" "${driver[@]}")
		umount "$bindmnt"
		;;
	esac
	# Nothing is removed before the end: creating files soon after
	# thousands were removed is many times slower on ext4, which would
	# slow whichever configuration runs next.
}

configs=(native content writes bindfs)
for ((round = 1; round <= rounds; round++)); do
	if ((round % 2 == 1)); then
		order=("${configs[@]}")
	else
		order=(bindfs writes content native)
	fi
	for c in "${order[@]}"; do
		run "$c" "$round"
	done
done

echo
echo "fsmon view vs native: median of $((reps * rounds)) runs per cell; ratio = median / native median"
echo "($(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ))"
echo
$py "$here/report.py" "$results"
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp "$results"/*.txt "$keep"/
fi
