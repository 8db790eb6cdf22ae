"""Throughput of `helpers.pipeline.voc_batches`, step by step, against bare TFRecord reading.

Data: synthetic raw-schema shards at VOC's two typical sizes, 375x500 and
500x375 (random pixels; the mask is the red channel modulo 21), written once
to ``benchmarks/_work/pipeline/``. Sizes, not content, set the cost of the
raw schema, so random pixels are a fair stand-in.

Baseline: ``for _ in tf.data.TFRecordDataset(files): pass``, the ceiling for
any pipeline built on it. Every candidate is iterated the same way over the
same files (batch 32, crop 384x384, shuffle buffer 64), alternately with the
baseline in this process (`benchmarks._common.compare`), and printed as
"candidate throughput / baseline throughput". The steps:

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
   (notebook 03 measures them) are ten times smaller than the pair.
5. voc_batches: step 4 plus format detection and record checks (naming file
   and record): what notebook 03 uses.
6. voc_batches(augment=True): random crop windows and joint left-right flips
   (one ``tf.reverse`` per tensor inside a ``tf.cond``; a reversed slice
   ``x[:, ::-1]`` or flipping image and mask concatenated measured several
   times slower).

Then the CPU time of each step against bare reading (the work done by all
threads, which a busy machine distorts less than wall time, but which does not
count the gain from several cores), and the peak memory of one epoch of each
step (resident memory above the level before, `helpers.memory.track_peak_memory`),
each in a fresh process.

On a machine shared with other jobs the wall-time ratios move by 0.1 or more
from run to run, because the parallel steps only gain when a second core is
free; the CPU-time ratios are steadier. Run it a few times.

Last, the CPU allocator: ``voc_batches`` against bare reading again, each in a
fresh process, once with TensorFlow's default allocator and once with its
pooling allocator (``TF_CPU_ALLOCATOR_USE_BFC=true``, which
``helpers.notebook.prepare_tensorflow`` sets), with the minor page faults of
one epoch. The default allocator returns each batch's buffer to the system
when it is freed, so every epoch faults it in again, page by page.

Run: ``python -m benchmarks pipeline`` (or ``make bench`` for all).
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks._common import compare, work_dir

RECORDS = 256
SHARDS = 4
BATCH = 32
CROP = (384, 384)
BUFFER = 64
SEED = 0
SIZES = ((375, 500), (500, 375))  # (height, width): VOC's landscape and portrait photos
GOAL = 0.5  # voc_batches should keep at least half the speed of bare reading


def write_shards(records: int = RECORDS, shards: int = SHARDS) -> list[Path]:
    """Write (once) the synthetic raw-schema shards and return their paths."""
    import tensorflow as tf

    from helpers.records import verify, write_records

    folder = work_dir("pipeline")
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


def final(files: list[Path]):
    from helpers.pipeline import voc_batches

    return voc_batches(files, BATCH, crop=CROP, shuffle_buffer=BUFFER, seed=SEED)


def augmented(files: list[Path]):
    from helpers.pipeline import voc_batches

    return voc_batches(files, BATCH, crop=CROP, shuffle_buffer=BUFFER, seed=SEED, augment=True)


STEPS: dict[str, tuple[str, Callable]] = {
    "naive": ("1 naive: map(parse_single_example) + resize_with_crop_or_pad", naive),
    "parallel": ("2 + parallel interleave/map, prefetch", parallel),
    "slice_pad": ("3 + crop as a slice, pad with one tf.pad", slice_pad),
    "shuffle_first": ("4 + shuffle serialized records, then decode", shuffle_first),
    "voc_batches": ("5 voc_batches: 4 + format detection, record checks", final),
    "augment": ("6 voc_batches(augment=True): random windows, joint flips", augmented),
}


def iterate(dataset) -> int:
    """Iterate ``dataset`` once, as a training loop would; return the number of elements."""
    count = 0
    for _ in dataset:
        count += 1
    return count


def cpu_seconds(function: Callable[[], object]) -> float:
    """CPU time of all the process's threads while ``function`` runs."""
    start = time.process_time()
    function()
    return time.process_time() - start


def compare_cpu(
    name: str, baseline: Callable[[], object], candidate: Callable[[], object], repeats: int = 7
) -> float:
    """Like `compare`, but with CPU time (all threads) instead of wall time: the work done, not the
    waiting. Less sensitive to a busy machine; it ignores the gain from running on several cores."""
    baseline(), candidate()
    base, cand = [], []
    for _ in range(repeats):
        base.append(cpu_seconds(baseline))
        cand.append(cpu_seconds(candidate))
    ratio = statistics.median(base) / statistics.median(cand)
    print(
        f"{name:<58} {ratio:6.2f}x   (baseline {statistics.median(base) * 1e3:8.1f} ms, "
        f"candidate {statistics.median(cand) * 1e3:8.1f} ms of CPU)",
        flush=True,
    )
    return ratio


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


def allocator_run(pooled: bool) -> int:
    """In a fresh process: compare voc_batches with bare reading (printed), return the median
    minor page faults of one epoch of voc_batches."""
    import os

    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = (
        "true" if pooled else "false"
    )  # read when TensorFlow starts
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    files = write_shards()
    baseline, candidate = bare(files), final(files)
    label = f"5 voc_batches, {'pooling' if pooled else 'default'} CPU allocator"
    compare(label, lambda: iterate(baseline), lambda: iterate(candidate), repeats=9, goal=GOAL)
    return int(statistics.median(minor_page_faults(lambda: iterate(candidate)) for _ in range(5)))


def main() -> None:
    files = write_shards()
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    print(
        f"{RECORDS} raw-schema records (375x500 and 500x375) in {SHARDS} shards, {megabytes:.0f} MB; "
        f"batch {BATCH}, crop {CROP[0]}x{CROP[1]}, shuffle buffer {BUFFER}"
    )
    baseline = bare(files)
    for step, (label, build) in STEPS.items():
        dataset = build(files)
        compare(
            f"{label}",
            lambda: iterate(baseline),
            lambda dataset=dataset: iterate(dataset),
            repeats=9,
            goal=GOAL if step == "voc_batches" else None,
        )
    print("CPU time instead of wall time (the work done by all threads; where the wall-time ratio")
    print("above is higher, the step gained from running on several cores):")
    for label, build in STEPS.values():
        dataset = build(files)
        compare_cpu(f"{label}", lambda: iterate(baseline), lambda dataset=dataset: iterate(dataset))
    context = multiprocessing.get_context("spawn")
    for step in STEPS:
        with context.Pool(1) as pool:
            mib = pool.apply(peak_memory_mib, (step,))
        print(f"peak memory, one epoch of {step:<13} {mib:7.1f} MiB above the start")
    print("The CPU allocator, each in a fresh process (TF_CPU_ALLOCATOR_USE_BFC):")
    for pooled in (False, True):
        with context.Pool(1) as pool:
            faults = pool.apply(allocator_run, (pooled,))
        print(f"  minor page faults per epoch of voc_batches: {faults:,}")


if __name__ == "__main__":
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    main()
