"""The seeded checks of RT-01, for the calls probe (graders/probe_calls.py).

    python3 gen_checks.py SEED

prints the cases of one grading as JSON. The expected answers are not
here: the judge runs the same cases on the bundle's solution. The seed is
drawn per grading, so the capacities and run lengths differ each time.

The instruction promises a counter right for every capacity: every int of
at least 1, so capacities are drawn from the whole range an int holds
(bit lengths up to 4096, and the edges of the machine sizes), wraps are
checked wherever Python can count that far, and one long run of 0.6 to
1.2 million calls (about two million in all), its length drawn per
grading, crosses any count an implementation could hold fixed. A capacity below 1 raises ValueError.
Each counter counts on its own: several counters, made one after the
other and used in turn, each start at 0 and keep their own value.
Nothing else is asked: reading value, calling inc.
"""

import json
import random
import sys


def counter(capacity, steps):
    return [["new", "CircularCounter", [capacity]]] + steps


def run(capacity, n):
    return counter(capacity, [
        ["get", "value"],
        ["repeat", n, "inc", []],
        ["get", "value"],
        ["call", "inc", []],
        ["get", "value"],
    ])


def several(rng):
    """Two to four counters made in turn, then advanced and read in an
    interleaved order: each starts at 0 and keeps its own value."""
    k = rng.randint(2, 4)
    steps = []
    for _ in range(k):
        steps += [["new", "CircularCounter", [rng.randint(1, 40)]], ["get", "value"]]
    for _ in range(rng.randint(6, 12)):
        steps += [["use", rng.randrange(k)], ["repeat", rng.randint(1, 60), "inc", []], ["get", "value"]]
    for i in range(k):
        steps += [["use", i], ["get", "value"]]
    return steps


def huge(rng):
    """A capacity of 1 to 4096 bits, uniform in its bit length."""
    bits = rng.randint(1, 4096)
    return rng.getrandbits(bits) | (1 << (bits - 1))


def main():
    rng = random.Random(int(sys.argv[1]))
    cases = [
        counter(0, []),
        counter(-1, []),
        counter(-rng.randint(2, 10**6), []),
        counter(-huge(rng), []),
        counter(1, [["repeat", rng.randint(2, 50), "inc", []], ["get", "value"]]),
    ]
    # Small and medium capacities: short runs and runs of whole cycles.
    for _ in range(40):
        cap = rng.randint(1, 12) if rng.random() < 0.5 else rng.randint(13, 5000)
        if rng.random() < 0.5:
            n = rng.randint(1, cap + 2)  # up to just past one wrap
        else:
            n = cap * rng.randint(1, 6) + rng.randint(-1, 1)
        cases.append(run(cap, max(1, n)))
    # Several counters side by side.
    for _ in range(4):
        cases.append(several(rng))
    # Capacities Python can count to, log-uniform up to 2^17: past one or
    # two wraps.
    for _ in range(4):
        cap = rng.randint(1 << rng.randint(12, 16), 1 << 17)
        cases.append(run(cap, cap * rng.randint(1, 2) + rng.randint(-1, 2)))
    # Every size an int takes, and the edges of machine words: short runs
    # (no wrap is reachable), where an implementation that keeps the
    # capacity or the value in fewer bits shows.
    edges = [2**k + d for k in (7, 8, 15, 16, 31, 32, 53, 63, 64, 127, 128) for d in (-1, 0, 1)]
    for cap in rng.sample(edges, 12) + [huge(rng) for _ in range(12)]:
        cases.append(run(cap, rng.randint(1, 3000)))
    # One long run, its length new per grading: a count held fixed in the
    # code (per counter or in all) is crossed.
    cap = rng.choice([huge(rng), rng.randint(2, 1 << 19), rng.randint(1 << 21, 1 << 23)])
    cases.append(run(cap, rng.randint(600_000, 1_200_000)))
    json.dump({"module": "src.counter", "cases": cases}, sys.stdout)


main()
