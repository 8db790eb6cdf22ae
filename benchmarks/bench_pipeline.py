"""Throughput of `helpers.pipeline.voc_batches`, step by step, against bare TFRecord reading.

Data: synthetic raw-schema shards at VOC's two typical sizes, 375x500 and
500x375 (random pixels; the mask is the red channel modulo 21), written once
to ``benchmarks/_work/pipeline-<records>/``. Sizes, not content, set the cost of the
raw schema, so random pixels are a fair stand-in.

Baselines. Issue 14's goal is stated against bare reading, ``for _ in
tf.data.TFRecordDataset(files): pass``: every pipeline built on the files does
at least that work. The benchmark first times the other ways TensorFlow reads
the same records (no read buffer, ``buffer_size=0``; four files at once,
``num_parallel_reads=4``; batched) against bare reading, and then compares
``voc_batches`` with the fastest of them too, the strongest baseline for the
same work.

Every candidate is iterated the same way over the same files (batch 32, crop
384x384, shuffle buffer 64), whole epochs of one dataset built once, alternately
with the baseline in this process (9 runs after a warm-up), and printed as
"candidate throughput / baseline throughput": the median of the pairwise ratios
and their range, in wall time and, below each, in CPU time (all threads; a
busy machine distorts it less, but it does not count the gain from a second
core). Python's garbage collector is paused during each timed run, as
``timeit`` does (``_common.collector_paused``): with TensorFlow imported, one
full collection takes about 150 ms here, longer than a whole epoch of bare
reading, and used to land in whichever run triggered it. The steps:

1. naive: ``map(parse_single_example)``, ``decode_raw``,
   ``tf.image.resize_with_crop_or_pad``, shuffle, batch; one thread.
2. + parallel: files interleaved and read in parallel, ``map`` with
   ``num_parallel_calls=AUTOTUNE`` (order kept), ``prefetch``.
3. + slice and pad: the crop as a slice and one ``tf.pad`` per tensor
   (``helpers.pipeline.crop_or_pad``) instead of ``resize_with_crop_or_pad``.
4. + shuffle first: the shuffle moved before decoding, so its buffer holds
   serialized records instead of decoded, cropped pairs. The same randomness;
   the memory of the buffer changes by the ratio of a record's size to a
   cropped pair's: here a raw 375x500 record (0.75 MB) is larger than a
   384x384 pair (0.59 MB), so this buffer holds more, not less; JPEG records
   (notebook 06 measures them) are ten times smaller than the pair.
5. voc_batches: step 4 plus format detection and record checks (naming file
   and record), records read with ``buffer_size=0`` (straight into the
   record's memory: one copy fewer), tf.data's autotuning off, and no
   ``Dataset.random`` zipped to the records unless it augments: what
   notebook 05 uses. A line below it says whether issue 14's goal is met:
   median at least 0.6x, no run below 0.5x.
6. voc_batches(augment=True): random crop windows and joint left-right flips
   (one ``tf.reverse`` per tensor inside a ``tf.cond``; a reversed slice
   ``x[:, ::-1]`` or flipping image and mask concatenated measured several
   times slower).

Then what was tried and did not go into ``voc_batches``: step 4 with the rows
of the crop cut out of ``image_raw`` by byte range (``tf.strings.substr``)
before ``decode_raw``, against step 4 itself (the same batches); and steps 5
and 6 with tf.data's autotuning left on. With autotuning on, some epochs took
up to twice as long with little more CPU time (the end of the epoch waited),
in some runs and not in others, so 40 single epochs of each are timed one
after another too.

Then the length of an epoch. Every epoch starts over: ``iter(dataset)``
instantiates the dataset's functions again, and TensorFlow runs its graph
optimizer (grappler) on each (a profile of ``iter`` put most of its time in
``OptimizeFunctionGraph``); then the shuffle buffer is filled again before the
first record leaves it, and the first batch is decoded while the next records
are read. Bare reading has none of this. So an epoch's start is timed apart
(``iter``, the first batch, each later batch), and ``voc_batches`` is compared
with bare reading again on a real epoch: 1,464 records, the size of VOC2012's
segmentation ``train`` split, written the same way. The 256 records above are a
short epoch, where the start weighs more than five times as much.

Then the steady state, which issue 45 asks for: the middle half of the real epoch
(``middle_half``: from the batch that completes its first quarter to the one that completes
its third), against bare reading's same records. Leaving out the start is not enough: a
pipeline whose first batch took long has read ahead meanwhile, so timing from its first batch
to the end would credit it with work done before the clock started. In the middle of an
epoch every buffer is full at both marks.

Tried during issue 14 and measured too slow to keep (not rerun here): every
output row as a string cut from ``image_raw`` (``tf.strings.substr`` with a
vector of row offsets, padding joined with ``tf.strings.join``), decoded once
per batch with ``decode_raw``: 1.5 times the CPU time of step 4 per element,
2.5 times with the substrings cut after batching (``parse_example`` on the
batch, broadcast offsets); and the default read buffer instead of
``buffer_size=0``: no clear difference.

Then the peak memory of one epoch of each step (resident memory above the level
before, `helpers.memory.track_peak_memory`), each in a fresh process, and the
CPU allocator: ``voc_batches`` against bare reading again, each in a fresh
process, once with TensorFlow's default allocator and once with its pooling
allocator (``TF_CPU_ALLOCATOR_USE_BFC=true``, which
``helpers.notebook.prepare_tensorflow`` sets), with the minor page faults of
one epoch. The default allocator returns each batch's buffer to the system
when it is freed, so every epoch faults it in again, page by page. The
serialized records in the shuffle buffer are not tensors but strings, which
TensorFlow allocates with the C library's ``malloc`` whatever the allocator:
glibc returns the freed buffer to the system at the end of each epoch and
faults it in again at the next. The last fresh process turns that off with
``mallopt`` (``M_MMAP_THRESHOLD`` 32 MiB, ``M_TRIM_THRESHOLD`` 1 GiB) before
TensorFlow starts. That is a setting of the whole process (also
``GLIBC_TUNABLES=glibc.malloc.trim_threshold=...``), so ``voc_batches`` does
not make it; it is measured here so that a user can choose it.

The first and last lines give the load: the load average, and how much CPU
other processes took while this ran. On a machine shared with other jobs the
wall-time ratios move by 0.1 or more from run to run (a second core is not
always free), and a run lasts a few minutes: run it more than once.

Run: ``python -m benchmarks pipeline`` (or ``make bench`` for all).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks._common import (
    EXTRA,
    RESULTS,
    Comparison,
    collector_paused,
    compare,
    wall_and_cpu,
    work_dir,
)

RECORDS = 256
SHARDS = 4
BATCH = 32
CROP = (384, 384)
BUFFER = 64
SEED = 0
SIZES = ((375, 500), (500, 375))  # (height, width): VOC's landscape and portrait photos
GOAL, FLOOR = 0.6, 0.5  # issue 14: median ratio at least 0.6x, no run below 0.5x
REPEATS = 9
VOC_TRAIN = 1464  # records in VOC2012's segmentation train split: one real epoch


def write_shards(records: int = RECORDS, shards: int = SHARDS) -> list[Path]:
    """Write (once) the synthetic raw-schema shards and return their paths."""
    import tensorflow as tf

    from helpers.records import verify, write_records

    folder = work_dir(f"pipeline-{records}")
    paths = [folder / f"voc-synthetic-{i:05d}-of-{shards:05d}.tfrecord" for i in range(shards)]
    per_shard = records // shards
    if all(p.exists() for p in paths) and all(verify(p) == per_shard for p in paths):
        return paths
    rng = np.random.default_rng(SEED)
    for shard, path in enumerate(paths):

        def payloads(shard=shard):
            for i in range(per_shard):
                height, width = SIZES[(shard + i) % 2]
                image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
                values = {
                    "height": [height],
                    "width": [width],
                    "image_raw": [image.tobytes()],
                    "mask_raw": [(image[..., 0] % 21).tobytes()],
                    "filename": [f"synthetic_{shard}_{i}.jpg".encode()],
                }
                feature = {
                    key: tf.train.Feature(int64_list=tf.train.Int64List(value=value))
                    if isinstance(value[0], int)
                    else tf.train.Feature(bytes_list=tf.train.BytesList(value=value))
                    for key, value in values.items()
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                yield example.SerializeToString(deterministic=True)

        write_records(path, payloads(), overwrite=True)
    return paths


# ---------------------------------------------------------------------------
# The steps
# ---------------------------------------------------------------------------


def _decode(serialized):
    """Naive parse + decode of one raw-schema record (no checks)."""
    import tensorflow as tf

    from helpers.voc_records import feature_spec

    features = tf.io.parse_single_example(serialized, feature_spec("raw"))
    height, width = features["height"], features["width"]
    image = tf.reshape(
        tf.io.decode_raw(features["image_raw"], tf.uint8), tf.stack([height, width, 3])
    )
    mask = tf.reshape(
        tf.io.decode_raw(features["mask_raw"], tf.uint8), tf.stack([height, width, 1])
    )
    return image, mask


def _resize_crop_pad(serialized):
    import tensorflow as tf

    image, mask = _decode(serialized)
    return (
        tf.image.resize_with_crop_or_pad(image, *CROP),
        tf.image.resize_with_crop_or_pad(mask, *CROP),
    )  # pads masks with 0 (background): wrong


def _slice_pad(serialized):
    from helpers.pipeline import crop_or_pad

    return crop_or_pad(*_decode(serialized), CROP)


def _parallel_records(files: list[Path]):
    import tensorflow as tf

    names = tf.data.Dataset.from_tensor_slices([str(p) for p in files]).shuffle(
        len(files), seed=SEED
    )
    return names.interleave(
        tf.data.TFRecordDataset,
        cycle_length=len(files),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def bare(files: list[Path]):
    import tensorflow as tf

    return tf.data.TFRecordDataset([str(p) for p in files])


def naive(files: list[Path]):
    import tensorflow as tf

    records = tf.data.TFRecordDataset([str(p) for p in files])
    return records.map(_resize_crop_pad).shuffle(BUFFER, seed=SEED).batch(BATCH)


def parallel(files: list[Path]):
    import tensorflow as tf

    mapped = _parallel_records(files).map(
        _resize_crop_pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return mapped.shuffle(BUFFER, seed=SEED).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slice_pad(files: list[Path]):
    import tensorflow as tf

    mapped = _parallel_records(files).map(
        _slice_pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return mapped.shuffle(BUFFER, seed=SEED).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def shuffle_first(files: list[Path]):
    import tensorflow as tf

    records = _parallel_records(files).shuffle(BUFFER, seed=SEED)
    mapped = records.map(_slice_pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return mapped.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def _substr_slice_pad(serialized):
    """Like _slice_pad, but the rows of the centred window are cut out of the raw bytes first."""
    import tensorflow as tf

    from helpers.pipeline import crop_or_pad
    from helpers.voc_records import feature_spec

    features = tf.io.parse_single_example(serialized, feature_spec("raw"))
    height, width = (tf.cast(features[key], tf.int32) for key in ("height", "width"))
    kept = tf.minimum(height, CROP[0])
    top = (height - kept) // 2  # the rows crop_or_pad would keep, centred
    image, mask = (
        tf.io.decode_raw(
            tf.strings.substr(features[key], top * width * n, kept * width * n), tf.uint8
        )
        for key, n in (("image_raw", 3), ("mask_raw", 1))
    )
    image, mask = tf.reshape(image, [kept, width, 3]), tf.reshape(mask, [kept, width, 1])
    return crop_or_pad(image, mask, CROP)  # no rows left to crop: the same window


def substr_first(files: list[Path]):
    import tensorflow as tf

    records = _parallel_records(files).shuffle(BUFFER, seed=SEED)
    mapped = records.map(_substr_slice_pad, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return mapped.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def final(files: list[Path]):
    from helpers.pipeline import voc_batches

    return voc_batches(files, BATCH, crop=CROP, shuffle_buffer=BUFFER, seed=SEED)


def autotuned(files: list[Path], augment: bool = False):
    """voc_batches with tf.data's autotuning turned back on."""
    import tensorflow as tf

    from helpers.pipeline import voc_batches

    options = tf.data.Options()
    options.autotune.enabled = True
    dataset = voc_batches(
        files, BATCH, crop=CROP, shuffle_buffer=BUFFER, seed=SEED, augment=augment
    )
    return dataset.with_options(options)


def augmented(files: list[Path]):
    from helpers.pipeline import voc_batches

    return voc_batches(files, BATCH, crop=CROP, shuffle_buffer=BUFFER, seed=SEED, augment=True)


STEPS: dict[str, tuple[str, Callable]] = {
    "naive": ("1 naive: map(parse_single_example) + resize_with_crop_or_pad", naive),
    "parallel": ("2 + parallel interleave/map, prefetch", parallel),
    "slice_pad": ("3 + crop as a slice, pad with one tf.pad", slice_pad),
    "shuffle_first": ("4 + shuffle serialized records, then decode", shuffle_first),
    "voc_batches": ("5 voc_batches: 4 + checks, buffer_size=0, autotune off", final),
    "augment": ("6 voc_batches(augment=True): random windows, joint flips", augmented),
}


def readers(files: list[Path]) -> dict:
    """Other ways TensorFlow reads the same records, each a dataset built once."""
    import tensorflow as tf

    names = [str(p) for p in files]
    records = tf.data.TFRecordDataset
    return {
        "TFRecordDataset(files, buffer_size=0)": records(names, buffer_size=0),
        "TFRecordDataset(files, num_parallel_reads=4)": records(names, num_parallel_reads=SHARDS),
        "TFRecordDataset(files).batch(32)": records(names).batch(BATCH),
        "TFRecordDataset(files, num_parallel_reads=4).batch(32)": records(
            names, num_parallel_reads=SHARDS
        ).batch(BATCH),
    }


def strongest_reader(files: list[Path], read_bare: Callable[[], object]) -> tuple[str, Callable]:
    """Compare every way in `readers` with bare reading (printed); return the fastest way's
    label and a function that reads one epoch with it (bare reading if none is faster)."""
    strongest, best = ("bare reading", read_bare), 1.0
    for label, dataset in readers(files).items():
        run = lambda dataset=dataset: iterate(dataset)  # noqa: E731
        ratio = compare(label, read_bare, run, repeats=REPEATS).speed_ratio
        strongest, best = ((label, run), ratio) if ratio > best else (strongest, best)
    return strongest


def iterate(dataset) -> int:
    """Iterate ``dataset`` once, as a training loop would; return the number of elements."""
    count = 0
    for _ in dataset:
        count += 1
    return count


def compare_both(
    name: str, baseline: Callable[[], object], candidate: Callable[[], object], goal: bool = False
) -> Comparison:
    """`_common.compare`, with the CPU time of all threads measured in the same runs: prints the
    wall-time line, then the CPU-time line; with ``goal``, whether issue 14's goal was met."""
    baseline(), candidate()
    wall: tuple[list, list] = ([], [])
    cpu: tuple[list, list] = ([], [])
    for _ in range(REPEATS):
        for function, w, c in ((baseline, wall[0], cpu[0]), (candidate, wall[1], cpu[1])):
            wall_seconds, cpu_seconds = wall_and_cpu(function)
            w.append(wall_seconds)
            c.append(cpu_seconds)
    return record(name, wall, cpu, goal)


def middle_half(dataset, records: int, per_element: int) -> tuple[float, float]:
    """Wall and CPU seconds of the middle half of one epoch of ``records`` records: from the
    element that completes the first quarter of them to the one that completes the third
    (``per_element`` records each). The epoch's start (functions optimized, buffers filled) and
    its end are left out, and the buffers are full at both marks, so a pipeline that read ahead
    during its start gains nothing from it: the steady state."""
    quarter = records // 4 // BATCH * BATCH  # a mark on a batch boundary, the same for both
    marks = (quarter // per_element, 3 * quarter // per_element)
    with collector_paused():
        iterator = iter(dataset)
        for _ in range(marks[0]):
            next(iterator)
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(marks[1] - marks[0]):
            next(iterator)
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        for _ in iterator:  # the rest of the epoch, untimed: the iterator ends as a loop's does
            pass
    return wall, cpu


def compare_steady(name: str, baseline, candidate, records: int, base_per_element: int) -> None:
    """`compare_both` on the middle half of an epoch (:func:`middle_half`): ``baseline``'s
    elements hold ``base_per_element`` records, ``candidate``'s (voc_batches) a batch each."""
    wall: tuple[list, list] = ([], [])
    cpu: tuple[list, list] = ([], [])
    runs = ((baseline, base_per_element, 0), (candidate, BATCH, 1))
    for dataset, per_element, _ in runs:
        middle_half(dataset, records, per_element)  # warm-up
    for _ in range(REPEATS):
        for dataset, per_element, which in runs:
            wall_seconds, cpu_seconds = middle_half(dataset, records, per_element)
            wall[which].append(wall_seconds)
            cpu[which].append(cpu_seconds)
    record(name, wall, cpu, goal=True)


def record(name: str, wall: tuple[list, list], cpu: tuple[list, list], goal: bool) -> Comparison:
    """Print and keep (for the JSON) a comparison in wall and CPU time; with ``goal``, whether
    issue 14's goal was met: median at least GOAL, every run at least FLOOR."""
    result = Comparison(name, *wall)
    print(result.line(), flush=True)
    print(Comparison("    the same runs in CPU time", *cpu).line(), flush=True)
    RESULTS.extend([result, Comparison(f"{name}, CPU time", *cpu)])  # JSON, python -m benchmarks
    if goal:
        result.goal = GOAL  # both kept in the JSON, whose goal_met is the verdict
        result.worst_goal = FLOOR
        median, lowest = result.speed_ratio, min(result.ratios)
        print(
            f"    goal: median >= {GOAL}x and every run >= {FLOOR}x: "
            f"{'met' if result.goal_met else 'NOT MET'} "
            f"(median {median:.2f}x, slowest run {lowest:.2f}x)",
            flush=True,
        )
    return result


def single_epochs(dataset, epochs: int = 40) -> str:
    """Wall time of ``epochs`` single epochs: median, slowest, and the epochs slower than 1.5x the
    median, with the median CPU time of those and of the others (waiting shows as no more CPU)."""
    iterate(dataset)
    times = []
    for _ in range(epochs):
        wall_seconds, cpu_seconds = wall_and_cpu(lambda: iterate(dataset))
        times.append((1e3 * wall_seconds, 1e3 * cpu_seconds))
    median = statistics.median(wall for wall, _ in times)
    slow = [cpu for wall, cpu in times if wall > 1.5 * median]
    normal = [cpu for wall, cpu in times if wall <= 1.5 * median]
    line = f"median {median:4.0f} ms, slowest {max(times)[0]:4.0f} ms; {len(slow):2} of {epochs} slower than 1.5x"
    if slow:
        line += f" (CPU {statistics.median(slow):.0f} ms, the others {statistics.median(normal):.0f} ms)"
    return line


def epoch_start(dataset, repeats: int = REPEATS) -> str:
    """Median ms of ``iter(dataset)``, of its first batch, and of each later batch."""
    iterate(dataset)
    parts: tuple[list, list, list] = ([], [], [])
    for _ in range(repeats):
        with collector_paused():
            start = time.perf_counter()
            iterator = iter(dataset)
            made = time.perf_counter()
            next(iterator)
            first = time.perf_counter()
            later = iterate(iterator)
            end = time.perf_counter()
        parts[0].append(made - start)
        parts[1].append(first - made)
        parts[2].append((end - first) / max(later, 1))
        del iterator  # as a for loop drops it; a live one made the next iter() slower
    iter_ms, first_ms, later_ms = (1e3 * statistics.median(p) for p in parts)
    return f"iter {iter_ms:5.1f} ms, first batch {first_ms:5.1f} ms, each later batch {later_ms:5.1f} ms"


class OtherLoad:
    """CPU time that other processes used while a block ran, in cores (Linux /proc/stat)."""

    @staticmethod
    def _busy_seconds() -> float:
        with open("/proc/stat") as stat:
            ticks = [int(n) for n in stat.readline().split()[1:8]]
        return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait

    def __enter__(self):
        self.start = (self._busy_seconds(), time.process_time(), time.perf_counter())
        return self

    def __exit__(self, *exc_info) -> None:
        busy, own, wall = self.start
        own = time.process_time() - own  # this process (children of pools excluded)
        self.cores = max(0.0, self._busy_seconds() - busy - own) / (time.perf_counter() - wall)


def peak_memory_mib(step: str) -> float:
    """Peak resident memory (MiB above the start) of one epoch of ``step``; run it in a fresh process."""
    from helpers.memory import track_peak_memory
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    files = write_shards()
    iterate(bare(files).take(8))  # start TensorFlow's runtime before measuring
    dataset = STEPS[step][1](files)
    with track_peak_memory() as peak:
        iterate(dataset)
    return peak.peak_increase_mib


def minor_page_faults(function: Callable[[], object]) -> int:
    """Minor page faults of this process while ``function`` runs (pages the system had to map in)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    function()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def allocator_run(pooled: bool, keep_malloc_pages: bool = False) -> int:
    """In a fresh process: compare voc_batches with bare reading (printed), return the median
    minor page faults of one epoch of voc_batches. ``keep_malloc_pages``: glibc's malloc keeps
    freed memory instead of returning it to the system (set before TensorFlow starts)."""
    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true" if pooled else "false"  # read at TF start
    label = f"5 voc_batches, {'pooling' if pooled else 'default'} CPU allocator"
    if keep_malloc_pages:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
        if not (
            libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)
        ):
            raise RuntimeError("mallopt refused the settings")
        label += ", malloc keeps freed pages"
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    files = write_shards()
    baseline, candidate = bare(files), final(files)
    compare_both(label, lambda: iterate(baseline), lambda: iterate(candidate), goal=True)
    return int(statistics.median(minor_page_faults(lambda: iterate(candidate)) for _ in range(5)))


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def tensorflow_mode() -> str:
    """How TensorFlow ran: ``python -m benchmarks`` prepares it as the notebooks do."""
    from tensorflow.python.framework import config  # the public API has no getter

    if config.is_op_determinism_enabled():
        return "reproducible (op determinism on, as in the notebooks)"
    return "speed (no op determinism)"


def main() -> None:
    EXTRA["pipeline"] = {"tensorflow_mode": tensorflow_mode(), "page_cache": "warm"}
    files = write_shards()
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    print(
        f"{RECORDS} raw-schema records (375x500 and 500x375) in {SHARDS} shards, {megabytes:.0f} MB; "
        f"batch {BATCH}, crop {CROP[0]}x{CROP[1]}, shuffle buffer {BUFFER}; {load_line()}"
    )
    baseline = bare(files)
    read_bare = lambda: iterate(baseline)  # noqa: E731
    with OtherLoad() as load:
        print("Other ways to read the same records, against bare reading:")
        strongest = strongest_reader(files, read_bare)
        print("The steps, against bare reading (wall time; below, the CPU time of the same runs):")
        for step, (label, build) in STEPS.items():
            dataset = build(files)
            run = lambda dataset=dataset: iterate(dataset)  # noqa: E731
            compare_both(label, read_bare, run, goal=step == "voc_batches")
        print(f"voc_batches against the strongest baseline, {strongest[0]}:")
        voc = final(files)
        label = f"5 voc_batches, {RECORDS} records per epoch, against {strongest[0]}"
        compare_both(label, strongest[1], lambda: iterate(voc), goal=True)
        print("Tried and left out (the same batches: the pipelines agree on one epoch):")
        step_4, cut_rows = shuffle_first(files), substr_first(files)
        same = all(
            np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
            for a, b in zip(step_4, cut_rows, strict=True)
        )
        print(f"    step 4 and step 4 with rows cut by byte range give the same batches: {same}")
        label = "4 + rows of the crop cut by byte range, against 4"
        compare_both(label, lambda: iterate(step_4), lambda: iterate(cut_rows))
        on, augment = autotuned(files), augmented(files)
        augment_on = autotuned(files, augment=True)
        compare_both(
            "5 with tf.data autotuning on, against 5", lambda: iterate(voc), lambda: iterate(on)
        )
        compare_both(
            "6 with tf.data autotuning on, against 6",
            lambda: iterate(augment),
            lambda: iterate(augment_on),
        )
        print("Single epochs, one after another:")
        for label, dataset in (
            ("bare reading", baseline),
            ("5 voc_batches", voc),
            ("5 with autotuning on", on),
            ("6 voc_batches(augment=True)", augment),
            ("6 with autotuning on", augment_on),
        ):
            print(f"    {label:28} {single_epochs(dataset)}", flush=True)
        print(f"A real epoch: {VOC_TRAIN:,} records, the size of VOC2012's train split:")
        long_files = write_shards(VOC_TRAIN)
        long_bare, long_voc = bare(long_files), final(long_files)
        read_long = lambda: iterate(long_bare)  # noqa: E731
        label = f"5 voc_batches, {VOC_TRAIN:,} records per epoch, against bare reading"
        compare_both(label, read_long, lambda: iterate(long_voc), goal=True)
        print(f"Other ways to read the {VOC_TRAIN:,} records, against bare reading:")
        fastest = strongest_reader(long_files, read_long)
        if fastest[0] != "bare reading":
            label = f"5 voc_batches, {VOC_TRAIN:,} records per epoch, against {fastest[0]}"
            compare_both(label, fastest[1], lambda: iterate(long_voc), goal=True)
        print(f"The steady state: the middle half of an epoch of {VOC_TRAIN:,} records:")
        label = f"5 voc_batches, the middle half of {VOC_TRAIN:,} records, against bare reading"
        compare_steady(label, long_bare, long_voc, VOC_TRAIN, 1)
        print("The start of an epoch (median of 9 epochs):")
        for label, dataset in (
            (f"bare reading, {RECORDS} records", baseline),
            (f"5 voc_batches, {RECORDS} records", voc),
            (f"bare reading, {VOC_TRAIN:,} records", long_bare),
            (f"5 voc_batches, {VOC_TRAIN:,} records", long_voc),
        ):
            print(f"    {label:32} {epoch_start(dataset)}", flush=True)
    print(f"Other processes used {load.cores:.2f} cores on average during the comparisons above.")
    context = multiprocessing.get_context("spawn")
    for step in STEPS:
        with context.Pool(1) as pool:
            mib = pool.apply(peak_memory_mib, (step,))
        print(f"peak memory, one epoch of {step:<13} {mib:7.1f} MiB above the start")
    print("The CPU allocator, each in a fresh process (TF_CPU_ALLOCATOR_USE_BFC):")
    for pooled, keep in ((False, False), (True, False), (True, True)):
        with context.Pool(1) as pool:
            faults = pool.apply(allocator_run, (pooled, keep))
        print(f"  minor page faults per epoch of voc_batches: {faults:,}")
    print(f"At the end: {load_line()}.")


if __name__ == "__main__":
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main()
