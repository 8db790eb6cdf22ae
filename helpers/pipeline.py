"""The input pipeline that notebook 05 builds, with format detection and named errors."""

import glob
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from helpers import voc
from helpers._checks import check_compression, check_int, check_paths, check_seed
from helpers._examples import SEGMENTATION, message, parsing_spec
from helpers.records import detect_compression, iter_records

if TYPE_CHECKING:
    import tensorflow as tf

_FILE_STRIDE = 2**40  # a record's position: file number * _FILE_STRIDE + index in its file
_MISSING = {"int64": -1, "bytes": b""}  # a missing key parses as no valid value: _decode names it


def _schema(path: Path, compression: str | None) -> str | None:
    """The schema of record 0 ("raw" or "encoded"), checked in full; None if there is none.
    ValueError naming the file if record 0 is not a ``tf.train.Example``, has the required keys
    of neither schema, or a key holds not one value of its kind (an optional key may be missing)."""
    from google.protobuf.message import DecodeError

    first = next(iter_records(path, compression), None)
    if first is None:
        return None
    try:
        features = message("Example").FromString(first).features.feature
    except DecodeError as error:
        raise ValueError(f"{path}: record 0 is not a tf.train.Example ({error})") from None
    required = {
        name: [k for k, key in keys.items() if key.default is None]
        for name, keys in SEGMENTATION.items()
    }
    found = [name for name, keys in required.items() if set(keys) <= set(features)]
    if not found:  # e.g. the official tutorial's images.tfrecords: a JPEG in image_raw, no mask
        expected = "; ".join(f"{name}: {', '.join(keys)}" for name, keys in required.items())
        problem = f"record 0 has features {sorted(features)}, which match neither VOC schema"
        raise ValueError(f"{path}: {problem} (expected every key of one: {expected})")
    for name, key in SEGMENTATION[found[0]].items():
        kind = f"{key.kind}_list"
        held = features[name].WhichOneof("kind") if name in features else None
        count = len(getattr(features[name], kind).value) if held == kind else 0
        if count != 1 and (held or key.default is None):
            what = {kind: f"{count} values", None: "nothing"}.get(held, f"a {held}")
            where = f"{path}: record 0 ({found[0]} schema): feature {name!r}"
            raise ValueError(f"{where} holds {what}, expected one value in a {kind}")
    return found[0]


def _inputs(files: str | os.PathLike | Sequence, encoding: str, compression: object) -> tuple:
    """``(paths, encoding, compression)`` of :func:`voc_batches`' ``files`` (a pattern's matches
    sorted); FileNotFoundError, or ValueError naming a file of another format."""
    if isinstance(files, (str, os.PathLike)) and not os.path.isfile(files):
        pattern = os.fspath(files)
        if glob.has_magic(pattern):
            files = sorted(glob.glob(pattern))
            if not files:
                raise FileNotFoundError(f"no file matches {pattern!r}, and no file has that name")
    paths = check_paths(files)
    if not paths:
        raise ValueError("files is empty: pass at least one TFRecord file")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no such file: {', '.join(missing)}")
    if encoding not in ("auto", *SEGMENTATION):
        raise ValueError(f"encoding must be 'auto', 'raw' or 'encoded', got {encoding!r}")
    asked = {"encoding": encoding, "compression": check_compression(compression, auto=True)}
    stored = {path: detect_compression(path) for path in paths if path.stat().st_size}
    schemas = {path: _schema(path, how) for path, how in stored.items()}
    found = {"compression": stored, "encoding": {p: e for p, e in schemas.items() if e}}
    for field, values in found.items():  # files of no records are left out: any format fits
        first, known = next(iter(values.items()), (None, None))
        for path, value in values.items():
            if asked[field] not in ("auto", value):
                asking = f"{path}: {field}={asked[field]!r} was asked for"
                raise ValueError(f"{asking}, but the file's {field} is {value!r}")
            if value != known:
                disagree = f"{first} is {known!r} but {path} is {value!r}"
                raise ValueError(f"files disagree on {field}: {disagree}; read them separately")
    if not found["encoding"]:
        raise ValueError(f"no records in {', '.join(map(str, paths))}")
    return paths, next(iter(found["encoding"].values())), next(iter(stored.values()))


def _decode(serialized, encoding: str, where: list):
    """(image, mask) of a record once checks pass (raw: the sizes add up; encoded: both files are
    there, the mask is grayscale, both of one size; the JPEG decoded as Pillow does). Failed
    checks name ``where`` and hold only strings and int32 (others make a stateful op)."""
    import tensorflow as tf

    def check(condition, *parts):
        return tf.debugging.Assert(condition, [*where, *parts], summarize=8)

    keys = SEGMENTATION[encoding]
    spec = {name: key._replace(default=_MISSING[key.kind]) for name, key in keys.items()}
    values = tf.io.parse_single_example(serialized, parsing_spec(spec))
    if encoding == "raw":
        height = tf.cast(values["height"], tf.int32)
        width = tf.cast(values["width"], tf.int32)
        checks = [check((height > 0) & (width > 0), "height, width (missing?):", height, width)]
        for key, channels in (("image_raw", 3), ("mask_raw", 1)):
            size = tf.strings.length(values[key])
            expected = height * width * channels
            text = f"expected height*width*{channels} ="
            checks.append(check(size == expected, f"{key} bytes:", size, text, expected))
        with tf.control_dependencies(checks):
            pixels = [tf.io.decode_raw(values[k], tf.uint8) for k in ("image_raw", "mask_raw")]
        return tf.reshape(pixels[0], [height, width, 3]), tf.reshape(pixels[1], [height, width, 1])
    keys = ("image/encoded", "image/segmentation/class/encoded")
    checks = [check(tf.strings.length(values[k]) > 0, f"{k} is empty (missing?)") for k in keys]
    with tf.control_dependencies(checks):
        image = tf.io.decode_jpeg(values[keys[0]], channels=3, dct_method="INTEGER_ACCURATE")
        mask = tf.io.decode_png(values[keys[1]], channels=0)
    image_size = tf.shape(image)
    mask_size = tf.shape(mask)
    same_size = tf.reduce_all(image_size[:2] == mask_size[:2])
    checks = [
        check(mask_size[2] == 1, "mask PNG channels:", mask_size[2], "expected 1 (grayscale)"),
        check(same_size, "image size:", image_size[:2], "differs from mask size:", mask_size[:2]),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(image), tf.ensure_shape(tf.identity(mask), [None, None, 1])


def _check_size(size: object) -> tuple[int, int]:
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(f"crop size must be (height, width), got {size!r}")
    return check_int(size[0], "crop height", minimum=1), check_int(size[1], "crop width", minimum=1)


def crop_or_pad(
    image: "tf.Tensor", mask: "tf.Tensor", size: tuple[int, int], position: object = None
) -> tuple["tf.Tensor", "tf.Tensor"]:
    """Crop or pad both to ``size`` with one window (centred, or placed by two floats in [0, 1)),
    the mask with void (notebook 05, "Crop or pad, and pad masks with void"). ValueError or
    TypeError if ``size`` is not two ints > 0."""
    import tensorflow as tf

    size = _check_size(size)
    shape = tf.shape(image)[:2]
    target = tf.constant(size)
    excess = tf.maximum(shape - target, 0)  # rows and columns to crop away
    missing = tf.maximum(target - shape, 0)  # rows and columns to pad
    if position is None:  # centred
        start = excess // 2
        before = missing // 2
    else:  # each offset uniform in [0, limit]
        pick = [tf.cast(position * tf.cast(n + 1, tf.float32), tf.int32) for n in (excess, missing)]
        start = tf.minimum(pick[0], excess)
        before = tf.minimum(pick[1], missing)
    kept = tf.minimum(shape, target)
    pads = tf.concat([tf.stack([before, target - kept - before], axis=1), [[0, 0]]], axis=0)
    begin = tf.concat([start, [0]], axis=0)
    length = tf.concat([kept, [-1]], axis=0)  # -1: every channel
    image = tf.pad(tf.slice(image, begin, length), pads, constant_values=0)
    mask = tf.pad(tf.slice(mask, begin, length), pads, constant_values=voc.VOID_LABEL)
    return tf.ensure_shape(image, [*size, 3]), tf.ensure_shape(mask, [*size, 1])


def flip_together(
    image: "tf.Tensor", mask: "tf.Tensor", coin: "tf.Tensor"
) -> tuple["tf.Tensor", "tf.Tensor"]:
    """Reverse image and mask left-right if ``coin`` < 0.5, else neither: one decision for both
    (notebook 05, "Flip image and mask together")."""
    import tensorflow as tf

    return tf.cond(
        coin < 0.5, lambda: (tf.reverse(image, [1]), tf.reverse(mask, [1])), lambda: (image, mask)
    )


def voc_batches(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int,
    crop: tuple[int, int] = (384, 384),
    shuffle_buffer: int = 256,
    seed: int = 0,
    augment: bool = False,
    *,
    encoding: str = "auto",
    compression: str | None = "auto",
    drop_remainder: bool = False,
) -> "tf.data.Dataset":
    """Batches of uint8 images [B, H, W, 3] and masks [B, H, W, 1] from VOC files (notebook 05,
    "Save the pipeline as voc_batches"). ``files``: a path, a sequence of paths, or a glob
    pattern (a path that names no file but holds ``*``, ``?`` or ``[``). TypeError,
    FileNotFoundError, ValueError (e.g. files that disagree) or RecordError; later,
    InvalidArgumentError names file and index of a record that does not add up."""
    import tensorflow as tf

    batch_size = check_int(batch_size, "batch_size", minimum=1)
    shuffle_buffer = check_int(shuffle_buffer, "shuffle_buffer", minimum=0)
    seed = check_seed(seed)
    size = _check_size(crop)
    paths, encoding, compression = _inputs(files, encoding, compression)
    names = [os.fspath(p) for p in paths]

    def read(name, number):  # enumerate, not from_tensors: that stateful op serializes all
        records = tf.data.TFRecordDataset(name, compression_type=compression or "", buffer_size=0)
        return records.enumerate(start=number * _FILE_STRIDE)

    file_list = tf.data.Dataset.from_tensor_slices((names, tf.range(len(names), dtype=tf.int64)))
    file_list = file_list.shuffle(len(names), seed=seed) if shuffle_buffer else file_list
    cycle = min(len(names), 4) if shuffle_buffer else 1  # files read at once
    parallel = {"num_parallel_calls": tf.data.AUTOTUNE, "deterministic": True}
    records = file_list.interleave(read, cycle_length=cycle, block_length=1, **parallel)
    records = records.shuffle(shuffle_buffer, seed=seed) if shuffle_buffer else records

    def prepare(position, serialized, draw=None):
        file_name = tf.gather(tf.constant(names), position // _FILE_STRIDE)
        where = [file_name, "record", tf.cast(position % _FILE_STRIDE, tf.int32)]
        image, mask = _decode(serialized, encoding, where)
        if not augment:
            return crop_or_pad(image, mask, size)
        coins = tf.random.stateless_uniform([3], seed=tf.stack([draw, 0]))  # window and flip
        image, mask = crop_or_pad(image, mask, size, position=coins[:2])
        return flip_together(image, mask, coins[2])

    if augment:  # one random number per record; no zip without augmentation (bench_pipeline)
        draws = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
        pairs = tf.data.Dataset.zip(records, draws).map(lambda r, d: prepare(*r, d), **parallel)
    else:
        pairs = records.map(prepare, **parallel)
    options = tf.data.Options()  # autotuning made some epochs up to 2x as long (bench_pipeline)
    options.autotune.enabled = False
    pairs = pairs.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)
    return pairs.with_options(options)
