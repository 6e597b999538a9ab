#!/usr/bin/env python3
"""Grades a round of blind attempts with `benchd grade` (N times each, as
root: confined as benchd grades) and compares each outcome (pass, fail,
review) with the expect.toml its author wrote. Prints a line an attempt
and the totals.

usage: bench/graders/grade-round.py BENCHD TASKS_DIR ROUND_DIR [N]"""
import json, os, shutil, subprocess, sys, tempfile, tomllib

benchd, tasks_dir, round_dir = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 3
rows = []
for tdir in sorted(os.listdir(round_dir)):
    src = os.path.join(round_dir, tdir)
    bundle = os.path.join(tasks_dir, tdir)
    if not os.path.isdir(src) or not os.path.isdir(bundle):
        continue
    tid = tdir[:5]
    for name in sorted(os.listdir(src)):
        a = os.path.join(src, name)
        try:
            exp = tomllib.load(open(os.path.join(a, "expect.toml"), "rb"))
        except Exception as e:
            rows.append((tid, name, "?", "bad expect: %s" % e, False)); continue
        want = "review" if exp.get("review") else ("pass" if exp.get("pass") else "fail")
        outs = []
        for i in range(n):
            with tempfile.TemporaryDirectory() as tmp:
                ws = os.path.join(tmp, "ws")
                shutil.copytree(os.path.join(bundle, "workspace"), ws, symlinks=True)
                if os.path.isdir(os.path.join(a, "files")):
                    shutil.copytree(os.path.join(a, "files"), ws, symlinks=True, dirs_exist_ok=True)
                for d in exp.get("delete", []):
                    p = os.path.join(ws, d)
                    if os.path.isdir(p): shutil.rmtree(p)
                    elif os.path.lexists(p): os.remove(p)
                r = subprocess.run([benchd, "grade", "--task", tid, "--tasks", tasks_dir, "--json", ws],
                                   capture_output=True, text=True, timeout=600)
                try:
                    v = json.loads(r.stdout)
                    codes = ",".join(x.get("code", "") for x in v.get("reasons") or [])
                    outs.append((v["outcome"], codes))
                except Exception:
                    outs.append(("error", (r.stderr or r.stdout).strip().splitlines()[-1:] and (r.stderr or r.stdout).strip().splitlines()[-1][:80]))
        got = outs[0][0]
        same = all(o[0] == got for o in outs)
        rows.append((tid, name, want, got if same else "flip:" + "/".join(o[0] for o in outs), got == want and same, outs[0][1]))
        print("%s\t%s\twant=%s\tgot=%s\t%s\t%s" % (tid, name, want, rows[-1][3], "RIGHT" if rows[-1][4] else "WRONG", outs[0][1]), flush=True)
right = sum(1 for r in rows if r[4])
print("# %d of %d right" % (right, len(rows)))
by = {}
for r in rows:
    t = by.setdefault(r[0], [0, 0]); t[1] += 1; t[0] += 1 if r[4] else 0
print("# " + "  ".join("%s %d/%d" % (k, v[0], v[1]) for k, v in sorted(by.items())))
