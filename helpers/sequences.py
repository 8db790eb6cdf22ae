"""Windows of frames from one TFRecord file per day, and a day's SequenceExample (notebook 09)."""

import io
import itertools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, UnidentifiedImageError

from helpers._checks import check_int, check_paths, check_seed
from helpers._examples import FRAME, example_bytes, parsing_spec
from helpers._magic import looks_like
from helpers.records import iter_records, write_records

if TYPE_CHECKING:
    import tensorflow as tf

_ENCODED, _TIMESTAMP, _LABELS = FRAME  # the keys of a frame: its JPEG, time and labels


def _jpeg_size(where: str, jpeg: object) -> tuple[int, int]:
    """``(height, width)`` read from a JPEG's header (nothing is decoded)."""
    if not isinstance(jpeg, bytes) or looks_like(jpeg) != "JPEG":
        got = repr(jpeg[:4]) if isinstance(jpeg, bytes) else type(jpeg).__name__
        raise ValueError(f"{where}: expected JPEG bytes (b'\\xff\\xd8\\xff...'), got {got}")
    try:
        with Image.open(io.BytesIO(jpeg)) as image:
            return image.height, image.width
    except (UnidentifiedImageError, OSError) as error:
        raise ValueError(f"{where}: the JPEG header cannot be read ({error})") from None


def write_day(
    path: str | os.PathLike,
    jpegs: Sequence[bytes],
    labels: np.ndarray | Sequence[Sequence[float]],
    timestamps: np.ndarray | Sequence[int],
    overwrite: bool = False,
) -> int:
    """Write a day, an Example per frame; return the count (notebook 09). ValueError (file,
    frame) for frames, labels or timestamps that do not fit; FileExistsError."""
    labels = np.asarray(labels)
    stamps = np.asarray(timestamps)
    if labels.ndim != 2 or labels.dtype.kind not in "iuf" or not labels.size:
        raise ValueError(f"{path}: expected labels [frames, L] numbers, got {labels.shape}")
    if stamps.ndim != 1 or stamps.dtype.kind not in "iu":
        raise ValueError(f"{path}: expected integer timestamps [frames], got {stamps.dtype}")
    if not len(jpegs) == len(labels) == len(stamps):
        counts = f"{len(jpegs)} frames, {len(labels)} label rows, {len(stamps)} timestamps"
        raise ValueError(f"{path}: {counts}; expected one of each per frame")
    with np.errstate(over="ignore"):  # what the record holds: 1e39 is inf in float32
        stored = labels.astype(np.float32)
    if not np.isfinite(stored).all():
        i = np.flatnonzero(~np.isfinite(stored).all(axis=1))[0]
        got = labels[i].tolist()
        raise ValueError(f"{path}: frame {i}: expected finite float32 labels, got {got}")
    if (np.diff(stamps) <= 0).any():
        i = np.flatnonzero(np.diff(stamps) <= 0)[0] + 1
        order = f"timestamp {stamps[i]} is not after frame {i - 1}'s {stamps[i - 1]}"
        raise ValueError(f"{path}: frame {i}: {order}; expected strictly increasing time")
    sizes = [_jpeg_size(f"{path}: frame {i}", jpeg) for i, jpeg in enumerate(jpegs)]
    if len(set(sizes)) > 1:
        i = next(i for i, size in enumerate(sizes) if size != sizes[0])
        raise ValueError(f"{path}: frame {i} is {sizes[i]} but frame 0 is {sizes[0]} (H, W)")
    frames = zip(jpegs, stamps.astype(np.int64).tolist(), stored.tolist(), strict=True)
    payloads = (
        example_bytes(FRAME, {_ENCODED: jpeg, _TIMESTAMP: stamp, _LABELS: row})
        for jpeg, stamp, row in frames
    )
    return write_records(path, payloads, overwrite=overwrite)


def _parsed(where: str, parse, *args, **kwargs):
    """Run a TensorFlow parse op; its InvalidArgumentError becomes a ValueError naming ``where``."""
    import tensorflow as tf

    try:
        return parse(*args, **kwargs)
    except tf.errors.InvalidArgumentError as error:
        reason = error.message.split(f"Name: {where}, ")[-1].splitlines()[0]
        reason = re.sub(r"^{{.*?}} | \[Op:\w+\]$", "", reason)  # TensorFlow's op names
        raise ValueError(f"{where}: {reason}") from None
    except UnicodeDecodeError:  # TensorFlow's message quoted the record's raw bytes
        raise ValueError(f"{where}: not a protocol buffer, TensorFlow cannot parse it") from None


def _frame_shape(paths: list[Path]) -> tuple[int, int, int]:
    """``(height, width, labels per frame)`` of every file's first record; they must agree."""
    import tensorflow as tf

    found: dict[tuple[int, int, int], Path] = {}  # each shape and the first file with it
    for path in paths:
        payload = next(iter_records(path), None)
        if payload is not None:  # an empty file yields no window
            where = f"{path}: record 0"  # any number of labels: a RaggedFeature
            frame = _parsed(where, tf.io.parse_example, [payload], parsing_spec(FRAME), [where])
            height, width = _jpeg_size(where, frame[_ENCODED][0].numpy())
            found.setdefault((height, width, frame[_LABELS].values.shape[0]), path)
    if len(found) != 1:
        shapes = ", ".join(f"{path}: {shape}" for shape, path in found.items())
        shapes = shapes or f"no frame in {len(paths)} file(s)"
        raise ValueError(f"expected one (height, width, labels) in all files, found {shapes}")
    return next(iter(found))


def frame_windows(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    size: int,
    stride: int = 1,
    shift: int = 1,
    shuffle_buffer: int = 0,
    seed: int = 0,
    cycle_length: int = 4,
    with_timestamps: bool = False,
) -> "tf.data.Dataset":
    """``(frames, last labels[, timestamps])`` windows inside each day file (notebook 10).
    ValueError for a bad argument, no frame, two frame shapes or a bad record 0; TypeError. A bad
    later record raises InvalidArgumentError naming "<file>: record <i>" (or UnicodeDecodeError)."""
    import tensorflow as tf

    steps = {"size": size, "stride": stride, "shift": shift}
    size, stride, shift = (check_int(value, name, minimum=1) for name, value in steps.items())
    shuffle_buffer = check_int(shuffle_buffer, "shuffle_buffer", minimum=0)
    seed = check_seed(seed)
    cycle_length = check_int(cycle_length, "cycle_length", minimum=1)
    paths = check_paths(files)
    height, width, num_labels = _frame_shape(paths)
    spec = parsing_spec(FRAME, {_LABELS: num_labels})

    def parse(record, name):  # errors name "<file>: record <i>"
        frame = tf.io.parse_example(record[None], spec, example_names=name[None])
        return frame[_ENCODED][0], frame[_TIMESTAMP][0], frame[_LABELS][0]

    def day_windows(path):  # windows of (JPEGs, timestamps, labels) from one file
        name = tf.strings.join([path, ": record "])
        records = tf.data.TFRecordDataset(path).enumerate()
        frames = records.map(lambda i, record: parse(record, name + tf.strings.as_string(i)))
        windows = frames.window(size, shift, stride, drop_remainder=True)
        return windows.flat_map(lambda *parts: tf.data.Dataset.zip(*(p.batch(size) for p in parts)))

    def decode(jpegs, stamps, labels):
        frames = tf.stack([tf.io.decode_jpeg(jpegs[i], channels=3) for i in range(size)])
        frames = tf.ensure_shape(frames, [size, height, width, 3])
        stamps = tf.ensure_shape(stamps, [size])
        return (frames, labels[-1], stamps) if with_timestamps else (frames, labels[-1])

    dataset = tf.data.Dataset.from_tensor_slices([str(path) for path in paths])
    if shuffle_buffer:
        file_seed, window_seed = (int(s) for s in np.random.SeedSequence(seed).generate_state(2))
        dataset = dataset.shuffle(len(paths), seed=file_seed).interleave(
            day_windows, min(cycle_length, len(paths)), num_parallel_calls=tf.data.AUTOTUNE
        )
        dataset = dataset.shuffle(shuffle_buffer, seed=window_seed)
    else:
        dataset = dataset.flat_map(day_windows)
    return dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def read_day_sequence(path: str | os.PathLike, num_labels: int) -> tuple[dict, dict]:
    """``(context, lists)`` of a day's SequenceExample (notebook 09). ValueError naming file and
    record for not one record, a wrong feature or ``frame_count``; RecordError for damage."""
    import tensorflow as tf

    num_labels = check_int(num_labels, "num_labels", minimum=1)
    payloads = list(itertools.islice(iter_records(path), 2))
    if len(payloads) != 1:
        found = "more than one" if payloads else "none"
        raise ValueError(f"{path}: expected one SequenceExample record, found {found}")
    fixed = tf.io.FixedLenFeature
    steps = tf.io.FixedLenSequenceFeature
    context_spec = {"day": fixed([], tf.string), "frame_count": fixed([], tf.int64)}
    list_spec = {"frames": steps([], tf.string), "timestamps": steps([], tf.int64)}
    list_spec["labels"] = steps([num_labels], tf.float32)
    where = f"{path}: record 0"
    parse = tf.io.parse_single_sequence_example
    context, lists = _parsed(where, parse, payloads[0], context_spec, list_spec, example_name=where)
    lengths = {key: int(value.shape[0]) for key, value in sorted(lists.items())}
    count = int(context["frame_count"])
    if set(lengths.values()) != {count}:
        raise ValueError(f"{where}: frame_count says {count} but the feature lists hold {lengths}")
    return context, lists
