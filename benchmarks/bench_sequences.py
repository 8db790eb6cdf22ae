"""Windows of consecutive frames: what decoding after shuffling, and random access, cost.

Run: `python -m benchmarks sequences` (or `make bench`). The files are the
setting of notebook 09 at a larger scale: 4 synthetic days of 200 frames of
240x320 JPEG (quality 90) in one TFRecord file per day
(`helpers.sequences.write_day`), read as windows of 3 consecutive frames
(stride 1, shift 1), shuffled with a buffer of 256 windows, batched by 32.
Everything is read once before timing (warm page cache), so the ratios compare
CPU work, not the disk.

Prints throughput ratios (>1 = the candidate is faster), each measured
alternately against its baseline in this process:

* `frame_windows` (cut and shuffle encoded windows, decode after) against the
  question's order of work (decode each frame once, then cut and shuffle
  decoded windows). With overlapping windows the candidate decodes every frame
  once per window that holds it (3 times here): this is the CPU price of the
  memory it saves;
* the uniform reader of notebook 10 (section "Shuffle across and within days":
  a permutation of all windows, each window's frames read with
  `helpers.index.RecordView`) against `frame_windows`;

then the peak memory each of the three pipelines adds during its first pass, each
in a new process (`helpers.memory`).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os

import numpy as np

from benchmarks._common import compare, work_dir
from helpers.index import RecordView
from helpers.memory import track_peak_memory
from helpers.sequences import frame_windows, write_day
from helpers.shuffle import permutation

DAYS, FRAMES, HEIGHT, WIDTH, NUM_LABELS = 4, 200, 240, 320, 23
SIZE, STRIDE, SHIFT, BUFFER, BATCH, SEED = 3, 1, 1, 256, 32, 7


def make_files() -> list[str]:
    """Write (once) the day files: a smooth random scene per day, drifting, with noise."""
    import tensorflow as tf

    folder = work_dir(f"sequences_{DAYS}x{FRAMES}_{HEIGHT}x{WIDTH}")
    paths = [folder / f"day_{day}.tfrecord" for day in range(DAYS)]
    if all(path.exists() for path in paths):
        return [str(path) for path in paths]
    for day, path in enumerate(paths):
        rng = np.random.default_rng(day)
        coarse = rng.uniform(0, 255, size=(HEIGHT // 16 + 1, (WIDTH + FRAMES) // 16 + 1, 3))
        scene = np.kron(coarse, np.ones((16, 16, 1)))[:HEIGHT, : WIDTH + FRAMES]
        noise = rng.normal(0, 6, (FRAMES, HEIGHT, WIDTH, 3))
        frames = [np.clip(scene[:, i : i + WIDTH] + noise[i], 0, 255) for i in range(FRAMES)]
        jpegs = [tf.io.encode_jpeg(f.astype(np.uint8), quality=90).numpy() for f in frames]
        labels = rng.normal(size=(FRAMES, NUM_LABELS)).astype(np.float32)
        stamps = 1_500_000_000 + 86_400 * day + 8 * np.arange(FRAMES)
        write_day(path, jpegs, labels, stamps, overwrite=True)
    return [str(path) for path in paths]


def _spec():
    import tensorflow as tf

    return {
        "frame/encoded": tf.io.FixedLenFeature([], tf.string),
        "frame/timestamp": tf.io.FixedLenFeature([], tf.int64),
        "frame/labels": tf.io.FixedLenFeature([NUM_LABELS], tf.float32),
    }


def decode_then_shuffle(files: list[str]):
    """The question's order of work: decode every frame once, cut windows, shuffle decoded windows."""
    import tensorflow as tf

    spec = _spec()

    def parse_decode(serialized):
        frame = tf.io.parse_single_example(serialized, spec)
        return tf.io.decode_jpeg(frame["frame/encoded"], channels=3), frame["frame/labels"]

    def day_windows(path):
        frames = tf.data.TFRecordDataset(path).map(
            parse_decode, num_parallel_calls=tf.data.AUTOTUNE
        )
        windows = frames.window(SIZE, SHIFT, STRIDE, drop_remainder=True)
        return windows.flat_map(
            lambda f, labels: tf.data.Dataset.zip(f.batch(SIZE), labels.batch(SIZE))
        )

    names = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=SEED)
    windows = names.interleave(
        day_windows, cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE
    )
    return windows.shuffle(BUFFER, seed=SEED).map(lambda f, labels: (f, labels[-1]))


def uniform_windows(files: list[str]):
    """Notebook 10's uniform reader: a new permutation of all windows per pass, random access."""
    import tensorflow as tf

    spec = _spec()
    readers = [RecordView(path) for path in files]
    span = (SIZE - 1) * STRIDE + 1
    starts = np.array(
        [
            (day, k * SHIFT)
            for day, reader in enumerate(readers)
            for k in range((len(reader) - span) // SHIFT + 1)
        ]
    )
    epochs = itertools.count()

    def records():
        for day, first in starts[permutation(len(starts), SEED, epoch=next(epochs))]:
            yield readers[day][first + STRIDE * np.arange(SIZE)]

    def decode(records):
        frames = tf.io.parse_example(records, spec)
        jpegs = frames["frame/encoded"]
        pictures = tf.stack([tf.io.decode_jpeg(jpegs[i], channels=3) for i in range(SIZE)])
        return pictures, frames["frame/labels"][-1]

    signature = tf.TensorSpec([SIZE], tf.string)
    windows = tf.data.Dataset.from_generator(records, output_signature=signature)
    return windows.map(decode, num_parallel_calls=tf.data.AUTOTUNE)


def run(dataset) -> int:
    return sum(int(frames.shape[0]) for frames, _ in dataset.batch(BATCH).prefetch(2))


def pipelines(files: list[str]) -> dict:
    """The three pipelines, by name, each a function that builds a fresh dataset."""
    return {
        "decode then shuffle (baseline)": lambda: decode_then_shuffle(files),
        "frame_windows, decode after shuffling": lambda: frame_windows(
            files, SIZE, STRIDE, SHIFT, shuffle_buffer=BUFFER, seed=SEED, cycle_length=len(files)
        ),
        "uniform reader, random access": lambda: uniform_windows(files),
    }


def peak_in_fresh_process(name: str, frames: int, buffer: int) -> float:
    """MiB resident memory rises during one pass of pipeline `name`, in a new process.

    A new process, because TensorFlow's pooling allocator (``prepare_tensorflow``) keeps
    freed memory: a pipeline measured after another would reuse its memory and show
    almost nothing.
    """
    global FRAMES, BUFFER
    FRAMES, BUFFER = frames, buffer
    from helpers.notebook import prepare_tensorflow

    prepare_tensorflow()
    make = pipelines(make_files())[name]
    with track_peak_memory() as peak:
        run(make())
    return peak.peak_increase_mib


def main() -> None:
    files = make_files()
    made = pipelines(files)
    counts = {name: run(make()) for name, make in made.items()}  # warm-up, same windows each
    assert len(set(counts.values())) == 1, counts
    names = list(made)
    compare(
        "frame_windows vs decode-then-shuffle (3 decodes/frame)",
        lambda: run(made[names[0]]()),
        lambda: run(made[names[1]]()),
        repeats=5,
    )
    compare(
        "uniform reader vs frame_windows",
        lambda: run(made[names[1]]()),
        lambda: run(made[names[2]]()),
        repeats=5,
    )
    decoded = BUFFER * SIZE * HEIGHT * WIDTH * 3 / 2**20
    jpeg = BUFFER * SIZE * np.mean([os.path.getsize(f) for f in files]) / FRAMES / 2**20
    print(
        f"{counts[names[0]]} windows per pass; a buffer of {BUFFER} windows holds "
        f"{decoded:.0f} MiB decoded, about {jpeg:.0f} MiB as records"
    )
    print("  (each includes a first pass's one-off costs: compare the differences)")
    pool = multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1)  # a new process each
    try:
        for name in names:
            mib = pool.apply(peak_in_fresh_process, (name, FRAMES, BUFFER))
            print(f"  peak memory added in a new process, {name:<40} {mib:6.1f} MiB")
    finally:
        pool.close()
        pool.join()
