"""The vectorised CSV writer produces exactly the text Python's csv module writes."""

import csv
import io
import random

import numpy as np
import pyarrow as pa

from jobs.leaderboard.writers import csv_rows


def python_csv(rows: list[tuple]) -> bytes:
    buffer = io.StringIO(newline="")
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode("utf-8")


def test_csv_rows_match_python_csv():
    rng = random.Random(5)
    n = 3000
    floats = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.1:
            floats.append(None)
        elif kind < 0.3:
            floats.append(float(rng.randint(-5, 5)))
        elif kind < 0.5:
            floats.append(rng.uniform(0, 100))
        elif kind < 0.6:
            floats.append(rng.uniform(-1e-3, 1e-3))
        elif kind < 0.7:
            floats.append(10 ** rng.uniform(-12, 22) * rng.choice([1, -1]))
        elif kind < 0.8:
            floats.append(rng.choice([0.0, -0.0, 1e-4, 9.999e-5, 1e13, 9999999999999.99, 1e16, float("inf")]))
        else:
            floats.append(rng.randint(0, 10**9) / rng.choice([1, 3, 7, 1000]))
    alphabet = ["a", "é", ",", '"', "\n", "\r", " ", "x", "'", ";"]
    strings = [
        None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        for _ in range(n)
    ]
    bools = [rng.choice([True, False, None]) for _ in range(n)]
    ints = [rng.choice([None, rng.randint(-(10**12), 10**12)]) for _ in range(n)]
    table = pa.table(
        {
            "f": pa.array(floats, pa.float64()),
            "s": pa.array(strings, pa.string()),
            "b": pa.array(bools, pa.bool_()),
            "i": pa.array(ints, pa.int64()),
        }
    )
    expected = python_csv(list(zip(floats, strings, bools, ints, strict=True)))
    assert csv_rows(table) == expected


def test_csv_rows_of_a_slice():
    table = pa.table({"f": pa.array(np.arange(10, dtype=float)), "s": pa.array([str(i) for i in range(10)])})
    assert csv_rows(table.slice(3, 4)) == python_csv([(float(i), str(i)) for i in range(3, 7)])
