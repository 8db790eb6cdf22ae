"""Describe the features of an unknown TFRecord file, in plain Python (no TensorFlow).

Shown in notebook 06 (``06_inspect_tfrecord_files.ipynb``), sections "Infer the features
of every record", "Tell Example and SequenceExample apart" (the rule :func:`_parse`
applies) and "Let python -m helpers do it" (the command line that uses this module).

Why a protobuf schema is written out here: importing ``tf.train.SequenceExample``'s
module (``tensorflow.core.example.example_pb2``) imports all of TensorFlow, which
``python -m helpers inspect`` should not wait for. So the messages of TensorFlow's
``example.proto`` and ``feature.proto`` that a SequenceExample is made of are written
below in protobuf text format, and protobuf builds the class from them (``text_format``,
a private ``DescriptorPool``, ``message_factory``): the same wire format, as
``tests/test_inspect.py`` checks against ``tf.train``'s own descriptors.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from helpers.records import RecordError, iter_records

_SCHEMA = """name: "helpers/sequence_example.proto" package: "tensorflow" syntax: "proto3"
message_type { name: "BytesList" field { name: "value" number: 1 label: LABEL_REPEATED
  type: TYPE_BYTES } }
message_type { name: "FloatList" field { name: "value" number: 1 label: LABEL_REPEATED
  type: TYPE_FLOAT options { packed: true } } }
message_type { name: "Int64List" field { name: "value" number: 1 label: LABEL_REPEATED
  type: TYPE_INT64 options { packed: true jstype: JS_STRING } } }
message_type { name: "Feature" oneof_decl { name: "kind" }
  field { name: "bytes_list" number: 1 type_name: "BytesList" oneof_index: 0 }
  field { name: "float_list" number: 2 type_name: "FloatList" oneof_index: 0 }
  field { name: "int64_list" number: 3 type_name: "Int64List" oneof_index: 0 } }
message_type { name: "Features"
  field { name: "feature" number: 1 label: LABEL_REPEATED type_name: "FeatureEntry" }
  nested_type { name: "FeatureEntry" options { map_entry: true }
    field { name: "key" number: 1 type: TYPE_STRING }
    field { name: "value" number: 2 type_name: "Feature" } } }
message_type { name: "FeatureList"
  field { name: "feature" number: 1 label: LABEL_REPEATED type_name: "Feature" } }
message_type { name: "FeatureLists"
  field { name: "feature_list" number: 1 label: LABEL_REPEATED type_name: "FeatureListEntry" }
  nested_type { name: "FeatureListEntry" options { map_entry: true }
    field { name: "key" number: 1 type: TYPE_STRING }
    field { name: "value" number: 2 type_name: "FeatureList" } } }
message_type { name: "SequenceExample"
  field { name: "context" number: 1 type_name: "Features" }
  field { name: "feature_lists" number: 2 type_name: "FeatureLists" } }
"""
_TYPES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64", None: "empty"}
_MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"\x1f\x8b": "GZIP data"}
_MAX_VALUES, _MAX_BYTES, _MAX_STEPS = 8, 32, 3  # how much of one record format_record shows


@functools.cache
def _sequence_example() -> type:
    """The class of tensorflow.SequenceExample, built on first use in a pool of its own
    (so that it never clashes with TensorFlow's classes when both are loaded)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

    pool = descriptor_pool.DescriptorPool()
    pool.Add(text_format.Parse(_SCHEMA, descriptor_pb2.FileDescriptorProto()))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.SequenceExample"))


def _parse(payload: bytes) -> tuple[str, object]:
    """``("Example" or "SequenceExample", the payload parsed as a SequenceExample)``.

    Raises ValueError if protobuf cannot parse it or finds fields neither message has.
    """
    from google.protobuf.message import DecodeError

    try:
        message = _sequence_example().FromString(payload)
        size = message.ByteSize()
        message.DiscardUnknownFields()  # fields neither message has: a PNG, text, ...
        problem = message.ByteSize() != size and "protobuf, but with fields neither message has"
    except DecodeError:
        problem = "protobuf could not parse it"
    if problem:
        looks = [f"look like {name}" for magic, name in _MAGIC.items() if payload.startswith(magic)]
        what = f"{len(payload):,} bytes that " + (looks or [f"start {payload[:8].hex()}"])[0]
        raise ValueError(f"not a tf.train.Example or SequenceExample: {what} ({problem})")
    return ("SequenceExample" if message.HasField("feature_lists") else "Example"), message


def _widen(span: tuple[int, int] | None, value: int) -> tuple[int, int]:
    return (value, value) if span is None else (min(span[0], value), max(span[1], value))


@dataclass
class _Feature:
    """One feature or feature list across a file: ``types`` seen, in how many records it is
    ``present``, and (fewest, most) ``values`` per record (per step in a list), bytes per
    bytes value (``value_bytes``) and ``steps`` per record (lists only); None if none seen."""

    name: str
    types: set[str] = field(default_factory=set)
    present: int = 0
    values: tuple[int, int] | None = None
    value_bytes: tuple[int, int] | None = None
    steps: tuple[int, int] | None = None

    @property
    def type(self) -> str:
        """``int64``, ``float``, ``bytes`` or ``empty``; joined by ``|`` if records disagree."""
        return "|".join(sorted(self.types))

    def add(self, feature) -> None:
        kind = feature.WhichOneof("kind")
        self.types.add(_TYPES[kind])
        values = getattr(feature, kind).value if kind else ()
        self.values = _widen(self.values, len(values))
        for value in values if kind == "bytes_list" else ():
            self.value_bytes = _widen(self.value_bytes, len(value))


@dataclass
class FileSummary:
    """What :func:`describe_file` found: the ``source`` file, ``kind`` (``"Example"``,
    ``"SequenceExample"``, None for no records), ``num_records``, and by name the
    ``features`` (a SequenceExample's context) and ``feature_lists``, each with ``type``,
    ``present``, ``values``, ``value_bytes`` (and ``steps`` for lists). Shown in notebook 06."""

    source: str
    kind: str | None = None
    num_records: int = 0
    features: dict[str, _Feature] = field(default_factory=dict)
    feature_lists: dict[str, _Feature] = field(default_factory=dict)


def describe_file(path: str | os.PathLike, compression: str | None = None) -> FileSummary:
    """Read every record of a TFRecord file and infer its features, without TensorFlow.

    ``compression`` is None, "GZIP" or "ZLIB" as for :func:`helpers.records.iter_records`.
    Shown in notebook 06, section "Infer the features of every record".

    Raises:
        RecordError: naming the file, record index and offset, if a record is damaged,
            or intact but neither a tf.train.Example nor a SequenceExample.
        FileNotFoundError: if the file does not exist.
    """
    summary = FileSummary(str(path))
    for index, (offset, payload) in enumerate(iter_records(path, compression, offsets=True)):
        try:
            kind, message = _parse(payload)
        except ValueError as error:
            raise RecordError(path, index, offset, str(error)) from None
        summary.num_records += 1
        summary.kind = "SequenceExample" if summary.kind == "SequenceExample" else kind
        for name, feature in message.context.feature.items():
            tally = summary.features.setdefault(name, _Feature(name))
            tally.present += 1
            tally.add(feature)
        for name, feature_list in message.feature_lists.feature_list.items():
            tally = summary.feature_lists.setdefault(name, _Feature(name))
            tally.present += 1
            tally.steps = _widen(tally.steps, len(feature_list.feature))
            for step in feature_list.feature:
                tally.add(step)
    summary.features = dict(sorted(summary.features.items()))
    summary.feature_lists = dict(sorted(summary.feature_lists.items()))
    return summary


def _span(pair: tuple[int, int] | None) -> str:
    low, high = pair or (None, None)
    return "-" if pair is None else f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    return ["  " + "  ".join(map(str.ljust, row, widths)).rstrip() for row in rows]


def format_summary(summary: FileSummary) -> str:
    """A :class:`FileSummary` as tables: per feature (and feature list) its type, values per
    record (``1`` or ``3-7``), size range of single bytes values, records that have it, and
    for lists steps per record. Shown in notebook 06, section "Infer the features of every
    record"; ``python -m helpers inspect`` prints it."""
    n, is_sequence = summary.num_records, summary.kind == "SequenceExample"
    if summary.kind is None:
        return f"{summary.source}: 0 records"
    lines = [f"{summary.source}: {_plural(n, 'record')} of tf.train.{summary.kind}"]
    tables = [("context feature" if is_sequence else "feature", summary.features)]
    for title, features in tables + ([("feature list", summary.feature_lists)] * is_sequence):
        rows = [f"{title}|type|steps/record|values/step|bytes/value|present in".split("|")]
        for f in features.values():
            spans = [_span(span) for span in (f.steps, f.values, f.value_bytes)]
            rows.append([f.name, f.type, *spans, f"{f.present:,} of {n:,}"])
        if title != "feature list":  # no steps column; values are per record
            rows = [[row[0], row[1], *row[3:]] for row in rows]
            rows[0][2] = "values/record"
        lines += _table(rows) if len(rows) > 1 else [f"  no {title}s"]
    return "\n".join(lines)


def _text(value: bytes | float | int) -> str:
    if isinstance(value, bytes) and len(value) > _MAX_BYTES:
        return f"<{len(value):,} bytes {value[:8].hex()}...>"
    return repr(float(f"{value:.7g}") if isinstance(value, float) else value)  # float32: 7 digits


def _values(feature) -> list[str]:
    """``[type, "[v1, v2, ...]"]`` of one Feature, long bytes as ``<size bytes hex...>``."""
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value) if kind else []
    shown = [_text(value) for value in values[:_MAX_VALUES]]
    shown += [f"... {len(values) - _MAX_VALUES:,} more"] if len(values) > _MAX_VALUES else []
    return [_TYPES[kind], "[" + ", ".join(shown) + "]"]


def format_record(payload: bytes) -> str:
    """One serialized Example or SequenceExample as text, a row per feature sorted by name.

    Bytes values over 32 bytes show as ``<N bytes 0a1b2c...>``, at most 8 values per feature
    and 3 steps per feature list (``frames[0]``...). Raises ValueError if the payload is
    neither kind. Shown in notebook 06, section "Infer the features of every record";
    ``python -m helpers inspect --show N`` prints it."""
    kind, message = _parse(payload)
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
