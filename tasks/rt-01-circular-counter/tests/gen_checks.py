"""The seeded checks of RT-01, for the calls probe (graders/probe_calls.py).

    python3 gen_checks.py SEED

prints the cases of one grading as JSON. The expected answers are not
here: the judge runs the same cases on the bundle's solution. The seed is
drawn per grading, so the capacities and run lengths differ each time;
the fixed cases cover what the task states for every capacity (at least
1, smaller ones refused, value read-only).
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


def main():
    rng = random.Random(int(sys.argv[1]))
    cases = [
        counter(0, []),
        counter(-1, []),
        counter(-rng.randint(2, 10**6), []),
        counter(1, [["repeat", 5, "inc", []], ["get", "value"]]),
        counter(3, [["set", "value", 2]]),
    ]
    # Small and medium capacities, short runs and runs of whole cycles.
    for _ in range(40):
        cap = rng.randint(1, 12) if rng.random() < 0.5 else rng.randint(13, 5000)
        if rng.random() < 0.5:
            n = rng.randint(1, cap + 2)  # up to just past one wrap
        else:
            n = cap * rng.randint(1, 6) + rng.randint(-1, 1)
        cases.append(run(cap, max(1, n)))
    # Large capacities, each run just past one or two wraps (about two
    # million calls of inc in all, so the probe stays quick).
    for _ in range(4):
        cap = rng.randint(5001, 250_000)
        cases.append(run(cap, cap * rng.randint(1, 2) + rng.randint(-1, 2)))
    json.dump({"module": "src.counter", "cases": cases}, sys.stdout)


main()
