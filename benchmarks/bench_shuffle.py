"""Global shuffle by random access vs sequential reading, on 70,000 label-sorted records.

Run: `python -m benchmarks shuffle` (or `make bench`). The files are the setting of
notebook 07: 70,000 small records sorted by label (10 x 7,000) in 70 files of
consecutive records. Everything is read once before timing, so the page cache is
warm: the ratios compare the CPU cost of the read paths, not the disk (the cold cache is
`benchmarks/bench_scale.py`'s, `make bench-scale`).

Prints:
* the shuffle quality of a 10,000 buffer and of `global_shuffle_dataset` (the goals:
  |rho| < 0.01 and chi-square p > 0.01 on the first 50,000 labels, with the
  finite-population correction for drawing them without replacement);
* throughput ratios (>1 = the candidate is faster) of the global shuffle against
  sequential `tf.data.TFRecordDataset` reading of the same files, in Python and as a
  tf.data pipeline (the helper, D), and of three other ways to make it a Dataset
  (A, B, C), in this (reproducible: op determinism on) process;
* the index command's speed: `helpers.index.write_index` (both index files, every header and
  length CRC checked) against `tf.data.TFRecordDataset(files).reduce` counting the same records,
  7 alternating runs (issue 35's goal: at least 1.0x), here and at each shootout size;
* the shootout (:func:`shootout`, issues 25 and 35): one label-sorted dataset of 70,000 records
  in 3 shards (``write_sharded(..., index=True)``), records of 800 bytes, then 100 bytes and
  10 KB, a whole epoch in batches of 256 by every way to read it, in two named modes, each in
  its own fresh processes (op determinism cannot be switched off once on):

  - *speed*: ``prepare_tensorflow(deterministic_ops=False)``, every ``tf.data`` pipeline with
    ``Options.deterministic = False``, ``global_shuffle_dataset(deterministic=False)``;
  - *reproducible*: op determinism on and ``deterministic=True`` everywhere (as before).

  Tensors out, through ``tf.data`` (like for like): ``tf.data`` in order (one file after
  another, and ``num_parallel_reads=3`` as its docs advise), ``shuffle(10_000)``,
  ``shuffle(70_000)``, shuffled files + interleave + ``shuffle(10_000)``, the in-memory
  ``cache().shuffle(70_000)`` (the data fit), and ``global_shuffle_dataset(batch_size=256)``.
  Python out: the ``RecordView`` read in ``EpochOrder`` (``view[order[a:b]]``), ArrayRecord's
  own batched ``__getitems__`` (array_record's writer, ``"group_size:1,uncompressed"`` as Grain
  asks) at 1, 2 and 4 reader threads (``max_parallelism``), and Grain's ``MapDataset``
  (shuffle, batch) over the view, over the ArrayRecord copy and over the records in a list
  (Grain's own ceiling), with ``ReadOptions(num_threads=0)`` and with 2 worker processes
  (``mp_prefetch``; one long-lived iterator over repeated epochs, as a training loop keeps it,
  whose "epoch" is ``len // 256`` whole batches, its time scaled to the whole epoch), ArrayRecord
  also with 2 and 16 threads. Each contender reads a whole
  epoch once a round (the order reversed every other round, one warm-up round first), 2 rounds
  in each of 3 fresh processes per mode (``SHOOTOUT_PROCESSES``), the modes' processes
  alternating. Each process also times opening the view from its ``.index`` files (the first
  time in the process, then again), the time from nothing to the first batch of the main
  contenders, and whether Grain's ``get_state``/``set_state`` resumes with the same batches.
  Printed: records/s (median and range) of each, and the issue's paired ratios, each the
  median of the per-round ratios of all processes of one mode, with the goal and whether it
  was met (issue 35: ``global_shuffle_dataset`` at least 1.2x ``shuffle(10_000)`` in the
  median and 0.95x in the worst round, speed mode; Grain over the view at least 0.8x Grain
  over a list, with 0 threads and with workers).

Environment: ``SHOOTOUT_SIZES`` (``800,100,10000``), ``SHOOTOUT_MODES`` (``speed,reproducible``),
``SHOOTOUT_PROCESSES`` (3), ``SHOOTOUT_ROUNDS`` (2) and ``SHOOTOUT_RECORDS`` (70000) make a
smaller run for trying the code; the reference run uses the defaults.
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
from helpers.index import RecordView, write_index
from helpers.records import iter_records, write_records, write_sharded
from helpers.shuffle import EpochOrder, global_shuffle_dataset, permutation

NUM_RECORDS, NUM_CLASSES, NUM_SHARDS = 70_000, 10, 70
SEED = 7
BATCH = 256  # consumer batch size for the tf.data comparisons
READ_BATCH = 1024
# The shootout: record sizes in payload bytes (the first is the headline), shards.
RECORD_SIZES = tuple(int(s) for s in os.environ.get("SHOOTOUT_SIZES", "800,100,10000").split(","))
SHOOTOUT_RECORDS = int(os.environ.get("SHOOTOUT_RECORDS", NUM_RECORDS))
SHOOTOUT_SHARDS = 3
# timed rounds per process after its warm-up; each contender once a round
SHOOTOUT_ROUNDS = int(os.environ.get("SHOOTOUT_ROUNDS", 2))
# Fresh processes per record size and mode: the same tf.data pipeline runs at a different speed
# in different processes here (shuffle(10_000): 226,000 and 398,000 records/s), so one process
# can favour one side. Ratios stay paired within a round.
SHOOTOUT_PROCESSES = int(os.environ.get("SHOOTOUT_PROCESSES", 3))
#: The two named modes (issue 35), each run in its own processes: op determinism on in one.
MODES = tuple(os.environ.get("SHOOTOUT_MODES", "speed,reproducible").split(","))
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
    """Notebook 07's generator: every record once, in the order of `permutation`."""
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
    chi-square distribution (notebook 07, "Measure the bias with three numbers").
    """
    rho = float(stats.spearmanr(np.arange(len(indices)), indices).statistic)
    counts = np.bincount(labels[:first], minlength=NUM_CLASSES)
    factor = (len(labels) - first) / (len(labels) - 1)
    p = float(stats.chi2.sf(stats.chisquare(counts).statistic / factor, df=NUM_CLASSES - 1))
    return rho, p, int(counts[9])


def index_speed(label: str, files: list[str]) -> Comparison:
    """``write_index`` (both index files, every header and length CRC checked) against
    ``tf.data`` counting the same records, 7 alternating runs (issue 35's goal: 1.0x)."""
    import tensorflow as tf

    def count() -> int:
        return int(tf.data.TFRecordDataset(files).reduce(np.int64(0), lambda n, _: n + 1))

    return compare(
        f"{label}: write_index vs TFRecordDataset(files).reduce counting",
        count,
        lambda: write_index(files),
        repeats=7,
        goal=1.0,
        worst_goal=None,
    )


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
    index_speed("70 files of 70,000 small records", files)
    print(
        "memory of the global shuffle: see `make bench-scale` (private memory of a worker "
        "holding a view of 10^8 records, the size of the epoch's order)"
    )
    shootout()


# The shootout (issues 25 and 35) ------------------------------------------------------------


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


#: Grain reads in ``ReadOptions.num_threads`` threads (16 by default). For data in memory (here,
#: the page cache) its docs advise 0: Python threads contend for the GIL; to scale, worker
#: processes (``mp_prefetch``, here 2: the cores). The view and the list get 0 threads and
#: workers; ArrayRecord, whose C++ reads release the GIL, also 2 and 16 threads.
GRAIN = "Grain over {}, {}"
GRAIN_THREADS = (0, 2, 16)
GRAIN_WORKERS = 2
VIEW = "RecordView, view[order[a:b]] in EpochOrder"
ARRAY_RECORD = "ArrayRecord __getitems__ in EpochOrder, max_parallelism={}"
#: ArrayRecord's reader threads for a batch (``reader_options={"max_parallelism": n}``); the
#: data source adds one Python thread per shard touched. The best of them is the baseline.
ARRAY_RECORD_PARALLELISM = (1, 2, 4)
GLOBAL = "global_shuffle_dataset (tf.data)"
SHUFFLE = "tf.data shuffle(10_000)"


#: The mp_prefetch iterators of this process's contenders, closed after its rounds.
_WORKER_ITERATORS: list = []


def grain_name(source: str, workers: bool, threads: int = 0) -> str:
    return GRAIN.format(
        source, f"{GRAIN_WORKERS} worker processes" if workers else f"num_threads={threads}"
    )


def shootout_contenders(
    files: list[str], array_records: list[str], mode: str
) -> dict[str, Callable[[], int]]:
    """Name -> a function that reads one epoch in batches of BATCH, returns its record count.
    The ``tf.data`` ones first (tensors out), then Python out."""
    import grain
    import tensorflow as tf
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    autotune, speed = tf.data.AUTOTUNE, mode == "speed"
    options = tf.data.Options()
    options.deterministic = not speed

    def tf_epoch(dataset, batched: bool = False) -> Callable[[], int]:
        batches = (dataset if batched else dataset.batch(BATCH)).prefetch(autotune)
        batches = batches.with_options(options)
        return lambda: sum(int(batch.shape[0]) for batch in batches)

    def in_epoch_order(source) -> Callable[[], int]:
        epochs = iter(range(1 << 30))

        def epoch() -> int:
            order = EpochOrder(len(source), SEED, next(epochs))
            return sum(
                len(source.__getitems__(order[s : s + BATCH])) for s in range(0, len(order), BATCH)
            )

        return epoch

    def grain_epoch(source, threads: int = 0, workers: bool = False) -> Callable[[], int]:
        # batch_fn=list: Grain's default batch stacks bytes into a fixed-width NumPy array,
        # which drops every trailing zero byte of a record (a serialized Example can end in one).
        dataset = grain.MapDataset.source(source).shuffle(seed=SEED)
        read = grain.ReadOptions(num_threads=threads)
        if not workers:
            batches = dataset.batch(BATCH, batch_fn=list).to_iter_dataset(read)
            return lambda: sum(len(batch) for batch in batches)
        # Worker processes start with an iterator: one long-lived iterator over repeated epochs
        # (as a training loop keeps it), so an "epoch" is len // BATCH of its batches.
        batches = dataset.repeat().batch(BATCH, batch_fn=list).to_iter_dataset(read)
        options = grain.MultiprocessingOptions(num_workers=GRAIN_WORKERS)
        iterator = iter(batches.mp_prefetch(options))
        _WORKER_ITERATORS.append(iterator)
        steps = len(source) // BATCH
        return lambda: sum(len(next(iterator)) for _ in range(steps))

    view = RecordView(files)
    array_record = ArrayRecordDataSource(array_records)
    probe = EpochOrder(len(view), SEED)[:1000]
    assert list(array_record.__getitems__(probe)) == view[probe], "the copies differ"
    records = view[range(len(view))]
    in_order = tf.data.TFRecordDataset(files)
    shuffled_files = (
        tf.data.Dataset.from_tensor_slices(files)
        .shuffle(len(files), seed=SEED)
        .interleave(tf.data.TFRecordDataset, cycle_length=len(files), num_parallel_calls=autotune)
        .shuffle(10_000, seed=SEED)
    )
    contenders = {
        "tf.data in order": tf_epoch(in_order),
        f"tf.data in order, {len(files)} parallel reads": tf_epoch(
            tf.data.TFRecordDataset(files, num_parallel_reads=len(files))
        ),
        SHUFFLE: tf_epoch(in_order.shuffle(10_000, seed=SEED)),
        f"tf.data shuffle({len(view):_})": tf_epoch(in_order.shuffle(len(view), seed=SEED)),
        "tf.data shuffled files + interleave + shuffle(10_000)": tf_epoch(shuffled_files),
        f"tf.data cache().shuffle({len(view):_}), in memory": tf_epoch(
            in_order.cache().shuffle(len(view), seed=SEED)
        ),
        GLOBAL: tf_epoch(
            global_shuffle_dataset(files, SEED, batch_size=BATCH, deterministic=not speed),
            batched=True,
        ),
        VIEW: in_epoch_order(view),
        **{
            ARRAY_RECORD.format(n): in_epoch_order(
                ArrayRecordDataSource(array_records, reader_options={"max_parallelism": str(n)})
            )
            for n in ARRAY_RECORD_PARALLELISM
        },
    }
    for name, source in (("RecordView", view), ("ArrayRecord", array_record), ("a list", records)):
        threads = GRAIN_THREADS if name == "ArrayRecord" else (0,)
        for n in threads:
            contenders[grain_name(name, False, n)] = grain_epoch(source, n)
        contenders[grain_name(name, True)] = grain_epoch(source, workers=True)
    return contenders


#: The issue's paired ratios: (candidate, baseline, median goal, worst-round goal), like for like
#: (tensors against tensors, Python against Python); goals in speed mode. "best ArrayRecord" is
#: the ArrayRecord contender with the highest median rate in that mode.
SHOOTOUT_RATIOS = [
    (GLOBAL, SHUFFLE, 1.2, 0.95),
    (GLOBAL, "tf.data in order", None, None),
    (GLOBAL, "tf.data in order, 3 parallel reads", None, None),
    (GLOBAL, "tf.data shuffled files + interleave + shuffle(10_000)", None, None),
    (VIEW, "best ArrayRecord", 5.0, None),
    (grain_name("RecordView", False), grain_name("a list", False), 0.8, None),
    (grain_name("RecordView", True), grain_name("a list", True), 0.8, None),
    *(
        (grain_name("RecordView", False), grain_name("ArrayRecord", False, n), 2.5, None)
        for n in GRAIN_THREADS
    ),
    (grain_name("RecordView", True), grain_name("ArrayRecord", True), None, None),
]


def timed(epoch: Callable[[], int], count: int) -> float:
    """Wall seconds of one epoch of ``count`` records (collector paused, as
    ``_common.seconds``); an epoch read as whole batches (``count // BATCH``) is scaled up."""
    with collector_paused():
        start = time.perf_counter()
        got = epoch()
        elapsed = time.perf_counter() - start
    assert count - BATCH < got <= count, f"read {got} records, not {count}"
    return elapsed * count / got


def first_batches(files: list[str], array_records: list[str], mode: str) -> dict[str, float]:
    """Seconds from nothing (no view, no dataset) to the first batch of the main contenders,
    in this process after a throwaway ``tf.data`` batch (TensorFlow's own start-up)."""
    import grain
    import tensorflow as tf
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    speed = mode == "speed"
    options = tf.data.Options()
    options.deterministic = not speed
    next(iter(tf.data.Dataset.range(3).batch(2)))

    def tf_first(make) -> Callable[[], object]:
        return lambda: next(iter(make().batch(BATCH).with_options(options)))

    def view_first() -> object:
        with RecordView(files) as view:
            return view[EpochOrder(len(view), SEED)[:BATCH]]

    def grain_first() -> object:
        with RecordView(files) as view:
            dataset = grain.MapDataset.source(view).shuffle(seed=SEED).batch(BATCH, batch_fn=list)
            return next(iter(dataset.to_iter_dataset(grain.ReadOptions(num_threads=0))))

    def array_record_first() -> object:
        source = ArrayRecordDataSource(array_records)
        return source.__getitems__(EpochOrder(len(source), SEED)[:BATCH])

    def global_first() -> object:
        dataset = global_shuffle_dataset(files, SEED, batch_size=BATCH, deterministic=not speed)
        return next(iter(dataset.with_options(options)))

    firsts = {
        "tf.data in order": tf_first(lambda: tf.data.TFRecordDataset(files)),
        SHUFFLE: tf_first(lambda: tf.data.TFRecordDataset(files).shuffle(10_000, seed=SEED)),
        "tf.data cache().shuffle(n), in memory": tf_first(
            lambda: tf.data.TFRecordDataset(files).cache().shuffle(SHOOTOUT_RECORDS, seed=SEED)
        ),
        GLOBAL: global_first,
        VIEW: view_first,
        ARRAY_RECORD.format("default"): array_record_first,
        grain_name("RecordView", False): grain_first,
    }
    return {name: timed_once(first) for name, first in firsts.items()}


def timed_once(function: Callable[[], object]) -> float:
    with collector_paused():
        start = time.perf_counter()
        function()
        return time.perf_counter() - start


def opening(files: list[str], again: int = 5) -> dict[str, object]:
    """Seconds to open the view from its ``.index`` files: the first time in this process, and
    the median of ``again`` more."""
    first = timed_once(lambda: RecordView(files).close())
    more = [timed_once(lambda: RecordView(files).close()) for _ in range(again)]
    return {"first_in_process": first, "again_median": statistics.median(more), "again": more}


def grain_resume(files: list[str]) -> dict[str, object]:
    """Does Grain's ``get_state``/``set_state`` resume with the same batches? Read 3 batches,
    save the state, read 3 more; a new iterator set to the state must give those 3 again. With
    0 threads and with worker processes; an exception is recorded as its text."""
    import grain

    found: dict[str, object] = {}
    with RecordView(files) as view:
        dataset = grain.MapDataset.source(view).shuffle(seed=SEED).batch(BATCH, batch_fn=list)
        for workers in (False, True):
            batches = dataset.to_iter_dataset(grain.ReadOptions(num_threads=0))
            if workers:
                batches = batches.mp_prefetch(
                    grain.MultiprocessingOptions(num_workers=GRAIN_WORKERS)
                )
            try:
                iterator = iter(batches)
                for _ in range(3):
                    next(iterator)
                state = iterator.get_state()
                expected = [next(iterator) for _ in range(3)]
                resumed = iter(batches)
                resumed.set_state(state)
                found[grain_name("RecordView", workers)] = [
                    next(resumed) for _ in range(3)
                ] == expected
                for opened in (iterator, resumed):
                    getattr(opened, "close", lambda: None)()
            except Exception as error:  # noqa: BLE001 (recorded: the answer is "no")
                found[grain_name("RecordView", workers)] = f"{type(error).__name__}: {error}"
    return found


def time_contenders(
    files: list[str], array_records: list[str], count: int, rounds: int, mode: str
) -> dict:
    """Seconds of each contender's timed rounds in this fresh process, in ``mode`` (round 0
    warms up: page cache, tf.data graphs, threads, Grain's workers; the order is reversed every
    other round), and the opening, first-batch and resume figures."""
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow(deterministic_ops=mode == "reproducible")
    opened = opening(files)
    firsts = first_batches(files, array_records, mode)
    resume = grain_resume(files)
    contenders = shootout_contenders(files, array_records, mode)
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):
        for name in names if round_ % 2 else names[::-1]:
            elapsed = timed(contenders[name], count)
            if round_:
                times[name].append(elapsed)
    while _WORKER_ITERATORS:  # Grain's docs: close an mp_prefetch iterator after use
        _WORKER_ITERATORS.pop().close()
    return {"seconds": times, "open_view": opened, "first_batch": firsts, "grain_resume": resume}


def summarize(runs: list[dict], count: int) -> dict:
    """The records/s of each contender over the processes of one mode: median, range, every
    round's seconds, each process's median; and the figures each process measured once."""
    names = list(runs[0]["seconds"])
    contenders = {}
    for name in names:
        seconds = [s for run in runs for s in run["seconds"][name]]
        per_second = [count / s for s in seconds]
        contenders[name] = {
            "records_per_second_median": statistics.median(per_second),
            "records_per_second_range": [min(per_second), max(per_second)],
            "seconds": seconds,
            "process_medians": [count / statistics.median(run["seconds"][name]) for run in runs],
        }
    return {
        "contenders": contenders,
        "open_view_seconds": [run["open_view"] for run in runs],
        "first_batch_seconds": {
            name: [run["first_batch"][name] for run in runs] for name in runs[0]["first_batch"]
        },
        "grain_resume_same_batches": [run["grain_resume"] for run in runs],
    }


def shootout_ratios(size: int, mode: str, run: dict) -> list[Comparison]:
    """The paired ratios of SHOOTOUT_RATIOS (goals in speed mode only), printed and recorded."""
    contenders = run["contenders"]
    best = max(
        (n for n in contenders if n.startswith("ArrayRecord __getitems__")),
        key=lambda n: contenders[n]["records_per_second_median"],
    )
    run["best_array_record"] = best
    results = []
    for candidate, baseline, goal, worst in SHOOTOUT_RATIOS:
        baseline = best if baseline == "best ArrayRecord" else baseline
        if mode != "speed":
            goal = worst = None
        result = Comparison(
            f"{size} B {mode}: {candidate} vs {baseline}",
            contenders[baseline]["seconds"],
            contenders[candidate]["seconds"],
            goal,
            worst,
        )
        print(result.line(), flush=True)
        RESULTS.append(result)
        results.append(result)
    return results


def shootout_size(
    size: int, rounds: int = SHOOTOUT_ROUNDS, processes: int = SHOOTOUT_PROCESSES
) -> dict:
    """The shootout on records of ``size`` bytes: for each mode ``processes`` fresh processes,
    the modes alternating; prints and returns records/s per contender and mode."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    folder = work_dir(f"shootout-{size}")
    payloads = sized_payloads(size, SHOOTOUT_RECORDS)
    files = write_sharded(folder / "sorted", payloads, SHOOTOUT_SHARDS, overwrite=True, index=True)
    array_records = write_array_record(files, folder)
    mean = sum(map(len, payloads)) / len(payloads)
    count = len(payloads)
    del payloads
    files = [str(f) for f in files]
    index_speed(f"{size} B, {count:,} records in {SHOOTOUT_SHARDS} shards", files)
    spawn = multiprocessing.get_context("spawn")  # a new interpreter each: nothing inherited
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for _ in range(processes):
        for mode in MODES:
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                job = pool.submit(time_contenders, files, array_records, count, rounds, mode)
                runs[mode].append(job.result())
    summary = {
        "records": count,
        "mean_record_bytes": mean,
        "shards": SHOOTOUT_SHARDS,
        "batch": BATCH,
        "rounds": rounds,
        "processes": processes,
        "page_cache": "warm: the files were just written and every contender read them in the "
        "warm-up round of each process",
        "array_record_options": ARRAY_RECORD_OPTIONS,
        "grain_workers": GRAIN_WORKERS,
        "modes": {},
    }
    for mode in MODES:
        run = summarize(runs[mode], count)
        summary["modes"][mode] = run
        print(
            f"-- {mode} mode: {count:,} label-sorted records of {mean:,.0f} bytes in "
            f"{SHOOTOUT_SHARDS} shards, batches of {BATCH}, warm page cache, {rounds} rounds in "
            f"each of {processes} processes: records/s, median (range)"
        )
        for name, rate in run["contenders"].items():
            low, high = rate["records_per_second_range"]
            print(
                f"{name:<62} {rate['records_per_second_median']:>11,.0f} ({low:,.0f}-{high:,.0f})"
            )
        opened = [o["first_in_process"] for o in run["open_view_seconds"]]
        again = [o["again_median"] for o in run["open_view_seconds"]]
        print(
            f"opening the view from .index files: first in a process {statistics.median(opened) * 1e3:.1f} ms, "
            f"again {statistics.median(again) * 1e3:.1f} ms (medians over processes)"
        )
        for name, seconds in run["first_batch_seconds"].items():
            print(
                f"first batch, from nothing: {name:<48} {statistics.median(seconds) * 1e3:8.1f} ms"
            )
        print(
            f"Grain get_state/set_state gives the same next batches: {run['grain_resume_same_batches'][0]}"
        )
        shootout_ratios(size, mode, run)
    return summary


def shootout(
    sizes=RECORD_SIZES, rounds: int = SHOOTOUT_ROUNDS, processes: int = SHOOTOUT_PROCESSES
) -> None:
    """Every way to read a label-sorted dataset for an epoch, side by side (issues 25, 35)."""
    EXTRA["shootout"] = {str(size): shootout_size(size, rounds, processes) for size in sizes}


if __name__ == "__main__":
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main()
