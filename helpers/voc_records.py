"""VOC image/mask pairs as ``tf.train.Example`` records, pixels or JPEG and PNG (notebook 03),
and VOC boxes with the Object Detection API's keys (notebook 15)."""

import hashlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image
from tqdm import tqdm

from helpers import voc
from helpers._commit import output_folder
from helpers._examples import (
    CORNERS,
    DETECTION,
    SEGMENTATION,
    check_task,
    example_bytes,
    parsing_spec,
)
from helpers._magic import looks_like
from helpers.records import write_sharded
from helpers.shuffle import permutation

if TYPE_CHECKING:
    import tensorflow as tf

#: The names of the two schemas (notebook 04).
ENCODINGS: tuple[str, ...] = tuple(SEGMENTATION)


def feature_spec(encoding: str) -> dict:
    """``{key: tf.io.FixedLenFeature([], dtype)}`` of a schema (notebook 03, "Parse the records
    back with a feature spec"). ValueError if ``encoding`` is not "raw" or "encoded"."""
    return parsing_spec(check_task("segmentation", encoding))


def voc_example(
    root: str | os.PathLike, image_id: str, encoding: str = "raw"
) -> "tf.train.Example":
    """The Example of one VOC pair (notebook 03, "Build one Example from one pair"). Raises as
    :func:`record_payload`: VOCError for a bad pair or a non-JPEG, ValueError for a bad encoding."""
    import tensorflow as tf

    return tf.train.Example.FromString(record_payload(root, image_id, "segmentation", encoding))


def split_order(
    root: str | os.PathLike, split: str, task: str = "segmentation", shuffle_seed: int | None = None
) -> list[str]:
    """The ids of a split in the order both engines write them: the split file's, or with
    ``shuffle_seed`` its ``helpers.shuffle.permutation`` (notebook 14). VOCError for a missing or
    malformed split file; TypeError or ValueError for an unknown ``task`` or a bad seed."""
    check_task(task)
    ids = voc.read_split(root, split, "Main" if task == "detection" else "Segmentation")
    if shuffle_seed is None:
        return ids
    return [ids[i] for i in permutation(len(ids), shuffle_seed)]


def record_payload(
    root: str | os.PathLike, image_id: str, task: str = "segmentation", encoding: str = "raw"
) -> bytes:
    """One image's serialized record as both ``convert-voc`` engines write it, by protobuf alone
    (notebook 14). VOCError naming id and file for bad input; ValueError: bad task or encoding."""
    keys = check_task(task, encoding)
    if task == "detection":
        return example_bytes(keys, _detection_values(root, image_id))
    image, mask = voc.load_pair(root, image_id)  # decodes every pixel of both files
    height, width = mask.shape
    if encoding == "raw":
        name = voc.image_path(root, image_id).name.encode()
        raw = {"image_raw": image.tobytes(), "mask_raw": mask.tobytes(), "filename": name}
        return example_bytes(keys, {"height": height, "width": width, **raw})
    png = io.BytesIO()  # grayscale: tf.io.decode_png gives the indices back, not colours
    Image.fromarray(mask).save(png, format="PNG")
    values = {
        **_photo_values(root, image_id, height, width),
        "image/channels": 3,
        "image/segmentation/class/encoded": png.getvalue(),
        "image/segmentation/class/format": b"png",
    }
    return example_bytes(keys, values)


def _photo_values(root: str | os.PathLike, image_id: str, height: int, width: int) -> dict:
    """The ``image/`` values of the photo that both JPEG schemas share; VOCError if not a JPEG."""
    path = voc.image_path(root, image_id)
    jpeg = path.read_bytes()
    if looks_like(jpeg) != "JPEG":
        raise voc.VOCError(f"photo of image id {image_id!r} is not a JPEG file: {path}")
    return {
        "image/encoded": jpeg,
        "image/filename": path.name.encode(),
        "image/format": b"jpeg",
        "image/height": height,
        "image/width": width,
    }


def _detection_values(root: str | os.PathLike, image_id: str) -> dict[str, object]:
    """The values of an image's detection record, as ``create_pascal_tf_record.py`` has them."""
    annotation = voc.load_annotation(root, image_id)
    height, width = voc.load_image(root, image_id).shape[:2]  # decodes every pixel
    photo = _photo_values(root, image_id, height, width)
    if (height, width) != (annotation.height, annotation.width):
        sizes = f"{width}x{height}, annotation says {annotation.width}x{annotation.height}"
        where = f"photo of image id {image_id!r}"
        raise voc.VOCError(f"{where} is {sizes}: {voc.image_path(root, image_id)}")
    objects = annotation.objects  # load_annotation checked its filename is the photo's
    values = {
        **photo,
        "image/source_id": photo["image/filename"],
        "image/key/sha256": hashlib.sha256(photo["image/encoded"]).hexdigest().encode(),
        "image/object/class/text": [o.name.encode() for o in objects],
        "image/object/class/label": [voc.VOC_CLASSES.index(o.name) for o in objects],
        "image/object/difficult": [int(o.difficult) for o in objects],
        "image/object/truncated": [int(o.truncated) for o in objects],
        "image/object/view": [o.pose.encode() for o in objects],
    }
    for corner in CORNERS:  # create_pascal_tf_record.py: float(obj['bndbox']['xmin']) / width:
        size = width if corner[0] == "x" else height  # the 1-based corner, nothing subtracted
        values[f"image/object/bbox/{corner}"] = [getattr(o, corner) / size for o in objects]
    return values


def detection_example(root: str | os.PathLike, image_id: str) -> "tf.train.Example":
    """The Example of an image and its boxes, as ``create_pascal_tf_record.py`` writes it (notebook
    15, "Build one Example with lists"). VOCError for a bad annotation or photo, a non-JPEG, or a
    size unlike the XML's."""
    import tensorflow as tf

    return tf.train.Example.FromString(record_payload(root, image_id, "detection"))


def detection_spec() -> dict:
    """The parsing spec of :func:`detection_example`'s records (notebook 15, "Stack the corners
    into boxes")."""
    return parsing_spec(DETECTION)


def parse_detection(serialized: "tf.Tensor") -> dict:
    """A :func:`detection_example` record as a detector's tensors (notebook 15, "Stack the corners
    into boxes"). InvalidArgumentError if image keys miss or list lengths differ."""
    import tensorflow as tf

    values = tf.io.parse_single_example(serialized, detection_spec())
    labels = values["image/object/class/label"]
    for name in (name for name, key in DETECTION.items() if key.many):
        message = f"{name} has another number of values than image/object/class/label"
        tf.debugging.assert_equal(tf.size(values[name]), tf.size(labels), message=message)
    corners = [values[f"image/object/bbox/{c}"] for c in ("ymin", "xmin", "ymax", "xmax")]
    return {
        "image": tf.io.decode_jpeg(values["image/encoded"], channels=3),
        "boxes": tf.reshape(tf.stack(corners, axis=-1), [-1, 4]),
        "labels": labels,
        "difficult": values["image/object/difficult"] > 0,
        "truncated": values["image/object/truncated"] > 0,
        "filename": values["image/filename"],
    }


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
    return the paths (notebook 04, "Make the writer sturdy");
    an error leaves no output. Raises as ``write_sharded``, ValueError for a bad ``encoding``,
    VOCError for a bad split or pair."""
    check_task(task, encoding)

    def payloads() -> Iterator[bytes]:  # runs only once write_sharded has checked the names
        ids = split_order(voc_root, split, task, shuffle_seed)
        what = encoding if task == "segmentation" else task
        bar = tqdm(ids, f"{split} ({what})", unit="image", file=sys.stderr, disable=not progress)
        with bar:
            for image_id in bar:
                yield record_payload(voc_root, image_id, task, encoding)

    with output_folder(out_prefix):
        return write_sharded(out_prefix, payloads(), num_shards, compression, overwrite, index)
