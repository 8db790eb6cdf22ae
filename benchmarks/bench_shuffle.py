"""Global shuffle by random access vs sequential reading, on 70,000 label-sorted records.

Run: `python -m benchmarks shuffle` (or `make bench`). The files are the setting of
notebook 04: 70,000 small records sorted by label (10 x 7,000) in 70 files of
consecutive records. Everything is read once before timing, so the page cache is
warm: the ratios compare the CPU cost of the read paths, not the disk.

Prints:
* the shuffle quality of a 10,000 buffer and of `global_shuffle_dataset` (the goals:
  |rho| < 0.01 and chi-square p > 0.01 on the first 50,000 labels, with the
  finite-population correction for drawing them without replacement);
* throughput ratios (>1 = the candidate is faster) of the global shuffle against
  sequential `tf.data.TFRecordDataset` reading of the same files, in Python and as a
  tf.data pipeline (the helper, D), and of three other ways to make it a Dataset
  (A, B, C);
* the cost of building the offset index against one sequential pass;
* the memory each read path holds, computed;
* the shootout of issue 25 (:func:`shootout`): one label-sorted dataset of 70,000 records in
  3 shards (``write_sharded(..., index=True)``), records of 800 bytes, then 100 bytes and
  10 KB, a whole epoch in batches of 256 by every way to read it: ``tf.data`` in order (one
  file after another, and 3 files in parallel), ``shuffle(10_000)``, ``shuffle(70_000)``,
  shuffled files + interleave + ``shuffle(10_000)``, the ``RecordView`` read in a uniformly
  random order (``view[ids]``), ``global_shuffle_dataset(batch_size=256)``, Grain's
  ``MapDataset`` (shuffle, batch) over the view, over an ArrayRecord copy (array_record's
  own writer, ``group_size:1`` as Grain asks; 0, 2 and 16 threads, see ``GRAIN_THREADS``) and
  over the records in a list (what Grain costs when reading costs nothing), and ArrayRecord's
  own ``__getitems__`` on a permutation. All run in turn in every round (the order reversed
  every other round, one warm-up round first), in 3 fresh processes one after another
  (``SHOOTOUT_PROCESSES``); printed: records/s (median and range) of each, and the issue's
  ratios, each the median of the per-round ratios of all processes, with the goal and
  whether the worst round met it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks._common import EXTRA, RESULTS, Comparison, collector_paused, compare, work_dir
from helpers.index import RecordView, build_index
from helpers.records import iter_records, write_records, write_sharded
from helpers.shuffle import global_shuffle_dataset, permutation

NUM_RECORDS, NUM_CLASSES, NUM_SHARDS = 70_000, 10, 70
SEED = 7
BATCH = 256  # consumer batch size for the tf.data comparisons
READ_BATCH = 1024
# The shootout: record sizes in payload bytes (the first is the headline), shards.
RECORD_SIZES = (800, 100, 10_000)
SHOOTOUT_SHARDS = 3
SHOOTOUT_ROUNDS = 2  # timed rounds per process after its warm-up; each contender once a round
# Fresh processes per record size: the same tf.data pipeline runs at a different speed in
# different processes here (shuffle(10_000): 226,000 and 398,000 records/s), so one process
# can favour one side. Ratios stay paired within a round.
SHOOTOUT_PROCESSES = 3
# array_record's writer: one record per group (Grain's ArrayRecordDataSource warns otherwise:
# random access then decodes a whole group per record), no compression (TFRecord has none).
ARRAY_RECORD_OPTIONS = "group_size:1,uncompressed"


def make_files(num_records: int = NUM_RECORDS, num_shards: int = NUM_SHARDS) -> list[str]:
    """Write (once) label-sorted records with `index` and `label` int64 and 16 payload bytes."""
    import tensorflow as tf

    folder = work_dir("shuffle")
    per = num_records // num_shards
    paths = [
        str(folder / f"sorted-{s:05d}-of-{num_shards:05d}.tfrecord") for s in range(num_shards)
    ]
    if all(os.path.exists(p) for p in paths):
        return paths
    labels = np.repeat(np.arange(NUM_CLASSES), num_records // NUM_CLASSES)
    pixels = np.random.default_rng(0).integers(0, 256, size=(num_records, 16), dtype=np.uint8)

    def example(i: int) -> bytes:
        def int64(value: int) -> tf.train.Feature:
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

        feature = {
            "index": int64(i),
            "label": int64(int(labels[i])),
            "pixels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels[i].tobytes()])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        return example.SerializeToString(deterministic=True)

    for s, path in enumerate(paths):
        write_records(path, (example(i) for i in range(s * per, (s + 1) * per)), overwrite=True)
    return paths


def order_of(dataset) -> tuple[np.ndarray, np.ndarray]:
    """Input indices and labels of a dataset of serialized records, in output order."""
    import tensorflow as tf

    spec = {
        "index": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    parsed = list(dataset.batch(10_000).map(lambda s: tf.io.parse_example(s, spec)))
    return (
        np.concatenate([b["index"].numpy() for b in parsed]),
        np.concatenate([b["label"].numpy() for b in parsed]),
    )


def shuffled_records(reader: RecordView, seed: int, read_batch: int = READ_BATCH):
    """Notebook 04's generator: every record once, in the order of `permutation`."""
    order = permutation(len(reader), seed)
    for start in range(0, len(order), read_batch):
        yield from reader[order[start : start + read_batch]]


def per_record_generator_dataset(files: list[str], seed: int):
    """Variant A: `from_generator` yielding one record per call."""
    import tensorflow as tf

    reader = RecordView(files)  # indexed once, like global_shuffle_dataset
    spec = tf.TensorSpec([], tf.string)
    return tf.data.Dataset.from_generator(
        lambda: shuffled_records(reader, seed), output_signature=spec
    )


def batch_generator_dataset(files: list[str], seed: int, read_batch: int = READ_BATCH):
    """Variant B: `from_generator` yielding `read_batch` records per call, then `unbatch`."""
    import tensorflow as tf

    reader = RecordView(files)

    def batches():
        order = permutation(len(reader), seed)
        for start in range(0, len(order), read_batch):
            yield np.array(reader[order[start : start + read_batch]], dtype=object)

    spec = tf.TensorSpec([None], tf.string)
    return tf.data.Dataset.from_generator(batches, output_signature=spec).unbatch()


def drain(dataset) -> int:
    count = 0
    for batch in dataset.batch(BATCH):
        count += int(batch.shape[0])
    return count


def quality(
    indices: np.ndarray, labels: np.ndarray, first: int = 50_000
) -> tuple[float, float, int]:
    """Spearman's rho of the whole stream; chi-square p and number of 9s in the first `first`.

    The first `first` labels are drawn without replacement from all of them, so under a fair
    shuffle the chi-square statistic is smaller by the finite-population factor
    (N - n) / (N - 1); it is divided by that factor before the p-value is read off the
    chi-square distribution (notebook 04, "Measure the bias with three numbers").
    """
    rho = float(stats.spearmanr(np.arange(len(indices)), indices).statistic)
    counts = np.bincount(labels[:first], minlength=NUM_CLASSES)
    factor = (len(labels) - first) / (len(labels) - 1)
    p = float(stats.chi2.sf(stats.chisquare(counts).statistic / factor, df=NUM_CLASSES - 1))
    return rho, p, int(counts[9])


def report_quality(files: list[str]) -> None:
    import tensorflow as tf

    streams = {
        "shuffle(10_000)": tf.data.TFRecordDataset(files).shuffle(10_000, seed=SEED),
        "global_shuffle_dataset": global_shuffle_dataset(files, SEED),
    }
    measured = {name: quality(*order_of(dataset)) for name, dataset in streams.items()}
    for name, (rho, p, nines) in measured.items():
        print(
            f"{name:<58} rho {rho:+.4f}   chi-square p {p:.3g} on the first 50,000"
            f"   9s in the first 50,000: {nines:,}"
        )
    rho, p, _ = measured["global_shuffle_dataset"]
    goal = "goal |rho| < 0.01 and p > 0.01 for the global shuffle"
    print(f"{goal:<58} {'met' if abs(rho) < 0.01 and p > 0.01 else 'NOT MET'}")


def main() -> None:
    import tensorflow as tf

    files = make_files()
    for path in files:  # warm the page cache
        for _ in iter_records(path):
            pass
    report_quality(files)

    def tf_sequential_python() -> int:
        return sum(1 for _ in tf.data.TFRecordDataset(files))

    def python_global() -> int:
        with RecordView(files) as reader:
            return sum(1 for _ in shuffled_records(reader, SEED))

    def python_sequential() -> int:
        return sum(1 for path in files for _ in iter_records(path))

    def sequential() -> int:
        return drain(tf.data.TFRecordDataset(files))

    def helper() -> int:
        return drain(global_shuffle_dataset(files, SEED))

    def variant_b() -> int:
        return drain(batch_generator_dataset(files, SEED))

    compare(
        "python loop: permutation + view[ids] vs TFRecordDataset (eager)",
        tf_sequential_python,
        python_global,
        repeats=3,
    )
    compare(
        "python loop: permutation + view[ids] vs records.iter_records",
        python_sequential,
        python_global,
    )
    compare(
        f"tf.data, batch {BATCH}: global_shuffle_dataset vs TFRecordDataset", sequential, helper
    )
    compare(
        "  variant A: from_generator, one record per call",
        sequential,
        lambda: drain(per_record_generator_dataset(files, SEED)),
        repeats=3,
    )
    compare(
        f"  variant B: from_generator, {READ_BATCH} records per call + unbatch",
        sequential,
        variant_b,
    )
    compare(
        f"  variant C: ids -> map(numpy_function), {READ_BATCH} ids per call, 1 at a time",
        sequential,
        lambda: drain(global_shuffle_dataset(files, SEED, parallel_reads=1)),
    )
    compare("  the helper (D: as C, AUTOTUNE calls in parallel) vs B", variant_b, helper)
    compare(
        "index build (headers only) vs one sequential pass (both CRCs)",
        python_sequential,
        lambda: [build_index(f) for f in files],
    )

    with RecordView(files) as reader:
        n = len(reader)
        record_bytes = sum(os.path.getsize(f) for f in files) // n
        order_bytes = permutation(n, SEED).nbytes
        held = reader.index_nbytes + order_bytes
        print(
            f"memory of the global shuffle: index {reader.index_nbytes / 2**20:.2f} MiB + "
            f"permutation {order_bytes / 2**20:.2f} MiB = {held / n:.0f} bytes per record "
            f"(records average {record_bytes} bytes on disk) + the slices being read"
        )
        print(
            f"memory of shuffle(10_000) on these records: about "
            f"{10_000 * record_bytes / 2**20:.2f} MiB; of a buffer holding all {n:,}: "
            f"about {n * record_bytes / 2**20:.2f} MiB"
        )
    shootout()


# The shootout (issue 25) ------------------------------------------------------------------


def sized_payloads(size: int, num_records: int = NUM_RECORDS) -> list[bytes]:
    """Label-sorted Examples (``index``, ``label``, ``pixels``) of ``size`` bytes, or 1-2 less."""
    import tensorflow as tf

    def example(i: int, label: int, pixels: bytes) -> bytes:
        def int64(value: int) -> tf.train.Feature:
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

        feature = {
            "index": int64(i),
            "label": int64(label),
            "pixels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        return example.SerializeToString(deterministic=True)

    width = size - len(example(num_records, NUM_CLASSES, b""))
    while len(example(num_records, NUM_CLASSES, bytes(width))) > size:
        width -= 1
    labels = np.repeat(np.arange(NUM_CLASSES), -(-num_records // NUM_CLASSES))[:num_records]
    noise = np.random.default_rng(size).bytes(width * num_records)
    return [
        example(i, int(labels[i]), noise[i * width : (i + 1) * width]) for i in range(num_records)
    ]


def write_array_record(tfrecords: list[Path], folder: Path) -> list[str]:
    """An ArrayRecord copy of each TFRecord shard (same records, same order), by its writer."""
    from array_record.python.array_record_module import ArrayRecordWriter

    paths = []
    for shard in tfrecords:
        path = folder / (shard.name + ".array_record")
        writer = ArrayRecordWriter(str(path), ARRAY_RECORD_OPTIONS)
        for record in iter_records(shard):
            writer.write(record)
        writer.close()
        paths.append(str(path))
    return paths


def shootout_contenders(files: list[str], array_records: list[str]) -> dict[str, Callable]:
    """Name -> a function that reads one whole epoch in batches of BATCH, returns the count."""
    import grain
    import tensorflow as tf
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    autotune = tf.data.AUTOTUNE

    def tf_epoch(dataset, batched: bool = False) -> Callable[[], int]:
        batches = (dataset if batched else dataset.batch(BATCH)).prefetch(autotune)
        return lambda: sum(int(batch.shape[0]) for batch in batches)

    def by_permutation(source) -> Callable[[], int]:
        epochs = iter(range(1 << 30))

        def epoch() -> int:
            order = permutation(len(source), SEED, next(epochs))
            return sum(
                len(source.__getitems__(order[s : s + BATCH])) for s in range(0, len(order), BATCH)
            )

        return epoch

    def grain_epoch(source, threads: int) -> Callable[[], int]:
        # batch_fn=list: Grain's default batch stacks bytes into a fixed-width NumPy array,
        # which drops every trailing zero byte of a record (a serialized Example can end in one).
        batches = grain.MapDataset.source(source).shuffle(seed=SEED).batch(BATCH, batch_fn=list)
        batches = batches.to_iter_dataset(grain.ReadOptions(num_threads=threads))
        return lambda: sum(len(batch) for batch in batches)

    view = RecordView(files)
    array_record = ArrayRecordDataSource(array_records)
    probe = permutation(len(view), SEED)[:1000]
    assert list(array_record.__getitems__(probe)) == view[probe], "the copies differ"
    in_order = tf.data.TFRecordDataset(files)
    shuffled_files = (
        tf.data.Dataset.from_tensor_slices(files)
        .shuffle(len(files), seed=SEED)
        .interleave(tf.data.TFRecordDataset, cycle_length=len(files), num_parallel_calls=autotune)
        .shuffle(10_000, seed=SEED)
    )
    return {
        "tf.data in order": tf_epoch(in_order),
        f"tf.data in order, {len(files)} parallel reads": tf_epoch(
            tf.data.TFRecordDataset(files, num_parallel_reads=len(files))
        ),
        "tf.data shuffle(10_000)": tf_epoch(in_order.shuffle(10_000, seed=SEED)),
        f"tf.data shuffle({len(view):_})": tf_epoch(in_order.shuffle(len(view), seed=SEED)),
        "tf.data shuffled files + interleave + shuffle(10_000)": tf_epoch(shuffled_files),
        "RecordView, view[ids] on a permutation": by_permutation(view),
        "global_shuffle_dataset (tf.data)": tf_epoch(
            global_shuffle_dataset(files, SEED, batch_size=BATCH), batched=True
        ),
        GRAIN_VIEW: grain_epoch(view, 0),
        **{GRAIN_ARRAY_RECORD.format(n): grain_epoch(array_record, n) for n in GRAIN_THREADS},
        "Grain MapDataset over a list in memory (Grain's own cost)": grain_epoch(
            view[range(len(view))], 0
        ),
        "ArrayRecord __getitems__ on a permutation": by_permutation(array_record),
    }


#: Grain reads in ``ReadOptions.num_threads`` threads (16 by default). For data in memory (here,
#: the page cache) its docs advise 0: Python threads contend for the GIL. The view gets that
#: advice; ArrayRecord, whose C++ reads release the GIL, runs with 0, 2 (the cores here) and the
#: default 16 threads, and each is a baseline.
GRAIN_VIEW = "Grain MapDataset over RecordView, num_threads=0"
GRAIN_ARRAY_RECORD = "Grain MapDataset over ArrayRecord, num_threads={}"
GRAIN_THREADS = (0, 2, 16)

#: The issue's ratios: (candidate, baseline, goal); the baselines it names and the strongest.
SHOOTOUT_RATIOS = [
    ("RecordView, view[ids] on a permutation", "ArrayRecord __getitems__ on a permutation", 5.0),
    ("RecordView, view[ids] on a permutation", "tf.data shuffle(10_000)", 1.5),
    ("RecordView, view[ids] on a permutation", "tf.data in order", 1.0),
    ("RecordView, view[ids] on a permutation", "tf.data in order, 3 parallel reads", None),
    ("global_shuffle_dataset (tf.data)", "tf.data shuffle(10_000)", 1.0),
    ("global_shuffle_dataset (tf.data)", "tf.data in order", None),
    *((GRAIN_VIEW, GRAIN_ARRAY_RECORD.format(n), 2.5) for n in GRAIN_THREADS),
]


def timed(epoch: Callable[[], int]) -> tuple[float, int]:
    """Wall seconds of one epoch (collector paused, as ``_common.seconds``), and its count."""
    with collector_paused():
        start = time.perf_counter()
        count = epoch()
        return time.perf_counter() - start, count


def time_contenders(files: list[str], array_records: list[str], count: int, rounds: int) -> dict:
    """Name -> seconds of each timed round, in this process (round 0 warms up: page cache,
    tf.data graphs, threads; the order is reversed every other round)."""
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    contenders = shootout_contenders(files, array_records)
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):
        for name in names if round_ % 2 else names[::-1]:
            elapsed, got = timed(contenders[name])
            assert got == count, f"{name} read {got} records, not {count}"
            if round_:
                times[name].append(elapsed)
    return times


def shootout_size(
    size: int, rounds: int = SHOOTOUT_ROUNDS, processes: int = SHOOTOUT_PROCESSES
) -> dict:
    """The shootout on records of ``size`` bytes, in ``processes`` fresh processes one after
    another; prints and returns records/s per contender."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    folder = work_dir(f"shootout-{size}")
    payloads = sized_payloads(size)
    files = write_sharded(folder / "sorted", payloads, SHOOTOUT_SHARDS, overwrite=True, index=True)
    array_records = write_array_record(files, folder)
    mean = sum(map(len, payloads)) / len(payloads)
    count = len(payloads)
    del payloads
    job = ([str(f) for f in files], array_records, count, rounds)
    spawn = multiprocessing.get_context("spawn")  # a new interpreter each: nothing inherited
    with ProcessPoolExecutor(1, mp_context=spawn, max_tasks_per_child=1) as pool:
        runs = [pool.submit(time_contenders, *job).result() for _ in range(processes)]
    names = list(runs[0])
    times = {name: [s for run in runs for s in run[name]] for name in names}
    print(
        f"-- {count:,} label-sorted records of {mean:,.0f} bytes in {SHOOTOUT_SHARDS} shards, "
        f"batches of {BATCH}, {rounds} rounds in each of {processes} processes: records/s, "
        "median (range)"
    )
    rates = {}
    for name in names:
        per_second = [count / s for s in times[name]]
        rates[name] = {
            "records_per_second_median": statistics.median(per_second),
            "records_per_second_range": [min(per_second), max(per_second)],
            "seconds": times[name],
            "process_medians": [count / statistics.median(run[name]) for run in runs],
        }
        low, high = min(per_second), max(per_second)
        print(f"{name:<62} {statistics.median(per_second):>11,.0f} ({low:,.0f}-{high:,.0f})")
    strongest = max(names[:5], key=lambda n: rates[n]["records_per_second_median"])
    named = {(candidate, baseline) for candidate, baseline, _ in SHOOTOUT_RATIOS}
    ratios = SHOOTOUT_RATIOS + [
        (name, strongest, None) for name in names[5:] if (name, strongest) not in named
    ]
    print(f"strongest TFRecord baseline: {strongest}")
    for candidate, baseline, goal in ratios:
        result = Comparison(
            f"{size} B: {candidate} vs {baseline}", times[baseline], times[candidate], goal
        )
        print(result.line(), flush=True)
        RESULTS.append(result)
    return {
        "records": count,
        "mean_record_bytes": mean,
        "shards": SHOOTOUT_SHARDS,
        "batch": BATCH,
        "rounds": rounds,
        "processes": processes,
        "array_record_options": ARRAY_RECORD_OPTIONS,
        "strongest_baseline": strongest,
        "contenders": rates,
    }


def shootout(
    sizes=RECORD_SIZES, rounds: int = SHOOTOUT_ROUNDS, processes: int = SHOOTOUT_PROCESSES
) -> None:
    """Every way to read a label-sorted dataset for an epoch, side by side (issue 25)."""
    EXTRA["shootout"] = {str(size): shootout_size(size, rounds, processes) for size in sizes}


if __name__ == "__main__":
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main()
