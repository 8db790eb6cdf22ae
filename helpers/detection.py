"""VOC boxes as ``tf.train.Example`` records with the Object Detection API's keys (notebook 09)."""

import os
from typing import TYPE_CHECKING

from helpers._examples import DETECTION, parsing_spec
from helpers.voc_records import record_payload

if TYPE_CHECKING:
    import tensorflow as tf


def detection_example(root: str | os.PathLike, image_id: str) -> "tf.train.Example":
    """The Example of an image and its boxes, as ``create_pascal_tf_record.py`` writes it (notebook
    09). VOCError for a bad annotation or photo, a non-JPEG, or a size unlike the XML's."""
    import tensorflow as tf

    return tf.train.Example.FromString(record_payload(root, image_id, "detection"))


def detection_spec() -> dict:
    """The parsing spec of :func:`detection_example`'s records (notebook 09)."""
    return parsing_spec(DETECTION)


def parse_detection(serialized: "tf.Tensor") -> dict:
    """A :func:`detection_example` record as a detector's tensors (notebook 09).
    InvalidArgumentError if image keys miss or list lengths differ."""
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
