"""Describe the records of an unknown TFRecord file without TensorFlow (notebook 12)."""

import math
import os
from dataclasses import dataclass, field

from helpers._examples import TENSOR_DTYPES, parse
from helpers.records import RecordError, iter_records

_TENSOR_COLUMNS = ["dtype", "rank", "shape", "values/record", "present in"]
# How much of one record format_record shows: values, bytes and steps of a list.
_MAX_VALUES = 8
_MAX_BYTES = 32
_MAX_STEPS = 3


def _contents(feature: object) -> tuple[str, list]:
    """A Feature's type as a summary shows it (bytes, float, int64 or empty), and its values."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return "empty", []
    return kind.removesuffix("_list"), getattr(feature, kind).value


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
        dims = [_span(dim) for dim in self.dims[:low]]
        if low < high:  # the dimensions past the fewest are not in every record
            dims.append("...")
        return "[" + ", ".join(dims) + "]"

    def add(self, features, steps: bool = False) -> None:
        self.present += 1
        self.steps = _widen(self.steps, len(features)) if steps else None
        for feature in features:
            kind, values = _contents(feature)
            self.types.add(kind)
            self.values = _widen(self.values, len(values))
            if kind == "bytes":
                for value in values:
                    self.value_bytes = _widen(self.value_bytes, len(value))

    def add_tensor(self, tensor) -> None:
        shape = [dim.size for dim in tensor.tensor_shape.dim]
        self.present += 1
        self.ranks = _widen(self.ranks, len(shape))
        self.values = _widen(self.values, math.prod(shape))
        self.dims += [None] * (len(shape) - len(self.dims))  # the first record of a higher rank
        for i, size in enumerate(shape):
            self.dims[i] = _widen(self.dims[i], size)


@dataclass
class FileSummary:
    """What :func:`describe_file` found (``kind`` None: no records). Notebook 12."""

    source: str
    kind: str | None = None
    num_records: int = 0
    features: dict[str, _Feature] = field(default_factory=dict)
    feature_lists: dict[str, _Feature] = field(default_factory=dict)
    tensors: dict[str, _Feature] = field(default_factory=dict)


def describe_file(path: str | os.PathLike, compression: str | None = None) -> FileSummary:
    """The features, or tensor dtypes and shapes, of every record (notebook 12). RecordError for
    a damaged record, one of no known kind, or tensors mixed with Examples."""
    summary = FileSummary(str(path))
    for index, (offset, payload) in enumerate(iter_records(path, compression, offsets=True)):
        try:
            kind, message = parse(payload)
            if summary.kind and (kind == "TensorProto") != (summary.kind == "TensorProto"):
                raise ValueError(f"a {kind} in a file whose records so far are {summary.kind}s")
        except ValueError as error:
            raise RecordError(path, index, offset, str(error)) from None
        summary.num_records += 1
        summary.kind = "SequenceExample" if summary.kind == "SequenceExample" else kind
        if kind == "TensorProto":
            dtype = TENSOR_DTYPES[message.dtype][0]
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


def plural(n: int, word: str) -> str:
    """``1 record``, ``1,000 records``: a count as describe and the command line print it."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    return ["  " + "  ".join(map(str.ljust, row, widths)).rstrip() for row in rows]


def format_summary(summary: FileSummary) -> str:
    """A :class:`FileSummary` as tables (notebook 12)."""
    n = summary.num_records
    kind = summary.kind
    if kind is None:
        return f"{summary.source}: 0 records"
    what = "TensorProto (tf.io.serialize_tensor)" if kind == "TensorProto" else f"tf.train.{kind}"
    lines = [f"{summary.source}: {plural(n, 'record')} of {what}"]
    if kind == "TensorProto":
        rows = [
            [t.name, _span(t.ranks), t.shape, _span(t.values), f"{t.present:,} of {n:,}"]
            for t in summary.tensors.values()
        ]
        return "\n".join(lines + _table([_TENSOR_COLUMNS, *rows]))
    tables = [("feature", summary.features)]
    if kind == "SequenceExample":
        tables = [("context feature", summary.features), ("feature list", summary.feature_lists)]
    for title, features in tables:
        lists = title == "feature list"
        per = ["steps/record", "values/step"] if lists else ["values/record"]
        rows = [[title, "type", *per, "bytes/value", "present in"]]
        for f in features.values():
            spans = [f.steps, f.values, f.value_bytes] if lists else [f.values, f.value_bytes]
            rows.append([f.name, f.type, *map(_span, spans), f"{f.present:,} of {n:,}"])
        lines += _table(rows) if len(rows) > 1 else [f"  no {title}s"]
    return "\n".join(lines)


def _text(value: bytes | float | int) -> str:
    if isinstance(value, bytes) and len(value) > _MAX_BYTES:
        return f"<{len(value):,} bytes {value[:8].hex()}...>"
    return repr(float(f"{value:.7g}") if isinstance(value, float) else value)  # float32: 7 digits


def _values(feature) -> list[str]:
    """``[type, "[v1, v2, ...]"]`` of one Feature."""
    kind, values = _contents(feature)
    shown = [_text(value) for value in values[:_MAX_VALUES]]
    if len(values) > _MAX_VALUES:
        shown.append(f"... {len(values) - _MAX_VALUES:,} more")
    return [kind, "[" + ", ".join(shown) + "]"]


def format_record(payload: bytes) -> str:
    """A record as text, shortened (notebook 12); ValueError if it is of no known kind."""
    kind, message = parse(payload)
    if kind == "TensorProto":
        shape = [dim.size for dim in message.tensor_shape.dim]
        return f"TensorProto: dtype {TENSOR_DTYPES[message.dtype][0]}, shape {shape}"
    rows = [[name, *_values(f)] for name, f in sorted(message.context.feature.items())]
    if kind == "Example":
        return "\n".join([f"tf.train.Example with {plural(len(rows), 'feature')}", *_table(rows)])
    lists = sorted(message.feature_lists.feature_list.items())
    for name, feature_list in lists:
        steps = feature_list.feature
        rows += [[f"{name}[{i}]", *_values(step)] for i, step in enumerate(steps[:_MAX_STEPS])]
        if len(steps) > _MAX_STEPS or not steps:
            rest = f"{name}[{min(len(steps), _MAX_STEPS)}:]"
            rows.append([rest, "", f"({plural(len(steps), 'step')} in all)"])
    context = plural(len(message.context.feature), "context feature")
    head = f"tf.train.SequenceExample with {context} and {plural(len(lists), 'feature list')}"
    return "\n".join([head, *_table(rows)])
