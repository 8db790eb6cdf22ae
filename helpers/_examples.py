"""Examples without TensorFlow: their protobuf messages, and the keys of each record kind."""

import functools
import math
from typing import NamedTuple

from helpers._magic import looks_like

_SCHEMA = """name: "helpers/records.proto" package: "tensorflow" syntax: "proto3"
message_type { name: "BytesList" field { name: "value" number: 1 label: LABEL_REPEATED
  type: TYPE_BYTES } } message_type { name: "FloatList" field { name: "value" number: 1
  label: LABEL_REPEATED type: TYPE_FLOAT options { packed: true } } }
message_type { name: "Int64List" field { name: "value" number: 1 label: LABEL_REPEATED
  type: TYPE_INT64 options { packed: true jstype: JS_STRING } } }
message_type { name: "Feature" oneof_decl { name: "kind" }
  field { name: "bytes_list" number: 1 type_name: "BytesList" oneof_index: 0 }
  field { name: "float_list" number: 2 type_name: "FloatList" oneof_index: 0 }
  field { name: "int64_list" number: 3 type_name: "Int64List" oneof_index: 0 } }
message_type { name: "Features"
  field { name: "feature" number: 1 label: LABEL_REPEATED type_name: "FeatureEntry" }
  nested_type { name: "FeatureEntry" options { map_entry: true }
    field { name: "key" number: 1 type: TYPE_STRING } field { name: "value" number: 2
    type_name: "Feature" } } }
message_type { name: "FeatureList" field { name: "feature" number: 1 label: LABEL_REPEATED
  type_name: "Feature" } }
message_type { name: "FeatureLists"
  field { name: "feature_list" number: 1 label: LABEL_REPEATED type_name: "FeatureListEntry" }
  nested_type { name: "FeatureListEntry" options { map_entry: true }
    field { name: "key" number: 1 type: TYPE_STRING } field { name: "value" number: 2
    type_name: "FeatureList" } } }
message_type { name: "Example" field { name: "features" number: 1 type_name: "Features" } }
message_type { name: "SequenceExample" field { name: "context" number: 1 type_name: "Features" }
  field { name: "feature_lists" number: 2 type_name: "FeatureLists" } }
message_type { name: "TensorShapeProto" field { name: "dim" number: 2 label: LABEL_REPEATED
  type_name: "Dim" } field { name: "unknown_rank" number: 3 type: TYPE_BOOL }
  nested_type { name: "Dim" field { name: "size" number: 1 type: TYPE_INT64 }
    field { name: "name" number: 2 type: TYPE_STRING } } }
message_type { name: "TensorProto" field { name: "dtype" number: 1 type: TYPE_INT32 }
  field { name: "tensor_shape" number: 2 type_name: "TensorShapeProto" }
  field { name: "tensor_content" number: 4 type: TYPE_BYTES }
  field { name: "string_val" number: 8 label: LABEL_REPEATED type: TYPE_BYTES } }
"""

#: A TensorProto's dtype number: (TensorFlow's name, bytes per value; 0 for strings).
TENSOR_DTYPES = {
    1: ("float32", 4),
    2: ("float64", 8),
    3: ("int32", 4),
    4: ("uint8", 1),
    5: ("int16", 2),
    6: ("int8", 1),
    7: ("string", 0),
    8: ("complex64", 8),
    9: ("int64", 8),
    10: ("bool", 1),
    14: ("bfloat16", 2),
    17: ("uint16", 2),
    18: ("complex128", 16),
    19: ("float16", 2),
    22: ("uint32", 4),
    23: ("uint64", 8),
}
_LOOKS = {"PNG": "a PNG image", "JPEG": "a JPEG image", "GZIP": "GZIP data", "NPY": "a NumPy array"}
CORNERS = ("xmin", "xmax", "ymin", "ymax")  # of a box, as create_pascal_tf_record.py lists them


class Key(NamedTuple):
    """One key of a record kind: its list's kind, one value or ``many`` (e.g. one per object),
    and the ``default`` of a record that lacks it (None: every record has it)."""

    kind: str
    many: bool = False
    default: bytes | int | float | None = None


# The two schemas of a VOC segmentation pair (notebook 03): pixels, or DeepLab's
# build_voc2012_data.py keys (JPEG and PNG). The original guide has no filename: optional.
RAW = {
    "height": Key("int64"),
    "width": Key("int64"),
    "image_raw": Key("bytes"),
    "mask_raw": Key("bytes"),
    "filename": Key("bytes", default=b""),
}
ENCODED = {
    "image/encoded": Key("bytes"),
    "image/filename": Key("bytes"),
    "image/format": Key("bytes"),
    "image/height": Key("int64"),
    "image/width": Key("int64"),
    "image/channels": Key("int64"),
    "image/segmentation/class/encoded": Key("bytes"),
    "image/segmentation/class/format": Key("bytes"),
}
# The keys of create_pascal_tf_record.py (notebook 15): one value per image, a list per object.
DETECTION = {
    "image/height": Key("int64"),
    "image/width": Key("int64"),
    "image/filename": Key("bytes"),
    "image/source_id": Key("bytes"),
    "image/key/sha256": Key("bytes"),
    "image/encoded": Key("bytes"),
    "image/format": Key("bytes"),
    **{f"image/object/bbox/{corner}": Key("float", many=True) for corner in CORNERS},
    "image/object/class/text": Key("bytes", many=True),
    "image/object/class/label": Key("int64", many=True),
    "image/object/difficult": Key("int64", many=True),
    "image/object/truncated": Key("int64", many=True),
    "image/object/view": Key("bytes", many=True),
}
# One frame of a day (notebook 09): its JPEG, its time, and as many labels as the day's frames.
FRAME = {
    "frame/encoded": Key("bytes"),
    "frame/timestamp": Key("int64"),
    "frame/labels": Key("float", many=True),
}
SEGMENTATION = {"raw": RAW, "encoded": ENCODED}  # the schemas of convert_split's ``encoding``


def check_task(task: object, encoding: object = "raw") -> dict[str, Key]:
    """The keys of ``task``'s records (``encoding``'s, if segmentation); ValueError if unknown."""
    if task not in ("segmentation", "detection"):
        raise ValueError(f"task must be 'segmentation' or 'detection', got {task!r}")
    if task == "segmentation" and encoding not in SEGMENTATION:
        raise ValueError(f"encoding must be 'raw' or 'encoded', got {encoding!r}")
    return DETECTION if task == "detection" else SEGMENTATION[encoding]


def parsing_spec(keys: dict[str, Key], lengths: dict[str, int] | None = None) -> dict:
    """``{key: tf.io feature}`` of a record kind; a ``many`` key is ragged unless ``lengths`` has
    its fixed length."""
    import tensorflow as tf

    dtypes = {"int64": tf.int64, "float": tf.float32, "bytes": tf.string}
    lengths = lengths or {}
    spec = {}
    for name, key in keys.items():
        if not key.many:
            spec[name] = tf.io.FixedLenFeature([], dtypes[key.kind], key.default)
        elif name in lengths:
            spec[name] = tf.io.FixedLenFeature([lengths[name]], dtypes[key.kind])
        else:
            spec[name] = tf.io.RaggedFeature(dtypes[key.kind])
    return spec


@functools.cache
def message(name: str) -> type:
    """The class of ``tensorflow.<name>``, built in a pool of its own (apart from TensorFlow's)."""
    from google.protobuf import descriptor_pb2, message_factory, text_format

    file = text_format.Parse(_SCHEMA, descriptor_pb2.FileDescriptorProto())
    return message_factory.GetMessages([file])[f"tensorflow.{name}"]


def example_bytes(keys: dict[str, Key], values: dict[str, object]) -> bytes:
    """A ``tf.train.Example`` of a record kind as TensorFlow serializes it (a list per ``many``)."""
    example = message("Example")()
    for name, key in keys.items():
        chosen = getattr(example.features.feature[name], f"{key.kind}_list")
        chosen.SetInParent()  # an empty list is still a list of its kind
        chosen.value.extend(values[name] if key.many else [values[name]])
    return example.SerializeToString(deterministic=True)


def parse(payload: bytes) -> tuple[str, object]:
    """``(kind, message)``, kind "Example", "SequenceExample" or "TensorProto"; else ValueError."""
    from google.protobuf.message import DecodeError

    problem = "protobuf cannot parse it"
    for name in ("SequenceExample", "TensorProto"):  # the first that has all the fields wins
        try:
            parsed = message(name).FromString(payload)
        except DecodeError:
            continue
        size = parsed.ByteSize()
        parsed.DiscardUnknownFields()  # fields the message does not have: a PNG, text, ...
        if parsed.ByteSize() != size:
            problem = "protobuf, but with fields none of them has"
        elif name == "SequenceExample":
            return ("SequenceExample" if parsed.HasField("feature_lists") else "Example"), parsed
        elif _readable(parsed):  # one that tf.io.parse_tensor reads
            return "TensorProto", parsed
        else:
            shape = [dim.size for dim in parsed.tensor_shape.dim]
            what = f"dtype {parsed.dtype}, shape {shape}"
            problem = f"TensorProto of unknown dtype or wrong size: {what}"
    looks = _LOOKS.get(looks_like(payload))
    start = f"look like {looks}" if looks else f"start {payload[:8].hex()}"
    what = f"{len(payload):,} bytes that {start}"
    raise ValueError(f"not a tf.train.Example, SequenceExample or TensorProto: {what} ({problem})")


def _readable(tensor: object) -> bool:
    """Whether a TensorProto's dtype is known and its values fill its shape, known and >= 0."""
    shape = [dim.size for dim in tensor.tensor_shape.dim]
    known = not tensor.tensor_shape.unknown_rank and min(shape, default=0) >= 0
    if tensor.dtype not in TENSOR_DTYPES or not known:
        return False
    count = math.prod(shape)
    size = TENSOR_DTYPES[tensor.dtype][1]
    if size == 0:  # strings: one per value at most (TensorFlow pads the rest with b"")
        return not tensor.tensor_content and len(tensor.string_val) <= count
    return len(tensor.tensor_content) in (0, count * size)
