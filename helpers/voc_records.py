"""VOC image/mask pairs as ``tf.train.Example`` records: pixels, or JPEG and PNG (notebook 02)."""

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from PIL import Image
from tqdm import tqdm

from helpers import voc
from helpers.describe import _example_bytes
from helpers.records import _output_folder, write_sharded

_OPTIONAL = {"filename": b""}  # keys a record may lack (the original guide has no filename)
_SCHEMAS = {
    "raw": {
        "height": "int64",
        "width": "int64",
        "image_raw": "bytes",
        "mask_raw": "bytes",
        "filename": "bytes",
    },
    "encoded": {  # the keys of DeepLab's build_voc2012_data.py
        "image/encoded": "bytes",
        "image/filename": "bytes",
        "image/format": "bytes",
        "image/height": "int64",
        "image/width": "int64",
        "image/channels": "int64",
        "image/segmentation/class/encoded": "bytes",
        "image/segmentation/class/format": "bytes",
    },
}

#: The names of the two schemas (notebook 02).
ENCODINGS: tuple[str, ...] = tuple(_SCHEMAS)


def _check_task(task: object, encoding: object = "raw") -> None:
    if task not in ("segmentation", "detection"):
        raise ValueError(f"task must be 'segmentation' or 'detection', got {task!r}")
    if task == "segmentation" and encoding not in _SCHEMAS:
        raise ValueError(f"encoding must be 'raw' or 'encoded', got {encoding!r}")


def feature_spec(encoding: str) -> dict:
    """``{key: tf.io.FixedLenFeature([], dtype)}`` of a schema (notebook 02, "Parse the records
    back with a feature spec"). ValueError if ``encoding`` is not "raw" or "encoded"."""
    _check_task("segmentation", encoding)
    import tensorflow as tf

    dtypes, schema = {"int64": tf.int64, "bytes": tf.string}, _SCHEMAS[encoding]
    return {k: tf.io.FixedLenFeature([], dtypes[schema[k]], _OPTIONAL.get(k)) for k in schema}


def voc_example(root: str | os.PathLike, image_id: str, encoding: str = "raw"):
    """The Example of one VOC pair (notebook 02, "Build one Example from one pair"). VOCError for
    what ``voc.load_pair`` refuses or a photo not a JPEG; ValueError for an unknown ``encoding``."""
    import tensorflow as tf

    return tf.train.Example.FromString(record_payload(root, image_id, "segmentation", encoding))


def split_order(
    root: str | os.PathLike, split: str, task: str = "segmentation", shuffle_seed: int | None = None
) -> list[str]:
    """The ids of a split in the order both engines write them: the split file's, or with
    ``shuffle_seed`` its ``helpers.shuffle.permutation`` (notebook 08). VOCError for a missing or
    malformed split file; TypeError or ValueError for an unknown ``task`` or a bad seed."""
    _check_task(task)
    ids = voc.read_split(root, split, "Main" if task == "detection" else "Segmentation")
    if shuffle_seed is None:
        return ids
    from helpers.shuffle import permutation

    return [ids[i] for i in permutation(len(ids), shuffle_seed)]


def record_payload(
    root: str | os.PathLike, image_id: str, task: str = "segmentation", encoding: str = "raw"
) -> bytes:
    """One image's serialized record as both ``convert-voc`` engines write it, by protobuf alone
    (notebook 08). VOCError naming id and file for bad input; ValueError: bad task or encoding."""
    _check_task(task, encoding)
    if task == "detection":
        from helpers.detection import _detection_payload

        return _detection_payload(root, image_id)
    image, mask = voc.load_pair(root, image_id)  # decodes every pixel of both files
    path = voc.image_path(root, image_id)
    height, width = mask.shape
    if encoding == "raw":
        values = {
            "height": height,
            "width": width,
            "image_raw": image.tobytes(),
            "mask_raw": mask.tobytes(),
            "filename": path.name.encode(),
        }
    else:
        jpeg = voc._read_jpeg(root, image_id)
        png = io.BytesIO()  # grayscale: tf.io.decode_png gives the indices back, not colours
        Image.fromarray(mask).save(png, format="PNG")
        values = {
            "image/encoded": jpeg,
            "image/filename": path.name.encode(),
            "image/format": b"jpeg",
            "image/height": height,
            "image/width": width,
            "image/channels": 3,
            "image/segmentation/class/encoded": png.getvalue(),
            "image/segmentation/class/format": b"png",
        }
    return _example_bytes({key: (kind, [values[key]]) for key, kind in _SCHEMAS[encoding].items()})


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
    """Write a split's records in :func:`split_order` by :func:`helpers.records.write_sharded`;
    return the paths (notebook 02, "Make it sturdy"); an error leaves no output. Raises as
    ``write_sharded``, ValueError for a bad ``encoding``, VOCError for a bad split or pair."""
    _check_task(task, encoding)

    def payloads() -> Iterator[bytes]:  # runs only once write_sharded has checked the names
        ids = split_order(voc_root, split, task, shuffle_seed)
        what = encoding if task == "segmentation" else task
        bar = tqdm(ids, f"{split} ({what})", unit="image", file=sys.stderr, disable=not progress)
        with bar:
            for image_id in bar:
                yield record_payload(voc_root, image_id, task, encoding)

    with _output_folder(out_prefix):
        return write_sharded(out_prefix, payloads(), num_shards, compression, overwrite, index)
