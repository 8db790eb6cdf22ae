"""VOC boxes as ``tf.train.Example`` records with the Object Detection API's keys (notebook 09)."""

import hashlib
import os

from helpers import voc
from helpers.describe import _example_bytes

# The keys of create_pascal_tf_record.py: one value per image, then one value per object.
_IMAGE = {
    "image/height": "int64",
    "image/width": "int64",
    "image/filename": "bytes",
    "image/source_id": "bytes",
    "image/key/sha256": "bytes",
    "image/encoded": "bytes",
    "image/format": "bytes",
}
_CORNERS = ("xmin", "xmax", "ymin", "ymax")
_OBJECTS = {
    **{f"image/object/bbox/{c}": "float" for c in _CORNERS},
    "image/object/class/text": "bytes",
    "image/object/class/label": "int64",
    "image/object/difficult": "int64",
    "image/object/truncated": "int64",
    "image/object/view": "bytes",
}


def detection_example(root: str | os.PathLike, image_id: str):
    """The Example of an image and its boxes, as ``create_pascal_tf_record.py`` writes it (notebook
    09, "Build one Example with lists"). VOCError naming the id and file for a bad annotation or
    photo (``voc.load_annotation``, ``voc.load_image``), a non-JPEG, or a size unlike the XML's."""
    import tensorflow as tf

    return tf.train.Example.FromString(_detection_payload(root, image_id))


def _detection_payload(root: str | os.PathLike, image_id: str) -> bytes:
    """:func:`detection_example`, serialized without TensorFlow."""
    annotation = voc.load_annotation(root, image_id)
    height, width = voc.load_image(root, image_id).shape[:2]  # decodes every pixel
    path, jpeg = voc.image_path(root, image_id), voc._read_jpeg(root, image_id)
    if (height, width) != (annotation.height, annotation.width):
        sizes = f"{width}x{height}, annotation says {annotation.width}x{annotation.height}"
        raise voc.VOCError(f"photo of image id {image_id!r} is {sizes}: {path}")
    objects, name, digest = annotation.objects, annotation.filename.encode(), hashlib.sha256(jpeg)
    values = {
        "image/height": [height],
        "image/width": [width],
        "image/filename": [name],
        "image/source_id": [name],
        "image/key/sha256": [digest.hexdigest().encode()],
        "image/encoded": [jpeg],
        "image/format": [b"jpeg"],
        "image/object/class/text": [o.name.encode() for o in objects],
        "image/object/class/label": [voc.VOC_CLASSES.index(o.name) for o in objects],
        "image/object/difficult": [int(o.difficult) for o in objects],
        "image/object/truncated": [int(o.truncated) for o in objects],
        "image/object/view": [o.pose.encode() for o in objects],
    }
    for corner in _CORNERS:  # create_pascal_tf_record.py: float(obj['bndbox']['xmin']) / width:
        size = width if corner[0] == "x" else height  # the 1-based corner, nothing subtracted
        values[f"image/object/bbox/{corner}"] = [getattr(o, corner) / size for o in objects]
    return _example_bytes({key: (kind, values[key]) for key, kind in (_IMAGE | _OBJECTS).items()})


def detection_spec() -> dict:
    """The parsing spec of :func:`detection_example`'s records: ``FixedLenFeature([])`` (no default)
    per image key, ``RaggedFeature`` per object list (notebook 09, "Read the lists three ways")."""
    import tensorflow as tf

    dtypes = {"int64": tf.int64, "float": tf.float32, "bytes": tf.string}
    spec = {key: tf.io.FixedLenFeature([], dtypes[kind]) for key, kind in _IMAGE.items()}
    return spec | {key: tf.io.RaggedFeature(dtypes[kind]) for key, kind in _OBJECTS.items()}


def parse_detection(serialized) -> dict:
    """A :func:`detection_example` record as the tensors a detector trains on (notebook 09, "Stack
    the corners into boxes"). InvalidArgumentError if image keys miss or list lengths differ."""
    import tensorflow as tf

    values = tf.io.parse_single_example(serialized, detection_spec())
    labels = values["image/object/class/label"]
    for key in _OBJECTS:
        message = f"{key} has another number of values than image/object/class/label"
        tf.debugging.assert_equal(tf.size(values[key]), tf.size(labels), message=message)
    corners = [values[f"image/object/bbox/{c}"] for c in ("ymin", "xmin", "ymax", "xmax")]
    return {
        "image": tf.io.decode_jpeg(values["image/encoded"], channels=3),
        "boxes": tf.reshape(tf.stack(corners, axis=-1), [-1, 4]),
        "labels": labels,
        "difficult": values["image/object/difficult"] > 0,
        "truncated": values["image/object/truncated"] > 0,
        "filename": values["image/filename"],
    }
