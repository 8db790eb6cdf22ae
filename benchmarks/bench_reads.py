"""The read paths of the working tree against a named older commit's (`python -m benchmarks reads
[--against REV]`, default e9f0c4a): a restructuring shows what it costs before it lands.

Both versions of ``helpers`` live in this one process. The older one is extracted with ``git
archive REV helpers | tar -x`` into a temporary folder outside the checkout (the design tests
read every Python file of it), imported first from there (that folder first on ``sys.path``)
and its ``iter_records`` and ``RecordView`` kept; then every ``helpers`` module is forgotten,
``sys.path`` restored, and the working tree's ``helpers`` imported. Both read the same files,
written once by the working tree's writer: the page cache is warm (the files were just written
and nothing is dropped). Each comparison alternates the older commit (baseline) and the working
tree (candidate), 7 runs each after a warm-up of each (``_common.compare``), and prints the
median speed ratio (>1: the working tree is faster) and its range:

* ``iter_records`` over a plain file of 70,000 records of 800 B (per-record overhead) and one
  of 800 records of 590 KB (copies and CRCs of large payloads), every payload delivered;
* ``RecordView`` batches of 256 record numbers over 70,000 records of 800 B in 3 indexed shards,
  in a uniformly random order (one permutation, seed 0), the whole epoch per run.

The view's API differs between commits: a batch is read by ``__getitems__`` where the view has
one (e9f0c4a has it), else by ``view[list]``. A lazy ``import helpers...`` inside an older
function would run the working tree's module: the kept functions are checked to be the
extracted commit's, not their callees. Other sessions on a shared machine add noise: read the
range, not only the median.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from benchmarks._common import EXTRA, compare, work_dir

ROOT = Path(__file__).resolve().parents[1]
AGAINST = "e9f0c4a"  # issue 43's reference: the last commit before the read paths were moved
RUNS = 7
SMALL_SIZE = 800  # bytes of a small record's payload
SMALL_COUNT = 70_000  # small records in a file, and in the view's shards together
LARGE_SIZE = 384 * 384 * 4  # a 384x384 RGB image and its mask, raw: ~590 KB
LARGE_COUNT = 800
SHARDS = 3
BATCH = 256  # record numbers per batch of the view
SEED = 0


def resolve(rev: str) -> str:
    """The full hash of commit ``rev``; ValueError if this checkout does not have it."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if found.returncode:
        raise ValueError(f"--against {rev}: no such commit in {ROOT} (a clone with its history?)")
    return found.stdout.strip()


def forget_helpers() -> dict[str, object]:
    """Remove every ``helpers`` module from ``sys.modules``; return them."""
    names = [name for name in sys.modules if name == "helpers" or name.startswith("helpers.")]
    return {name: sys.modules.pop(name) for name in names}


def older_helpers(commit: str, folder: Path) -> SimpleNamespace:
    """``iter_records`` and ``RecordView`` as ``commit`` had them, imported from its ``helpers``
    extracted into ``folder``; afterwards ``import helpers`` is the working tree's again."""
    archive = subprocess.run(["git", "archive", commit, "helpers"], cwd=ROOT, capture_output=True)
    archive.check_returncode()
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    ours = forget_helpers()  # benchmarks/__main__ has imported helpers.notebook already
    sys.path.insert(0, str(folder))
    try:
        import helpers.index
        import helpers.records

        older = SimpleNamespace(
            iter_records=helpers.records.iter_records, RecordView=helpers.index.RecordView
        )
    finally:
        forget_helpers()
        sys.path.remove(str(folder))
        sys.modules.update(ours)
    for function in (older.iter_records, older.RecordView.__getitem__):
        assert Path(function.__code__.co_filename).is_relative_to(folder), function
    return older


def write_files(folder: Path) -> SimpleNamespace:
    """The files both versions read, written by the working tree's writer (random payloads)."""
    from helpers.records import write_records, write_sharded

    rng = np.random.default_rng(SEED)
    small = folder / "small.tfrecord"
    write_records(small, (rng.bytes(SMALL_SIZE) for _ in range(SMALL_COUNT)), overwrite=True)
    large = folder / "large.tfrecord"
    write_records(large, (rng.bytes(LARGE_SIZE) for _ in range(LARGE_COUNT)), overwrite=True)
    payloads = (rng.bytes(SMALL_SIZE) for _ in range(SMALL_COUNT))
    shards = write_sharded(folder / "view", payloads, SHARDS, overwrite=True, index=True)
    return SimpleNamespace(small=small, large=large, shards=shards)


def read_all(iter_records, path: Path) -> int:
    """Every payload of ``path`` delivered to Python, both CRCs checked; how many."""
    return sum(1 for _ in iter_records(path))


def batch_reader(view):
    """The view's batched read: ``__getitems__`` where it has one, else ``view[list]``."""
    return getattr(view, "__getitems__", view.__getitem__)


def read_batches(read, batches: list[list[int]]) -> int:
    """Every batch of record numbers read through ``read``; how many records."""
    return sum(len(read(batch)) for batch in batches)


def main(against: str = AGAINST) -> None:
    """Compare the read paths of commit ``against`` (the baseline) with the working tree's."""
    commit = resolve(against)
    with tempfile.TemporaryDirectory(prefix=f"helpers-{commit[:12]}-") as extracted:
        older = older_helpers(commit, Path(extracted))
        compare_reads(older, against, commit)


def compare_reads(older: SimpleNamespace, against: str, commit: str) -> None:
    """The comparisons, ``older`` (:func:`older_helpers`) the baseline, on files written now."""
    from helpers.index import RecordView
    from helpers.records import iter_records

    files = write_files(work_dir("reads"))
    order = np.random.default_rng(SEED).permutation(SMALL_COUNT)
    batches = [order[i : i + BATCH].tolist() for i in range(0, SMALL_COUNT, BATCH)]
    conditions = {
        "against": f"{against} ({commit})",
        "page_cache": "warm: the files were just written, nothing dropped between runs",
        "files": "written once by the working tree's writer, read by both versions",
        "runs": f"{RUNS} alternating pairs after one warm-up each; the machine may be shared",
    }
    EXTRA["read_conditions"] = conditions
    for key, value in conditions.items():
        print(f"{key.replace('_', ' ')}: {value}")
    label = f"{against} vs working tree"
    for path, size, count in (
        (files.small, SMALL_SIZE, SMALL_COUNT),
        (files.large, LARGE_SIZE, LARGE_COUNT),
    ):
        old_read = partial(read_all, older.iter_records, path)
        new_read = partial(read_all, iter_records, path)
        assert old_read() == new_read() == count
        compare(f"iter_records, {count:,} x {size:,} B: {label}", old_read, new_read, RUNS)
    with older.RecordView(files.shards) as old_view, RecordView(files.shards) as new_view:
        old_batch = batch_reader(old_view)
        new_batch = batch_reader(new_view)
        assert old_batch(batches[0]) == new_batch(batches[0])
        compare(
            f"RecordView, batches of {BATCH} in a uniform order over {SMALL_COUNT:,} x "
            f"{SMALL_SIZE} B in {SHARDS} shards: {label}",
            partial(read_batches, old_batch, batches),
            partial(read_batches, new_batch, batches),
            RUNS,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_reads")
    parser.add_argument("--against", default=AGAINST, metavar="REV", help="the older commit")
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main(parser.parse_args().against)
