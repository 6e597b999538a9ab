"""calibrate.py is a fixed, trusted CPU workload of the same kind as
a map's (bytes keys, hashing, dict inserts and deletes, a sort). Its
wall time in this grading run, against what it takes on the target
host (calibration_sec), says how much slower this host is right now.
"""

import hashlib
d = {}
for i in range(120000):
    k = b"k%06d" % i
    d[k] = hashlib.blake2b(k, digest_size=16).digest()
for i in range(0, 120000, 3):
    del d[b"k%06d" % i]
print(sum(len(v) for k, v in sorted(d.items())))
