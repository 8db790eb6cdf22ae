"""The committed reference results, and the README's table of the shuffle shootout.

`python -m benchmarks --reference NAME` writes `benchmarks/reference/NAME.json` (the same JSON
as `benchmarks/results/`, which git ignores): the commit, the machine and its load, the
package versions, every comparison's seconds, median ratio and range. The README quotes the
shootout's headline ratios from `reference/shuffle.json` in the table :func:`shuffle_table`
makes; `python -m benchmarks.reference` prints it, and tests/test_benchmark_reference.py
checks that the README holds exactly that table.
"""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "reference"
VIEW = "RecordView, view[ids] on a permutation"
#: The issue's goals (issue 25), as rows of the README table: (label, candidate, baseline).
HEADLINES = [
    ("RecordView in a uniform order vs ArrayRecord's `__getitems__`", VIEW,
     "ArrayRecord __getitems__ on a permutation"),
    ("RecordView in a uniform order vs `shuffle(10_000)`", VIEW, "tf.data shuffle(10_000)"),
    ("RecordView in a uniform order vs `tf.data` in order", VIEW, "tf.data in order"),
    ("`global_shuffle_dataset` vs `shuffle(10_000)`", "global_shuffle_dataset (tf.data)",
     "tf.data shuffle(10_000)"),
    *((f"Grain `MapDataset` over RecordView vs over ArrayRecord, {n} threads",
       "Grain MapDataset over RecordView, num_threads=0",
       f"Grain MapDataset over ArrayRecord, num_threads={n}") for n in (0, 2, 16)),
]  # fmt: skip


def load(name: str) -> dict:
    """The reference result of benchmark ``name`` (FileNotFoundError if none is committed)."""
    return json.loads((FOLDER / f"{name}.json").read_text())


def comparison(record: dict, name: str) -> dict:
    """The comparison called ``name`` in a result (KeyError naming it if there is none)."""
    for found in record["comparisons"]:
        if found["name"] == name:
            return found
    raise KeyError(f"no comparison {name!r} in the {record['benchmark']} result")


def shuffle_table(record: dict) -> str:
    """The README's table: each goal's speed ratio per record size, median (range)."""
    sizes = list(record["shootout"])
    runs = {(record["shootout"][s]["rounds"], record["shootout"][s]["processes"]) for s in sizes}
    (rounds, processes), *others = sorted(runs)
    assert not others, f"the record sizes were measured in different ways: {sorted(runs)}"
    load_1min = record["machine"]["load_average"][0]
    lines = [
        f"Reference run (`benchmarks/reference/shuffle.json`, commit {record['commit'][:7]}): "
        f"{record['machine']['cpus']} CPUs, load average {load_1min:.1f} at its end, "
        f"70,000 label-sorted records in 3 shards, batches of 256; speed ratio of a whole "
        f"epoch, median over {rounds * processes} alternating rounds ({rounds} in each of "
        f"{processes} fresh processes) with their range.",
        "",
        "| ratio | goal | " + " | ".join(f"{int(s):,} B" for s in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for label, candidate, baseline in HEADLINES:
        cells, goal = [], None
        for size in sizes:
            found = comparison(record, f"{size} B: {candidate} vs {baseline}")
            low, high = found["speed_ratio_range"]
            cells.append(f"{found['speed_ratio_median']:.2f}x ({low:.2f}-{high:.2f})")
            goal = found["goal"] if size == sizes[0] else goal
        lines.append(f"| {label} | >= {goal:.1f}x | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(shuffle_table(load("shuffle")), end="")
