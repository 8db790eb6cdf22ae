"""VOC image/mask pairs as ``tf.train.Example`` records: two schemas and a converter.

Notebook 02 writes all of this in its own cells first; this module remembers it for later
notebooks and ``python -m helpers convert-voc``. The **raw** schema holds the uint8 pixels
("Build one Example from one pair"); the **encoded** one, with the keys of TensorFlow's DeepLab
VOC converter, the JPEG file unchanged and a grayscale PNG mask ("Store encoded images
instead"). Importing this module does not import TensorFlow: the functions that need it do.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from PIL import Image
from tqdm import tqdm

from helpers import voc
from helpers._checks import check_int
from helpers.describe import _example_bytes
from helpers.records import _output_folder, write_sharded

# The one place the keys live: each schema maps a key to the kind of its single value.
_OPTIONAL = {"filename": b""}  # keys a record may lack (the original guide has no filename)
_SCHEMAS = {
    "raw": {"height": "int64", "width": "int64", "image_raw": "bytes", "mask_raw": "bytes",
            "filename": "bytes"},
    "encoded": {  # the keys of DeepLab's build_voc2012_data.py
        "image/encoded": "bytes", "image/filename": "bytes", "image/format": "bytes",
        "image/height": "int64", "image/width": "int64", "image/channels": "int64",
        "image/segmentation/class/encoded": "bytes", "image/segmentation/class/format": "bytes"},
}  # fmt: skip

#: The names of the two schemas.
ENCODINGS: tuple[str, ...] = tuple(_SCHEMAS)


def _schema(encoding: object) -> dict[str, str]:
    if encoding not in _SCHEMAS:
        raise ValueError(f"encoding must be 'raw' or 'encoded', got {encoding!r}")
    return _SCHEMAS[encoding]


def feature_spec(encoding: str) -> dict:
    """The parsing spec of a schema: ``{key: tf.io.FixedLenFeature([], dtype)}``.

    For ``tf.io.parse_single_example``; notebook 02 writes the raw one out in "Parse the records
    back with a feature spec" and checks it equals this (optional ``filename``: default b"").

    Raises:
        ValueError: if ``encoding`` is not ``"raw"`` or ``"encoded"``.
    """
    schema = _schema(encoding)
    import tensorflow as tf

    dtypes = {"int64": tf.int64, "bytes": tf.string}
    return {k: tf.io.FixedLenFeature([], dtypes[schema[k]], _OPTIONAL.get(k)) for k in schema}


def voc_example(root: str | os.PathLike, image_id: str, encoding: str = "raw"):
    """The ``tf.train.Example`` of one VOC pair in the ``"raw"`` or ``"encoded"`` schema.

    Both files are decoded in full first (:func:`helpers.voc.load_pair`), so a truncated or
    corrupt JPEG is refused although the encoded schema stores the file's bytes unchanged.
    Shown in notebook 02 ("Build one Example from one pair", "Store encoded images instead").

    Raises:
        helpers.voc.VOCError: naming the id and the file, for a missing, truncated or corrupt
            photo or mask, sizes that differ, or (encoded) a photo that is not a JPEG file.
        ValueError: for an unknown ``encoding``.
    """
    import tensorflow as tf

    return tf.train.Example.FromString(_pair_payload(root, image_id, encoding))


def _pair_payload(root: str | os.PathLike, image_id: str, encoding: str) -> bytes:
    """:func:`voc_example`, serialized (``deterministic=True``) without importing TensorFlow."""
    schema = _schema(encoding)
    image, mask = voc.load_pair(root, image_id)  # decodes every pixel of both files
    path = voc.image_path(root, image_id)
    height, width = mask.shape
    if encoding == "raw":
        values = {"height": height, "width": width, "image_raw": image.tobytes(),
                  "mask_raw": mask.tobytes(), "filename": path.name.encode()}  # fmt: skip
    else:
        jpeg = voc._read_jpeg(root, image_id)
        png = io.BytesIO()  # grayscale: tf.io.decode_png gives the indices back, not colours
        Image.fromarray(mask).save(png, format="PNG")
        values = {"image/encoded": jpeg, "image/filename": path.name.encode(),
                  "image/format": b"jpeg", "image/height": height, "image/width": width,
                  "image/channels": 3, "image/segmentation/class/encoded": png.getvalue(),
                  "image/segmentation/class/format": b"png"}  # fmt: skip
    return _example_bytes({key: (kind, [values[key]]) for key, kind in schema.items()})


#: What ``convert_split`` can write: segmentation pairs or detection boxes (notebook 09).
_TASKS: tuple[str, ...] = ("segmentation", "detection")


def _check_task(task: object, encoding: object) -> None:
    if task not in _TASKS:
        raise ValueError(f"task must be 'segmentation' or 'detection', got {task!r}")
    if task == "segmentation":
        _schema(encoding)


def split_order(
    root: str | os.PathLike, split: str, task: str = "segmentation", shuffle_seed: int | None = None
) -> list[str]:
    """The ids of a split in the order they are written: the split file's, or a seeded shuffle.

    Segmentation reads ``ImageSets/Segmentation/<split>.txt``, detection
    ``ImageSets/Main/<split>.txt``. With ``shuffle_seed`` the order is
    ``helpers.shuffle.permutation(len(ids), shuffle_seed)`` of the file's: a uniform random order
    fixed by the seed and the split alone, which both engines of ``convert-voc`` use (notebook 08).

    Raises:
        helpers.voc.VOCError: for a missing or malformed split file.
        TypeError, ValueError: for an unknown ``task`` or a seed that is not a non-negative int.
    """
    if task not in _TASKS:
        raise ValueError(f"task must be 'segmentation' or 'detection', got {task!r}")
    if task == "detection":
        ids = voc.read_split(root, split, folder="Main")
    else:
        ids = voc.read_split(root, split)
    if shuffle_seed is None:
        return ids
    from helpers.shuffle import permutation

    return [ids[i] for i in permutation(len(ids), shuffle_seed)]


def record_payload(
    root: str | os.PathLike, image_id: str, task: str = "segmentation", encoding: str = "raw"
) -> bytes:
    """One image's serialized record (``deterministic=True``), as both engines write it.

    Both engines of ``convert-voc`` call it (notebook 08); built by protobuf alone, it imports
    no TensorFlow, which would cost each Beam worker seconds.
    ``task="segmentation"``: :func:`voc_example` in the given ``encoding``;
    ``task="detection"``: :func:`helpers.detection.detection_example` (boxes, notebook 09).

    Raises:
        helpers.voc.VOCError: naming the id and the file, for bad input.
        ValueError: for an unknown ``task`` or ``encoding``.
    """
    _check_task(task, encoding)
    if task == "detection":
        from helpers.detection import _detection_payload

        return _detection_payload(root, image_id)
    return _pair_payload(root, image_id, encoding)


def convert_split(
    voc_root: str | os.PathLike,
    split: str,
    out_prefix: str | os.PathLike,
    num_shards: int = 1,
    encoding: str = "raw",
    compression: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    shuffle_seed: int | None = None,
    task: str = "segmentation",
    index: bool = False,
) -> list[Path]:
    """Convert one split of a VOC2012-layout folder into TFRecord shards; return their paths.

    One image at a time: :func:`record_payload`, dealt round-robin by
    :func:`helpers.records.write_sharded` to ``<out_prefix>-0000i-of-0000n``
    ``.tfrecord`` (``.gz``/``.zz`` when compressed), all or nothing: an error half way leaves
    no output file. The order is the split file's, or with ``shuffle_seed`` the uniform
    permutation :func:`split_order` gives (the Beam engine writes the same bytes, notebook 08).
    Creates the folder of ``out_prefix`` (removed again if the conversion fails); a tqdm bar
    goes to stderr if ``progress``.
    Shown in notebook 02 ("Make it sturdy"); ``python -m helpers convert-voc``.

    With ``index``, each shard's ``.index`` file (:class:`helpers.index.RecordView`) too.

    Raises:
        FileExistsError: if a shard exists and ``overwrite`` is false (before any pair is read).
        helpers.voc.VOCError: for an unknown split or a bad pair (naming the id and the file).
        TypeError, ValueError: for a bad ``num_shards``, ``encoding`` or ``compression``.
    """
    _check_task(task, encoding)
    num_shards = check_int(num_shards, "num_shards", minimum=1)

    def payloads() -> Iterator[bytes]:  # runs only once write_sharded has checked the names
        ids = split_order(voc_root, split, task, shuffle_seed)
        what = encoding if task == "segmentation" else task
        bar = tqdm(ids, f"{split} ({what})", unit="image", file=sys.stderr, disable=not progress)
        with bar:
            for image_id in bar:
                yield record_payload(voc_root, image_id, task, encoding)

    with _output_folder(out_prefix):
        return write_sharded(out_prefix, payloads(), num_shards, compression, overwrite, index)
