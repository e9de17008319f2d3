"""Writes vectors.tsv: keys and the arm assign.py gives them. The Go code
is tested against this file (experiment/split_test.go), and the file
against assign.py and bin/calibrate (tests/test_experiment_assign.py).

    python3 experiment/testdata/gen_vectors.py > experiment/testdata/vectors.tsv
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from assign import assign  # noqa: E402

CASES = [
    ("homepage", "A=50,B=30,C=20", 1.0),
    ("fashion-pref", "control=1,treatment=1", 1.0),
    ("fashion-pref", "control=90,treatment=10", 1.0),
    ("rollout", "old=0,new=7", 1.0),
    ("share", "A=1,B=1", 0.3),
]
KEYS = ["", "0", "1", "42", "user-1", "user-2", "user-17", "alice", "bob", "Ünïcødé-ключ",
        "a:b", "x" * 100, "1234567890123456789", "session/9f8e7d"]

print("# experiment\tarms\ttraffic\tkey\tarm   (arm '-': outside the traffic share)")
for name, spec, traffic in CASES:
    arms = [(a, int(w)) for a, w in (e.split("=") for e in spec.split(","))]
    for key in KEYS:
        arm = assign(name, key, arms, traffic)
        print(f"{name}\t{spec}\t{traffic:g}\t{key}\t{arm or '-'}")
