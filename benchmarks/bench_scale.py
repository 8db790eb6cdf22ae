"""The scale run (issue 35): random access from a cold page cache, against the disk's own limit.

Opt-in (hours of disk, never part of ``make bench`` or ``make test``): ``make bench-scale``, or
``python -m benchmarks scale``. Two datasets by default, written once under
``benchmarks/_work/scale/`` and kept (a rerun skips every shard and index already there):
10^8 records of 100 bytes (11.6 GB) and 10^6 records of 10 KB (10.0 GB), in 100 shards each of
consecutive records, with their index files (``helpers.index.write_index``). The shards are
written by :func:`write_shard`, a NumPy writer of fixed-size records (the same frames
``write_records`` makes, byte for byte: a test checks it), since the helpers' writer would take
most of an hour at 10^8. The write and index seconds are reported (from the first run that
made them, kept in ``manifest.json``).

Every measurement runs in a fresh process (TensorFlow in speed mode: no op determinism,
``deterministic=False``) and starts from a **cold page cache**: no view open, then every file
of the dataset dropped from the cache with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no root
needed; the kernel's ``Cached`` before and after is recorded). The host of this virtual machine
may still cache its disk: "cold" is cold for this kernel.

Measured, for each dataset:

* the raw probe: ``os.pread`` of each record's frame at a fixed sample of ``SCALE_PROBE``
  (10^6) record offsets, in a uniformly random order, with 1, 2, 4, 8, 16 and 32 threads, each
  from a cold cache; the best rate is the machine's random-read limit;
* the view on the same sample (``view[sample[a:b]]``, batches of 256) against that limit
  (issue 35's goal: at least 0.5x);
* a whole uniform epoch (``EpochOrder``) read by the view and by ``global_shuffle_dataset``,
  and ``tf.data`` in order (``num_parallel_reads=AUTOTUNE``, as its docs advise) and with
  ``shuffle(10_000)``, each from a cold cache; ``SCALE_EPOCH_BATCHES`` (0: whole epochs) reads
  only that many batches of 256 instead, and the JSON says so;
* opening a view from the index files and its first batch, in a fresh process, cold and warm
  (goal at 10^8: at most 1 s);
* the private memory (USS, and the ``Private_*`` lines of ``smaps_rollup``) of a fresh worker
  process holding the view of the dataset, sent to it pickled while the main process holds it
  open (as a Grain or PyTorch data loader does), against the same for a 1,000-record view (goal
  at 10^8: at most 16 MB more), and the bytes a pickled view sends to each worker;
* the epoch's order: the Python-allocated peak (``tracemalloc``) of making an ``EpochOrder`` and
  reading its first batch, and its pickled size (goal: at most 1 MB).

Environment (for a smoke run, e.g. ``SCALE_SETS=100x100000,10000x2000 SCALE_SHARDS=4``):
``SCALE_SETS`` (``100x100000000,10000x1000000``: payload bytes x records), ``SCALE_SHARDS``
(100), ``SCALE_PROBE`` (1000000), ``SCALE_THREADS`` (``1,2,4,8,16,32``),
``SCALE_EPOCH_BATCHES`` (0). The results go to ``EXTRA["scale"]``: no paired comparisons (one
cold run of each), so the JSON's ``comparisons`` is empty.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import shutil
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import google_crc32c
import numpy as np

from benchmarks._common import EXTRA, cached_mib, drop_page_cache, private_mib, work_dir
from helpers._framing import FRAME_SIZE, frame, mask

SEED = 7
BATCH = 256
SETS = os.environ.get("SCALE_SETS", "100x100000000,10000x1000000")
SHARDS = int(os.environ.get("SCALE_SHARDS", 100))
PROBE = int(os.environ.get("SCALE_PROBE", 1_000_000))
THREADS = tuple(int(t) for t in os.environ.get("SCALE_THREADS", "1,2,4,8,16,32").split(","))
EPOCH_BATCHES = int(os.environ.get("SCALE_EPOCH_BATCHES", 0))
CHUNK_RECORDS = 1 << 16  # records the writer frames at a time
SMALL_VIEW = 1_000  # records of the small view the memory of a worker is compared with


def datasets() -> list[tuple[int, int]]:
    """(payload bytes, records) of each dataset of ``SCALE_SETS``."""
    return [tuple(int(n) for n in spec.split("x")) for spec in SETS.split(",")]


def write_shard(path: Path, first: int, count: int, size: int) -> None:
    """``count`` records of ``size`` bytes (``size >= 8``): record ``i`` is its number ``first +
    i`` (8 bytes, little-endian) then a filler of random bytes, framed as TFRecord does;
    written to a temporary file, renamed when whole."""
    filler = np.frombuffer(np.random.default_rng(size).bytes(size - 8), np.uint8)
    header = frame(bytes(size))[0]  # every record has the same length and so header
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as out:
        for start in range(0, count, CHUNK_RECORDS):
            numbers = np.arange(first + start, first + min(start + CHUNK_RECORDS, count))
            frames = np.empty((len(numbers), size + FRAME_SIZE), np.uint8)
            frames[:, :12] = np.frombuffer(header, np.uint8)
            frames[:, 12:20] = numbers.astype("<u8").view(np.uint8).reshape(-1, 8)
            frames[:, 20:-4] = filler
            crcs = np.array([google_crc32c.value(row[12:-4]) for row in frames], np.uint64)
            frames[:, -4:] = mask(crcs).astype("<u4").view(np.uint8).reshape(-1, 4)
            out.write(frames.data)
    os.replace(temporary, path)


def shard_layout(records: int, shards: int) -> list[int]:
    """The first record number of each shard, and the total: consecutive blocks."""
    per = -(-records // shards)
    return [min(k * per, records) for k in range(shards)] + [records]


def prepare(size: int, records: int) -> tuple[Path, list[str], dict]:
    """The dataset's folder, shard paths and manifest (write and index seconds), made if missing:
    shards of the right length are kept, the others written; the index files are written when
    any shard was or one is missing."""
    from helpers.index import write_index

    folder = work_dir("scale") / f"{size}x{records}-{SHARDS}"
    folder.mkdir(exist_ok=True)
    firsts = shard_layout(records, SHARDS)
    paths = [folder / f"data-{k:05d}-of-{SHARDS:05d}.tfrecord" for k in range(SHARDS)]
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    free = shutil.disk_usage(folder).free
    expected = records * (size + FRAME_SIZE)
    print(f"{size} B x {records:,}: {expected / 1e9:.2f} GB of shards; {free / 1e9:.0f} GB free")
    written, start = 0, time.perf_counter()
    for k, path in enumerate(paths):
        count = firsts[k + 1] - firsts[k]
        if not path.exists() or path.stat().st_size != count * (size + FRAME_SIZE):
            write_shard(path, firsts[k], count, size)
            written += 1
    if written:
        manifest["write_seconds"] = time.perf_counter() - start
        manifest["shards_written"] = written
    indexed = [Path(f"{p}{suffix}") for p in paths for suffix in (".index", ".index.npy")]
    if written or not all(p.exists() for p in indexed):
        start = time.perf_counter()
        write_index(paths)
        manifest["index_seconds"] = time.perf_counter() - start
    small = folder / "small.tfrecord"
    if not Path(f"{small}.index.npy").exists():
        write_shard(small, 0, SMALL_VIEW, size)
        write_index([small])
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return folder, [str(p) for p in paths], manifest


def cold(folder: Path) -> dict[str, float]:
    """Drop every file of ``folder`` from the page cache; the kernel's Cached before and after."""
    before = cached_mib()
    drop_page_cache(p for p in folder.iterdir() if p.is_file())
    return {"cached_mib_before": before, "cached_mib_after": cached_mib()}


# Each function below runs in a fresh process (see `in_fresh_process`).


def probe(folder: str, paths: list[str], size: int, records: int, threads: int) -> dict:
    """``os.pread`` of each sampled record's frame, in ``threads`` threads, from a cold cache."""
    firsts = np.array(shard_layout(records, len(paths)))
    sample = probe_sample(records)
    shard = np.searchsorted(firsts, sample, side="right") - 1
    offsets = (sample - firsts[shard]) * (size + FRAME_SIZE)
    frame_bytes = size + FRAME_SIZE
    dropped = cold(Path(folder))
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        jobs = [(shard[k::threads].tolist(), offsets[k::threads].tolist()) for k in range(threads)]

        def read(job: tuple[list[int], list[int]]) -> int:
            got = 0
            for file, offset in zip(*job, strict=True):
                got += len(os.pread(fds[file], frame_bytes, offset))
            return got

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            got = sum(pool.map(read, jobs))
        elapsed = time.perf_counter() - start
    finally:
        for fd in fds:
            os.close(fd)
    assert got == len(sample) * frame_bytes, "a short read"
    return {
        "threads": threads,
        "seconds": elapsed,
        "records_per_second": len(sample) / elapsed,
        "page_cache": dropped,
    }


def probe_sample(records: int) -> np.ndarray:
    """The fixed sample of record numbers the probe and the view read, in a random order."""
    rng = np.random.default_rng(SEED)
    return rng.choice(records, size=min(PROBE, records), replace=False).astype(np.int64)


def view_on_sample(folder: str, paths: list[str], records: int) -> dict:
    """The view reading the probe's sample in batches of BATCH, from a cold cache."""
    from helpers.index import RecordView

    sample = probe_sample(records)
    dropped = cold(Path(folder))
    start = time.perf_counter()
    with RecordView(paths) as view:
        for s in range(0, len(sample), BATCH):
            view[sample[s : s + BATCH]]
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "records_per_second": len(sample) / elapsed, "page_cache": dropped}


def epoch(folder: str, paths: list[str], records: int, how: str) -> dict:
    """One uniform epoch (or its first EPOCH_BATCHES batches) read ``how``, from a cold cache:
    ``view``, ``global_shuffle_dataset``, ``tf.data in order`` or ``tf.data shuffle(10_000)``."""
    from helpers.index import RecordView
    from helpers.notebook import prepare_tensorflow
    from helpers.shuffle import EpochOrder, global_shuffle_dataset

    prepare_tensorflow(deterministic_ops=False)
    import tensorflow as tf

    batches = EPOCH_BATCHES or -(-records // BATCH)
    options = tf.data.Options()
    options.deterministic = False
    dropped = cold(Path(folder))
    start, count = time.perf_counter(), 0
    if how == "view":
        with RecordView(paths) as view:
            order = EpochOrder(len(view), SEED)
            for s in range(0, min(batches * BATCH, len(order)), BATCH):
                count += len(view[order[s : s + BATCH]])
    else:
        autotune = tf.data.AUTOTUNE
        if how == "global_shuffle_dataset":
            dataset = global_shuffle_dataset(paths, SEED, batch_size=BATCH, deterministic=False)
        else:
            dataset = tf.data.TFRecordDataset(paths, num_parallel_reads=autotune)
            if how == "tf.data shuffle(10_000)":
                dataset = dataset.shuffle(10_000, seed=SEED)
            dataset = dataset.batch(BATCH)
        dataset = dataset.take(batches).prefetch(autotune).with_options(options)
        for batch in dataset:
            count += int(batch.shape[0])
    elapsed = time.perf_counter() - start
    return {
        "how": how,
        "records": count,
        "seconds": elapsed,
        "records_per_second": count / elapsed,
        "page_cache": dropped,
    }


def open_first_batch(folder: str, paths: list[str], drop: bool) -> dict:
    """Seconds to open a view from the index files and read its first batch in EpochOrder."""
    from helpers.index import RecordView
    from helpers.shuffle import EpochOrder

    dropped = cold(Path(folder)) if drop else None
    start = time.perf_counter()
    view = RecordView(paths)
    opened = time.perf_counter() - start
    view[EpochOrder(len(view), SEED)[:BATCH]]
    first = time.perf_counter() - start
    view.close()
    return {"open_seconds": opened, "open_and_first_batch_seconds": first, "page_cache": dropped}


def worker_memory(pickled: bytes) -> dict:
    """Private memory of this fresh process before and after it holds a view sent to it pickled,
    as Grain and PyTorch send one to their workers (one batch read in EpochOrder)."""
    from helpers.shuffle import EpochOrder

    before = private_mib()
    view = pickle.loads(pickled)
    view[EpochOrder(len(view), SEED)[:BATCH]]
    after = private_mib()
    return {
        "records": len(view),
        "before_mib": before,
        "holding_mib": after,
        "pickled_view_bytes": len(pickled),
    }


def held_by_a_worker(paths: list[str]) -> dict:
    """:func:`worker_memory` in a fresh process while this one (the main process of a data
    loader) holds the same view open, as it would."""
    from helpers.index import RecordView

    with RecordView(paths) as view:
        return in_fresh_process(worker_memory, pickle.dumps(view))


def order_size(records: int) -> dict:
    """The Python-allocated peak of making the epoch's order and reading its first batch (after
    one order of another epoch, so that one-time loading is not counted), its pickled size."""
    from helpers.shuffle import EpochOrder

    EpochOrder(records, SEED, 1)[:BATCH]  # what the first one loads (NumPy's lazy imports)
    tracemalloc.start()
    order = EpochOrder(records, SEED)
    order[:BATCH]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"records": records, "peak_bytes": peak, "pickled_bytes": len(pickle.dumps(order))}


def in_fresh_process(function: Callable, *args: object) -> dict:
    """``function(*args)`` in a new interpreter (spawned: nothing inherited, no view open)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def scale_set(size: int, records: int) -> dict:
    """Every measurement of one dataset, printed as it comes; returned for the JSON."""
    folder, paths, manifest = prepare(size, records)
    where = str(folder)
    print(f"-- {records:,} records of {size:,} bytes in {len(paths)} shards: {manifest}")
    result: dict[str, object] = {
        "payload_bytes": size,
        "records": records,
        "shards": len(paths),
        "batch": BATCH,
        **manifest,
    }
    probes = []
    for threads in THREADS:
        found = in_fresh_process(probe, where, paths, size, records, threads)
        probes.append(found)
        print(f"probe, cold, {threads:>2} threads: {found['records_per_second']:>12,.0f} reads/s")
    best = max(probes, key=lambda p: p["records_per_second"])
    result["probe"] = {"sample": min(PROBE, records), "runs": probes, "best": best}
    sample = in_fresh_process(view_on_sample, where, paths, records)
    sample["vs_best_probe"] = sample["records_per_second"] / best["records_per_second"]
    result["view_on_probe_sample"] = sample
    print(
        f"view on the probe's sample, cold: {sample['records_per_second']:>12,.0f} records/s = "
        f"{sample['vs_best_probe']:.2f}x the best probe (goal >= 0.50x: "
        f"{'met' if sample['vs_best_probe'] >= 0.5 else 'NOT MET'})"
    )
    ways = ("view", "global_shuffle_dataset", "tf.data in order", "tf.data shuffle(10_000)")
    result["epoch_batches"] = EPOCH_BATCHES or "whole epoch"
    result["epochs"] = {}
    for how in ways:
        found = in_fresh_process(epoch, where, paths, records, how)
        found["vs_best_probe"] = found["records_per_second"] / best["records_per_second"]
        result["epochs"][how] = found
        goal = ""
        if how in ("view", "global_shuffle_dataset"):
            goal = f"; goal >= 0.50x: {'met' if found['vs_best_probe'] >= 0.5 else 'NOT MET'}"
        print(
            f"epoch, cold, {how:<26} {found['records_per_second']:>12,.0f} records/s "
            f"({found['records']:,} in {found['seconds']:.1f} s; {found['vs_best_probe']:.2f}x "
            f"the best probe{goal})"
        )
    opened = {
        "cold": in_fresh_process(open_first_batch, where, paths, True),
        "warm": in_fresh_process(open_first_batch, where, paths, False),
    }
    result["open_and_first_batch"] = opened
    for state, found in opened.items():
        print(
            f"open the view + first batch, {state}: {found['open_seconds'] * 1e3:.0f} + "
            f"{(found['open_and_first_batch_seconds'] - found['open_seconds']) * 1e3:.0f} ms "
            "(goal at 10^8: <= 1 s in all)"
        )
    big = held_by_a_worker(paths)
    small = held_by_a_worker([str(folder / "small.tfrecord")])
    extra = big["holding_mib"]["uss"] - small["holding_mib"]["uss"]
    result["worker_memory"] = {"view": big, "small_view": small, "extra_uss_mib": extra}
    print(
        f"worker's private memory (USS) holding {big['records']:,} records' view: "
        f"{big['holding_mib']['uss']:.1f} MiB, a {small['records']:,}-record view: "
        f"{small['holding_mib']['uss']:.1f} MiB: {extra:+.1f} MiB (goal at 10^8: <= 16 MB); "
        f"a pickled view is {big['pickled_view_bytes']:,} bytes"
    )
    order = in_fresh_process(order_size, records)
    result["epoch_order"] = order
    print(
        f"epoch's order of {records:,}: peak {order['peak_bytes']:,} bytes allocated, pickled "
        f"{order['pickled_bytes']:,} bytes (goal: <= 1 MB)"
    )
    return result


def main() -> None:
    started = time.perf_counter()
    EXTRA["scale"] = {
        "page_cache": "cold: every file of the dataset dropped with posix_fadvise(DONTNEED) "
        "before each measurement, no view open; this VM's host may still cache its disk",
        "tensorflow_mode": "speed (no op determinism, deterministic=False)",
        "sets": {f"{size}x{records}": scale_set(size, records) for size, records in datasets()},
    }
    EXTRA["scale"]["seconds"] = time.perf_counter() - started
    print(f"scale run: {EXTRA['scale']['seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()
