"""VOC detection boxes as ``tf.train.Example`` records with the Object Detection API's keys.

Notebook 09 builds and reads such records in its own cells; this module remembers the writer for
``python -m helpers convert-voc --task detection`` and a reader. Imports TensorFlow only inside.
"""

from __future__ import annotations

import hashlib
import os

from helpers import voc
from helpers.describe import _example_bytes

# The keys of create_pascal_tf_record.py: one value per image, then one value per object.
_IMAGE = {"image/height": "int64", "image/width": "int64", "image/filename": "bytes",
          "image/source_id": "bytes", "image/key/sha256": "bytes", "image/encoded": "bytes",
          "image/format": "bytes"}  # fmt: skip
_CORNERS = ("xmin", "xmax", "ymin", "ymax")
_OBJECTS = {**{f"image/object/bbox/{c}": "float" for c in _CORNERS},
            "image/object/class/text": "bytes", "image/object/class/label": "int64",
            "image/object/difficult": "int64", "image/object/truncated": "int64",
            "image/object/view": "bytes"}  # fmt: skip


def detection_example(root: str | os.PathLike, image_id: str):
    """The ``tf.train.Example`` of one image and its boxes, as the Object Detection API writes it.

    The keys and meanings of its ``create_pascal_tf_record.py``: ``image/height``, ``/width``,
    ``/filename`` and ``/source_id`` (both the XML's filename), ``/key/sha256`` (hex digest of the
    JPEG file), ``/encoded`` (the file's bytes, unchanged), ``/format`` (b"jpeg"), and one value
    per object in ``image/object/bbox/{xmin,xmax,ymin,ymax}`` (float: the XML's 1-based corner
    divided by the width or height), ``/class/text``, ``/class/label`` (1 aeroplane ... 20
    tvmonitor: the index in ``voc.VOC_CLASSES``), ``/difficult``, ``/truncated`` (0 or 1) and
    ``/view`` (the pose). No objects: empty lists. The JPEG is decoded in full first and its size
    checked against the XML. Shown in notebook 09 ("Build one Example with lists").

    Raises helpers.voc.VOCError naming the id and the file, for what ``voc.load_annotation`` and
    ``voc.load_image`` refuse, a photo that is not a JPEG file, or sizes that differ.
    """
    import tensorflow as tf

    return tf.train.Example.FromString(_detection_payload(root, image_id))


def _detection_payload(root: str | os.PathLike, image_id: str) -> bytes:
    """:func:`detection_example`, serialized (``deterministic=True``) without TensorFlow."""
    annotation = voc.load_annotation(root, image_id)
    height, width = voc.load_image(root, image_id).shape[:2]  # decodes every pixel
    path = voc.image_path(root, image_id)
    jpeg = voc._read_jpeg(root, image_id)
    if (height, width) != (annotation.height, annotation.width):
        sizes = f"{width}x{height}, annotation says {annotation.width}x{annotation.height}"
        raise voc.VOCError(f"photo of image id {image_id!r} is {sizes}: {path}")
    objects, name, digest = annotation.objects, annotation.filename.encode(), hashlib.sha256(jpeg)
    values = {"image/height": [height], "image/width": [width], "image/filename": [name],
              "image/source_id": [name], "image/key/sha256": [digest.hexdigest().encode()],
              "image/encoded": [jpeg], "image/format": [b"jpeg"],
              "image/object/class/text": [o.name.encode() for o in objects],
              "image/object/class/label": [voc.VOC_CLASSES.index(o.name) for o in objects],
              "image/object/difficult": [int(o.difficult) for o in objects],
              "image/object/truncated": [int(o.truncated) for o in objects],
              "image/object/view": [o.pose.encode() for o in objects]}  # fmt: skip
    for corner in _CORNERS:  # create_pascal_tf_record.py: float(obj['bndbox']['xmin']) / width:
        size = width if corner[0] == "x" else height  # the 1-based corner, nothing subtracted
        values[f"image/object/bbox/{corner}"] = [getattr(o, corner) / size for o in objects]
    return _example_bytes({key: (kind, values[key]) for key, kind in (_IMAGE | _OBJECTS).items()})


def detection_spec() -> dict:
    """The parsing spec of :func:`detection_example`'s records: one value or a list per key.

    ``FixedLenFeature([])`` for the image's keys (``image/key/sha256`` and ``image/source_id``
    without defaults, so a record of another schema fails loudly instead of parsing as an image
    with no boxes) and ``RaggedFeature`` for the per-object lists: notebook 09 ("Read the lists
    three ways") shows why: a 1-D tensor of each record's own length, no ``SparseTensor`` to
    densify as ``VarLenFeature`` gives, and ``FixedLenFeature`` would need one length for all.
    """
    import tensorflow as tf

    dtypes = {"int64": tf.int64, "float": tf.float32, "bytes": tf.string}
    spec = {key: tf.io.FixedLenFeature([], dtypes[kind]) for key, kind in _IMAGE.items()}
    return spec | {key: tf.io.RaggedFeature(dtypes[kind]) for key, kind in _OBJECTS.items()}


def parse_detection(serialized) -> dict:
    """One serialized record of :func:`detection_example` as the tensors a detector trains on.

    ``image`` uint8 (height, width, 3) (grayscale JPEGs too), ``boxes`` float32 (n, 4) in
    ``(ymin, xmin, ymax, xmax)`` order, as ``tf.image.draw_bounding_boxes`` wants, ``labels``
    int64 (n,) (1-20; 0 is free for padding), ``difficult`` and ``truncated`` bool (n,),
    ``filename`` a string. Shown in notebook 09 ("Stack the corners into boxes"); works in
    ``Dataset.map``, then ``padded_batch`` or ``ragged_batch`` batches images with different
    numbers of boxes ("Batch images with different numbers of boxes"). Raises
    tf.errors.InvalidArgumentError for a record without the image keys or with lists that differ
    in length.
    """
    import tensorflow as tf

    values = tf.io.parse_single_example(serialized, detection_spec())
    labels = values["image/object/class/label"]
    for key in _OBJECTS:
        message = f"{key} has another number of values than image/object/class/label"
        tf.debugging.assert_equal(tf.size(values[key]), tf.size(labels), message=message)
    corners = [values[f"image/object/bbox/{c}"] for c in ("ymin", "xmin", "ymax", "xmax")]
    return {"image": tf.io.decode_jpeg(values["image/encoded"], channels=3),
            "boxes": tf.reshape(tf.stack(corners, axis=-1), [-1, 4]), "labels": labels,
            "difficult": values["image/object/difficult"] > 0,
            "truncated": values["image/object/truncated"] > 0,
            "filename": values["image/filename"]}  # fmt: skip
