"""The Beam engine of convert-voc against the local engine (`python -m benchmarks beam`).

Both engines convert the same VOC-layout splits of SMALL and LARGE ids to raw-schema records
in 2 shards: the local engine (``helpers.voc_records.convert_split``, one process) and the
Beam engine (``helpers.beam.convert_with_beam``: a child process, Beam's
local FnApiRunner with 2 worker processes, ``--direct_num_workers=2``). A third, the plain
baseline for using 2 cores, is a ``multiprocessing`` pool of 2 fresh (spawned) processes that
make the records (``voc_records.record_payload``, in order, ``imap``) while the parent writes
them with ``write_sharded``, as the local engine does. The ids are copies of
the 9 sample images (hard links under new names), so each record costs what a sample record
costs. Runs alternate (local, Beam; small, large) and every repeat fits

    seconds = fixed + per_record * ids

through its two sizes for each engine: ``fixed`` is the start-up (for Beam: a Python process,
importing Beam, starting the workers; neither engine imports TensorFlow), ``per_record`` the
cost of one more image. Printed: median and range over the repeats, and the per-record speed ratio (>1: Beam
or the pool is faster per record). The shards of all three are checked byte-identical. Beam's start-up dominates the
run time: about 3 minutes on a quiet 2-core machine, 8.5 while other work loaded it.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
from functools import partial
from pathlib import Path

from benchmarks._common import RESULTS, Comparison, seconds, work_dir
from helpers import beam, voc, voc_records
from helpers.records import write_sharded

SMALL, LARGE = 36, 720  # the large one: enough work to see past Beam's start-up noise
REPEATS = 3
NUM_SHARDS = 2
BEAM_OPTIONS = ["--direct_num_workers=2"]
POOL_PROCESSES = 2


def make_split(folder: Path, num_ids: int) -> tuple[Path, str]:
    """A VOC-layout folder whose split ``copies<num_ids>`` lists copies of the sample images."""
    sample = voc.sample_root()
    originals = voc.read_split(sample, "trainval")
    ids = [f"copy{i:04d}_{originals[i % len(originals)]}" for i in range(num_ids)]
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for i, image_id in enumerate(ids):
        original = originals[i % len(originals)]
        for source, target in (
            (voc.image_path(sample, original), voc.image_path(folder, image_id)),
            (voc.mask_path(sample, original), voc.mask_path(folder, image_id)),
        ):
            if not target.exists():
                try:
                    os.link(source, target)
                except OSError:  # another file system: copy instead
                    target.write_bytes(source.read_bytes())
    split = f"copies{num_ids}"
    (folder / "ImageSets" / "Segmentation" / f"{split}.txt").write_text("\n".join(ids) + "\n")
    return folder, split


def convert_with_pool(root: Path, split: str, out_prefix: Path) -> list[Path]:
    """The local engine's work with the records made by a pool of fresh processes (spawned:
    TensorFlow, imported by ``python -m benchmarks``, is not safe to fork)."""
    ids = voc_records.split_order(root, split)
    make = partial(voc_records.record_payload, root, task="segmentation", encoding="raw")
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("spawn").Pool(POOL_PROCESSES) as pool:
        payloads = pool.imap(make, ids, chunksize=4)
        return write_sharded(out_prefix, payloads, NUM_SHARDS, overwrite=True)


def fit(times: dict[int, float]) -> tuple[float, float]:
    """``(fixed, per_record)`` of the line through the two sizes' times."""
    per_record = (times[LARGE] - times[SMALL]) / (LARGE - SMALL)
    return times[SMALL] - per_record * SMALL, per_record


def spread(values: list[float], scale: float, unit: str) -> str:
    scaled = [v * scale for v in values]
    low, high = min(scaled), max(scaled)
    return f"{statistics.median(scaled):8.2f} {unit} (range {low:.2f}-{high:.2f})"


def main() -> None:
    folder = work_dir("beam")
    root = folder / "VOC2012"
    splits = {n: make_split(root, n)[1] for n in (SMALL, LARGE)}
    out = {name: folder / name / "x" for name in ("local", "beam", "pool")}
    engines = {
        "local": lambda split: voc_records.convert_split(
            root, split, out["local"], NUM_SHARDS, overwrite=True, progress=False
        ),
        "beam": lambda split: beam.convert_with_beam(
            root, split, out["beam"], NUM_SHARDS, overwrite=True, beam_options=BEAM_OPTIONS
        ),
        "pool": lambda split: convert_with_pool(root, split, out["pool"]),
    }
    print(
        f"{SMALL} and {LARGE} ids (copies of the 9 sample images), raw schema, {NUM_SHARDS} "
        f"shards; Beam: FnApiRunner, {BEAM_OPTIONS[0]}; a spawned multiprocessing pool of "
        f"{POOL_PROCESSES}; {REPEATS} alternating repeats"
    )
    engines["local"](splits[SMALL])  # warm-up (Beam starts afresh every time anyway)
    times = {name: {n: [] for n in splits} for name in engines}
    for _ in range(REPEATS):
        for n, split in splits.items():
            for name, run in engines.items():
                times[name][n].append(seconds(lambda run=run, split=split: run(split)))
    paths = [sorted(out[name].parent.glob("x-*")) for name in engines]  # the last: LARGE ids
    same = sum(len({p.read_bytes() for p in shard}) == 1 for shard in zip(*paths, strict=True))
    assert same == NUM_SHARDS, "the engines wrote different bytes"
    print(
        f"{same} of {NUM_SHARDS} shards byte-identical in all {len(engines)} engines ({LARGE} ids)"
    )
    for n in splits:
        for name, what in (
            ("beam", "beam (2 workers)"),
            ("pool", f"pool ({POOL_PROCESSES} processes)"),
        ):
            result = Comparison(
                f"convert {n} ids: {what} vs local", times["local"][n], times[name][n]
            )
            print(result.line(), flush=True)
            RESULTS.append(result)
    fits = {
        name: [fit({n: times[name][n][r] for n in splits}) for r in range(REPEATS)]
        for name in engines
    }
    for name, pairs in fits.items():
        print(
            f"{name:>5}: fixed {spread([f for f, _ in pairs], 1, 's ')}   per record "
            f"{spread([p for _, p in pairs], 1e3, 'ms')}"
        )
    per_record = Comparison(
        f"per-record cost (fit over {SMALL} and {LARGE} ids): beam (2 workers) vs local",
        [p for _, p in fits["local"]],
        [p for _, p in fits["beam"]],
    )
    print(per_record.line(), flush=True)
    pool_per_record = Comparison(
        f"per-record cost (same fit): pool ({POOL_PROCESSES} processes) vs local",
        [p for _, p in fits["local"]],
        [p for _, p in fits["pool"]],
    )
    beam_vs_pool = Comparison(
        "per-record cost (same fit): beam (2 workers) vs the pool",
        [p for _, p in fits["pool"]],
        [p for _, p in fits["beam"]],
    )
    for result in (pool_per_record, beam_vs_pool):
        print(result.line(), flush=True)
    # Saved, not printed as a ratio (the local engine's fixed cost is about zero).
    fixed = Comparison(
        "fixed start-up seconds (same fit): local = baseline, beam = candidate",
        [f for f, _ in fits["local"]],
        [f for f, _ in fits["beam"]],
    )
    pool_fixed = Comparison(
        "fixed start-up seconds (same fit): local = baseline, pool = candidate",
        [f for f, _ in fits["local"]],
        [f for f, _ in fits["pool"]],
    )
    RESULTS.extend([per_record, pool_per_record, beam_vs_pool, fixed, pool_fixed])


if __name__ == "__main__":
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main()
