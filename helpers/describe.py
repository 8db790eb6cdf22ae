"""Describe the records of an unknown TFRecord file without TensorFlow (notebook 06)."""

import functools
import math
import os
from dataclasses import dataclass, field

from helpers.records import RecordError, iter_records

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
_DTYPES = {
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
_TYPES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64", None: "empty"}
_MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"\x1f\x8b": "GZIP data"}
_TENSOR_COLUMNS = ["dtype", "rank", "shape", "values/record", "present in"]
_MAX_VALUES, _MAX_BYTES, _MAX_STEPS = 8, 32, 3  # how much of one record format_record shows


@functools.cache
def _message(name: str) -> type:
    """The class of ``tensorflow.<name>``, built in a pool of its own (apart from TensorFlow's)."""
    from google.protobuf import descriptor_pb2, message_factory, text_format

    file = text_format.Parse(_SCHEMA, descriptor_pb2.FileDescriptorProto())
    return message_factory.GetMessages([file])[f"tensorflow.{name}"]


def _example_bytes(features: dict[str, tuple[str, list]]) -> bytes:
    """A ``tf.train.Example`` from ``{key: (kind, values)}`` as TensorFlow serializes it."""
    example = _message("Example")()
    for key, (kind, values) in features.items():
        chosen = getattr(example.features.feature[key], f"{kind}_list")
        chosen.SetInParent()  # an empty list is still a list of its kind
        chosen.value.extend(values)
    return example.SerializeToString(deterministic=True)


def _parse(payload: bytes) -> tuple[str, object]:
    """``(kind, message)``, kind "Example", "SequenceExample" or "TensorProto" (notebook 06, "Tell
    Example and SequenceExample apart"); ValueError if the payload is none of them."""
    from google.protobuf.message import DecodeError

    parsed = {}
    for name in ("SequenceExample", "TensorProto"):
        try:
            message = _message(name).FromString(payload)
        except DecodeError:
            continue
        size = message.ByteSize()
        message.DiscardUnknownFields()  # fields the message does not have: a PNG, text, ...
        parsed[name] = message.ByteSize() == size and message
    if sequence := parsed.get("SequenceExample"):
        return ("SequenceExample" if sequence.HasField("feature_lists") else "Example"), sequence
    problem = "protobuf, but with fields none of them has" if parsed else "protobuf cannot parse it"
    if tensor := parsed.get("TensorProto"):  # is it one that tf.io.parse_tensor reads?
        shape, content = [dim.size for dim in tensor.tensor_shape.dim], len(tensor.tensor_content)
        (dtype, size), n = _DTYPES.get(tensor.dtype, (None, 0)), math.prod(shape)
        fits = not content and len(tensor.string_val) <= n if not size else content in (0, n * size)
        if dtype and fits and min(shape, default=0) >= 0 and not tensor.tensor_shape.unknown_rank:
            return "TensorProto", tensor
        problem = f"TensorProto of unknown dtype or wrong size: dtype {tensor.dtype}, shape {shape}"
    looks = [f"look like {name}" for magic, name in _MAGIC.items() if payload.startswith(magic)]
    what = f"{len(payload):,} bytes that " + (looks or [f"start {payload[:8].hex()}"])[0]
    raise ValueError(f"not a tf.train.Example, SequenceExample or TensorProto: {what} ({problem})")


def _widen(span: tuple[int, int] | None, value: int) -> tuple[int, int]:
    return (value, value) if span is None else (min(span[0], value), max(span[1], value))


@dataclass
class _Feature:
    """A feature, feature list or tensor dtype across a file; spans are (fewest, most)."""

    name: str
    types: set[str] = field(default_factory=set)
    present: int = 0
    values: tuple[int, int] | None = None
    value_bytes: tuple[int, int] | None = None
    steps: tuple[int, int] | None = None
    ranks: tuple[int, int] | None = None
    dims: list[tuple[int, int]] = field(default_factory=list)

    @property
    def type(self) -> str:
        return "|".join(sorted(self.types))

    @property
    def shape(self) -> str:
        low, high = self.ranks or (0, 0)
        return "[" + ", ".join([*map(_span, self.dims[:low])] + ["..."] * (low < high)) + "]"

    def add(self, features, steps: bool = False) -> None:
        self.present += 1
        self.steps = _widen(self.steps, len(features)) if steps else None
        for feature in features:
            kind = feature.WhichOneof("kind")
            self.types.add(_TYPES[kind])
            values = getattr(feature, kind).value if kind else ()
            self.values = _widen(self.values, len(values))
            for value in values if kind == "bytes_list" else ():
                self.value_bytes = _widen(self.value_bytes, len(value))

    def add_tensor(self, tensor) -> None:
        shape = [dim.size for dim in tensor.tensor_shape.dim]
        self.present, self.ranks = self.present + 1, _widen(self.ranks, len(shape))
        self.values = _widen(self.values, math.prod(shape))
        padded = self.dims + [None] * (len(shape) - len(self.dims))
        self.dims = [d if i >= len(shape) else _widen(d, shape[i]) for i, d in enumerate(padded)]


@dataclass
class FileSummary:
    """What :func:`describe_file` found (``kind`` None: no records). Notebook 06."""

    source: str
    kind: str | None = None
    num_records: int = 0
    features: dict[str, _Feature] = field(default_factory=dict)
    feature_lists: dict[str, _Feature] = field(default_factory=dict)
    tensors: dict[str, _Feature] = field(default_factory=dict)


def describe_file(path: str | os.PathLike, compression: str | None = None) -> FileSummary:
    """Infer the features, or the tensors' dtypes and shapes, of every record (notebook 06, "Infer
    the features of every record"). RecordError (file, record, offset) for a damaged record, one
    that is no Example, SequenceExample or TensorProto, or tensors mixed with the others."""
    summary = FileSummary(str(path))
    for index, (offset, payload) in enumerate(iter_records(path, compression, offsets=True)):
        try:
            kind, message = _parse(payload)
            if summary.kind and (kind == "TensorProto") != (summary.kind == "TensorProto"):
                raise ValueError(f"a {kind} in a file whose records so far are {summary.kind}s")
        except ValueError as error:
            raise RecordError(path, index, offset, str(error)) from None
        summary.num_records += 1
        summary.kind = "SequenceExample" if summary.kind == "SequenceExample" else kind
        if kind == "TensorProto":
            dtype = _DTYPES[message.dtype][0]
            summary.tensors.setdefault(dtype, _Feature(dtype)).add_tensor(message)
            continue
        for name, feature in message.context.feature.items():
            summary.features.setdefault(name, _Feature(name)).add([feature])
        for name, feature_list in message.feature_lists.feature_list.items():
            summary.feature_lists.setdefault(name, _Feature(name)).add(feature_list.feature, True)
    for table in ("features", "feature_lists", "tensors"):
        setattr(summary, table, dict(sorted(getattr(summary, table).items())))
    return summary


def _span(pair: tuple[int, int] | None) -> str:
    return "-" if pair is None else "-".join(f"{n:,}" for n in sorted(set(pair)))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    return ["  " + "  ".join(map(str.ljust, row, widths)).rstrip() for row in rows]


def format_summary(summary: FileSummary) -> str:
    """A :class:`FileSummary` as tables (notebook 06, "Infer the features of every record")."""
    n, kind = summary.num_records, summary.kind
    if kind is None:
        return f"{summary.source}: 0 records"
    what = "TensorProto (tf.io.serialize_tensor)" if kind == "TensorProto" else f"tf.train.{kind}"
    lines = [f"{summary.source}: {_plural(n, 'record')} of {what}"]
    if kind == "TensorProto":
        rows = [
            [t.name, _span(t.ranks), t.shape, _span(t.values), f"{t.present:,} of {n:,}"]
            for t in summary.tensors.values()
        ]
        return "\n".join(lines + _table([_TENSOR_COLUMNS, *rows]))
    tables = [("context feature" if kind == "SequenceExample" else "feature", summary.features)]
    for title, features in tables + [("feature list", summary.feature_lists)] * (kind != "Example"):
        per = "steps/record|values/step" if title == "feature list" else "values/record"
        rows = [f"{title}|type|{per}|bytes/value|present in".split("|")]
        for f in features.values():
            spans = [*[_span(f.steps)] * ("steps" in per), _span(f.values), _span(f.value_bytes)]
            rows.append([f.name, f.type, *spans, f"{f.present:,} of {n:,}"])
        lines += _table(rows) if len(rows) > 1 else [f"  no {title}s"]
    return "\n".join(lines)


def _text(value: bytes | float | int) -> str:
    if isinstance(value, bytes) and len(value) > _MAX_BYTES:
        return f"<{len(value):,} bytes {value[:8].hex()}...>"
    return repr(float(f"{value:.7g}") if isinstance(value, float) else value)  # float32: 7 digits


def _values(feature) -> list[str]:
    """``[type, "[v1, v2, ...]"]`` of one Feature."""
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value) if kind else []
    shown = [_text(value) for value in values[:_MAX_VALUES]]
    shown += [f"... {len(values) - _MAX_VALUES:,} more"] if len(values) > _MAX_VALUES else []
    return [_TYPES[kind], "[" + ", ".join(shown) + "]"]


def format_record(payload: bytes) -> str:
    """One serialized Example, SequenceExample or TensorProto as text, shortened (notebook 06,
    "Infer the features of every record"). ValueError if the payload is none of these."""
    kind, message = _parse(payload)
    if kind == "TensorProto":
        shape = [dim.size for dim in message.tensor_shape.dim]
        return f"TensorProto: dtype {_DTYPES[message.dtype][0]}, shape {shape}"
    rows = [[name, *_values(f)] for name, f in sorted(message.context.feature.items())]
    if kind == "Example":
        return "\n".join([f"tf.train.Example with {_plural(len(rows), 'feature')}", *_table(rows)])
    lists = sorted(message.feature_lists.feature_list.items())
    for name, feature_list in lists:
        steps = feature_list.feature
        rows += [[f"{name}[{i}]", *_values(step)] for i, step in enumerate(steps[:_MAX_STEPS])]
        if len(steps) > _MAX_STEPS or not steps:
            rest = f"{name}[{min(len(steps), _MAX_STEPS)}:]"
            rows.append([rest, "", f"({_plural(len(steps), 'step')} in all)"])
    context = _plural(len(message.context.feature), "context feature")
    head = f"tf.train.SequenceExample with {context} and {_plural(len(lists), 'feature list')}"
    return "\n".join([head, *_table(rows)])
