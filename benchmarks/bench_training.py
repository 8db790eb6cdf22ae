"""Training fed by a tf.data pipeline vs by a foreground Python generator (notebook 13).

Run: `python -m benchmarks training` (or `make bench`). The data is the setting of
notebook 13: the 200 real 25x25 images of `skimage.data.lfw_subset()`, PNG-encoded
in tf.train.Example records, 160 of them in 4 training shards. The files are read
once before timing, so the page cache is warm.

Prints ratios (>1 = the candidate is faster) of
* reading 10 epochs of batches: tf.data (parallel parse and decode, prefetch)
  against a Python generator (iter_records, Example.FromString, Pillow);
* training 10 epochs of a small CNN fed by each (the whole loop: waiting plus computing);
and, for each feed, the share of training time spent waiting for data and how long a
typical step waits compared with how long it computes (median over 5 runs, the first
step of each run left out). The timing loop is notebook 13's, section "Time the two
halves of a training step": the clock is read around `next(iterator)` and around the
train step, whose loss is turned into a NumPy value before the clock stops.
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from PIL import Image
from skimage import data

from benchmarks._common import compare, work_dir
from helpers.records import iter_records, write_sharded

SEED, BATCH, EPOCHS, RUNS = 7, 32, 10, 5
KEEPS_UP_GOAL = 0.25  # a typical step should wait less than a quarter as long as it computes


def _example(image: np.ndarray, label: int) -> bytes:
    png = tf.io.encode_png(image[:, :, np.newaxis]).numpy()
    feature = {
        "image/png": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString(deterministic=True)


def _write(folder: Path) -> list[Path]:
    images = np.round(data.lfw_subset() * 255).astype(np.uint8)
    labels = np.repeat([1, 0], 100)
    ids = np.random.default_rng(SEED).permutation(len(images))[:160]
    payloads = [_example(images[i], int(labels[i])) for i in ids]
    return write_sharded(folder / "train", payloads, num_shards=4, overwrite=True)


def _parse(record):
    spec = {
        "image/png": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    features = tf.io.parse_single_example(record, spec)
    image = tf.ensure_shape(tf.io.decode_png(features["image/png"], channels=1), [25, 25, 1])
    return tf.image.convert_image_dtype(image, tf.float32), features["label"]


def _flip(pair, seed):
    image, label = pair
    return tf.image.stateless_random_flip_left_right(image, seed), label


def _pipeline(files: list[Path], epochs: int) -> tf.data.Dataset:
    dataset = tf.data.TFRecordDataset([str(f) for f in files], num_parallel_reads=len(files))
    dataset = dataset.shuffle(160, seed=SEED).map(_parse, num_parallel_calls=tf.data.AUTOTUNE)
    seeds = tf.data.Dataset.random(seed=SEED, rerandomize_each_iteration=True).batch(2)
    dataset = tf.data.Dataset.zip(dataset, seeds).map(_flip, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.batch(BATCH).prefetch(tf.data.AUTOTUNE).repeat(epochs)


def _python_batches(files: list[Path], epochs: int):
    for _ in range(epochs):
        pictures, targets = [], []
        for path in files:
            for record in iter_records(path):
                feature = tf.train.Example.FromString(record).features.feature
                png = io.BytesIO(feature["image/png"].bytes_list.value[0])
                pictures.append(np.asarray(Image.open(png), dtype=np.float32)[:, :, None] / 255)
                targets.append(feature["label"].int64_list.value[0])
                if len(pictures) == BATCH:
                    yield tf.constant(np.stack(pictures)), tf.constant(targets, dtype=tf.int64)
                    pictures, targets = [], []


def _train_step():
    keras.utils.set_random_seed(SEED)
    model = keras.Sequential(
        [
            keras.Input(shape=(25, 25, 1)),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    optimizer, loss_fn = keras.optimizers.Adam(3e-3), keras.losses.BinaryCrossentropy()

    @tf.function
    def step(batch):
        images, labels = batch
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return step


def _time_steps(batches, step) -> tuple[np.ndarray, np.ndarray]:
    """Seconds each step waited for its batch and computed, for every batch."""
    iterator = iter(batches)
    waits, computes = [], []
    while True:
        start = time.perf_counter()
        try:
            batch = next(iterator)
        except StopIteration:
            break
        fetched = time.perf_counter()
        step(batch).numpy()  # the loss as a NumPy value: the step is really done
        done = time.perf_counter()
        waits.append(fetched - start)
        computes.append(done - fetched)
    return np.array(waits), np.array(computes)


def main() -> None:
    files = _write(work_dir("training"))
    step = _train_step()
    compare(
        f"read {EPOCHS} epochs: tf.data vs Python generator",
        lambda: sum(1 for _ in _python_batches(files, EPOCHS)),
        lambda: sum(1 for _ in _pipeline(files, EPOCHS)),
    )
    compare(
        f"train {EPOCHS} epochs: fed by tf.data vs by Python generator",
        lambda: _time_steps(_python_batches(files, EPOCHS), step),
        lambda: _time_steps(_pipeline(files, EPOCHS), step),
    )
    feeds = [("tf.data pipeline", _pipeline), ("Python generator", _python_batches)]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in feeds}
    for _ in range(RUNS):  # alternate the two feeds, so both see the same machine load
        for name, feed in feeds:
            waits, computes = _time_steps(feed(files, EPOCHS), step)
            waits, computes = waits[1:], computes[1:]  # the first step opens files, fills buffers
            share = waits.sum() / (waits.sum() + computes.sum())
            runs[name].append((share, float(np.median(waits) / np.median(computes))))
    for name, _ in feeds:
        shares, ratios = zip(*runs[name], strict=True)
        keeps_up = statistics.median(ratios)
        verdict = ""
        if name == "tf.data pipeline":
            met = "met" if keeps_up < KEEPS_UP_GOAL else "NOT MET"
            verdict = f"   goal < {KEEPS_UP_GOAL} for tf.data: {met}"
        print(
            f"{name:<20} waiting for data: {statistics.median(shares):.0%} of training time "
            f"(runs {min(shares):.0%} to {max(shares):.0%}); typical step waits "
            f"{keeps_up:.2f} x as long as it computes{verdict}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
