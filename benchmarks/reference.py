"""The committed reference results, and the README's tables of the shuffle shootout, the
scale runs and the input pipeline.

`python -m benchmarks --reference NAME` writes `benchmarks/reference/NAME.json` (the same JSON
as `benchmarks/results/`, which git ignores): the commit, the machine and its load, the
package versions, every comparison's seconds, median ratio and range. The README quotes the
shootout's headline ratios from `reference/shuffle.json` in the table :func:`shuffle_table`
makes, the scale runs from `reference/scale.json` in :func:`scale_table`'s, and
``voc_batches`` from `reference/pipeline.json` in :func:`pipeline_table`'s;
`python -m benchmarks.reference` prints all three, and tests/test_benchmark_reference.py
checks that the README holds exactly those tables.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import bench_pipeline
from benchmarks.bench_shuffle import GLOBAL, SHUFFLE, VIEW, grain_name

FOLDER = Path(__file__).resolve().parent / "reference"
BEST_ARRAY_RECORD = "best ArrayRecord"  # as in bench_shuffle.SHOOTOUT_RATIOS
TENSORS, PYTHON = "tensors", "Python"
#: The issue's headline ratios (issue 35), as rows of the README table:
#: (label, mode, what comes out, candidate, baseline); like for like, tensors against tensors.
HEADLINES = [
    ("`global_shuffle_dataset` vs `shuffle(10_000)`", "speed", TENSORS, GLOBAL, SHUFFLE),
    ("`global_shuffle_dataset` vs `shuffle(10_000)`", "reproducible", TENSORS, GLOBAL, SHUFFLE),
    (
        "`global_shuffle_dataset` vs `tf.data` in order, 3 parallel reads",
        "speed",
        TENSORS,
        GLOBAL,
        "tf.data in order, 3 parallel reads",
    ),
    (
        "the view in `EpochOrder` vs the best ArrayRecord `__getitems__`",
        "speed",
        PYTHON,
        VIEW,
        BEST_ARRAY_RECORD,
    ),
    (
        "Grain over the view vs over a list, 0 threads",
        "speed",
        PYTHON,
        grain_name("RecordView", False),
        grain_name("a list", False),
    ),
    (
        "Grain over the view vs over a list, worker processes",
        "speed",
        PYTHON,
        grain_name("RecordView", True),
        grain_name("a list", True),
    ),
    (
        "Grain over the view vs over ArrayRecord, worker processes",
        "speed",
        PYTHON,
        grain_name("RecordView", True),
        grain_name("ArrayRecord", True),
    ),
]


def load(name: str) -> dict:
    """The reference result of benchmark ``name`` (FileNotFoundError if none is committed)."""
    return json.loads((FOLDER / f"{name}.json").read_text())


def comparison(record: dict, name: str) -> dict:
    """The comparison called ``name`` in a result (KeyError naming it if there is none)."""
    for found in record["comparisons"]:
        if found["name"] == name:
            return found
    raise KeyError(f"no comparison {name!r} in the {record['benchmark']} result")


def goal_cell(found: dict) -> str:
    """The goal of a comparison as the table shows it: median and worst round, or "-"."""
    if found["goal"] is None:
        return "-"
    if found["worst_goal"] is None:
        return f">= {found['goal']:.2f}x"
    return f">= {found['goal']:.2f}x, worst round >= {found['worst_goal']:.2f}x"


def shuffle_table(record: dict) -> str:
    """The README's shootout table: each headline's speed ratio per record size, median
    (range over rounds), its goal, and whether the worst round met it."""
    sizes = list(record["shootout"])
    runs = {(record["shootout"][s]["rounds"], record["shootout"][s]["processes"]) for s in sizes}
    (rounds, processes), *others = sorted(runs)
    assert not others, f"the record sizes were measured in different ways: {sorted(runs)}"
    first = record["shootout"][sizes[0]]
    modes = list(first["modes"])
    lines = [
        f"Reference run (`benchmarks/reference/shuffle.json`, commit {record['commit'][:7]}): "
        f"{record['machine']['cpus']} CPUs, load average "
        f"{record['machine']['load_average'][0]:.1f} at its end; warm page cache (every file "
        f"read before timing); {first['records']:,} label-sorted records in {first['shards']} "
        f"shards, batches of {first['batch']}; modes {' and '.join(modes)}, each in "
        f"{processes} fresh processes of {rounds} rounds, the modes alternating; speed ratio "
        f"of a whole epoch (>1: the first is faster), median over {rounds * processes} rounds "
        "with their range.",
        "",
        "| ratio | mode | out | goal | worst round met its goal | "
        + " | ".join(f"{int(s):,} B" for s in sizes)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(sizes),
    ]
    for label, mode, out, candidate, baseline in HEADLINES:
        cells, missed = [], []
        for size in sizes:
            against = baseline
            if baseline == BEST_ARRAY_RECORD:
                against = record["shootout"][size]["modes"][mode]["best_array_record"]
            found = comparison(record, f"{size} B {mode}: {candidate} vs {against}")
            low, high = found["speed_ratio_range"]
            cells.append(f"{found['speed_ratio_median']:.2f}x ({low:.2f}-{high:.2f})")
            worst_goal = found["goal"] if found["worst_goal"] is None else found["worst_goal"]
            if worst_goal is not None and low < worst_goal:
                missed.append(f"{int(size):,} B")
        goal = goal_cell(found)
        met = "-" if goal == "-" else "yes"
        if missed:
            met = "no: " + ", ".join(missed)
        lines.append(f"| {label} | {mode} | {out} | {goal} | {met} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rate(epoch: dict) -> str:
    return f"{epoch['records_per_second']:,.0f} ({epoch['vs_best_probe']:.2f}x)"


def scale_table(record: dict) -> str:
    """The README's table of the scale runs: per dataset, the probe's best rate, each epoch's
    records/s and its ratio to the probe, opening cold and warm, a worker's memory, the
    order's size, the write and index times."""
    scale = record["scale"]
    sets = scale["sets"]
    rows: dict[str, list[str]] = {}

    def row(label: str, cell: str) -> None:
        rows.setdefault(label, []).append(cell)

    for found in sets.values():
        best = found["probe"]["best"]
        row(
            "records x payload bytes, shards",
            f"{found['records']:,} x {found['payload_bytes']:,} B, {found['shards']}",
        )
        row("write, index (s)", f"{found['write_seconds']:,.0f}, {found['index_seconds']:,.0f}")
        row(
            "probe: best random reads/s (threads)",
            f"{best['records_per_second']:,.0f} ({best['threads']})",
        )
        row(
            "epoch length used (batches x records)",
            f"{found['epoch_batches']:,} x {found['batch']}",
        )
        row(
            "the view on the probe's sample: records/s (x probe)",
            rate(found["view_on_probe_sample"]),
        )
        for how, epoch in found["epochs"].items():
            row(f"epoch, {how}: records/s (x probe)", rate(epoch))
        opened = found["open_and_first_batch"]
        for cache in ("cold", "warm"):
            row(
                f"open, open + first batch, {cache} (ms)",
                f"{opened[cache]['open_seconds'] * 1e3:,.0f}, "
                f"{opened[cache]['open_and_first_batch_seconds'] * 1e3:,.0f}",
            )
        memory = found["worker_memory"]
        row("a worker's extra USS vs a 1,000-record view (MiB)", f"{memory['extra_uss_mib']:.1f}")
        row("pickled view (bytes)", f"{memory['view']['pickled_view_bytes']:,}")
        row("pickled `EpochOrder` (bytes)", f"{found['epoch_order']['pickled_bytes']:,}")
    lines = [
        f"Scale run (`benchmarks/reference/scale.json`, commit {record['commit'][:7]}): "
        f"{record['machine']['cpus']} CPUs, load average "
        f"{record['machine']['load_average'][0]:.1f} at its end; TensorFlow in "
        f"{scale['tensorflow_mode']}; page cache {scale['page_cache']}.",
        "",
        "| measure | " + " | ".join(f"`{name}`" for name in sets) + " |",
        "|---|" + "---|" * len(sets),
    ]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()]
    return "\n".join(lines) + "\n"


def ratio_cell(found: dict) -> str:
    low, high = found["speed_ratio_range"]
    return f"{found['speed_ratio_median']:.2f}x ({low:.2f}-{high:.2f})"


def pipeline_table(record: dict) -> str:
    """The README's table of ``voc_batches`` against bare reading and TensorFlow's fastest
    reader of the same records: every comparison ``bench_pipeline`` holds to issue 14's goal,
    in wall time and in the CPU time of the same runs, and whether the goal was met."""
    step_five = bench_pipeline.STEPS["voc_batches"][0]
    rows = []
    for found in record["comparisons"]:
        if found["goal"] is None:
            continue
        cpu = comparison(record, f"{found['name']}, CPU time")
        against = found["name"].removeprefix("5 voc_batches, ")
        if found["name"] == step_five:
            against = f"{bench_pipeline.RECORDS} records per epoch, against bare reading"
        met = "yes" if found["goal_met"] else "no"
        rows.append(f"| {against} | {ratio_cell(found)} | {ratio_cell(cpu)} | {met} |")
    times = len(found["baseline_seconds"])  # the runs of the last row; every row has as many
    lines = [
        f"Reference run (`benchmarks/reference/pipeline.json`, commit {record['commit'][:7]}): "
        f"{record['machine']['cpus']} CPUs, load average "
        f"{record['machine']['load_average'][0]:.1f} at its end; TensorFlow in "
        f"{record['pipeline']['tensorflow_mode']}; {record['pipeline']['page_cache']} page "
        "cache (every file read before timing); raw-schema "
        f"records of VOC's sizes in {bench_pipeline.SHARDS} shards, batches of "
        f"{bench_pipeline.BATCH}, crop {bench_pipeline.CROP[0]}x{bench_pipeline.CROP[1]}, "
        f"shuffle buffer {bench_pipeline.BUFFER}; {times} alternating runs after a warm-up; "
        "speed ratio of `voc_batches` (>1: it is faster), median with its range.",
        "",
        "| `voc_batches`: records, baseline | wall time | CPU time (all threads) | "
        f"goal met (median >= {bench_pipeline.GOAL}x, every run >= {bench_pipeline.FLOOR}x) |",
        "|---|---|---|---|",
        *rows,
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(shuffle_table(load("shuffle")))
    print(scale_table(load("scale")))
    print(pipeline_table(load("pipeline")), end="")
