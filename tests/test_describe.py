"""helpers.describe: what Example, SequenceExample and serialized-tensor files hold, and limits."""

import subprocess
import sys

import numpy as np
import pytest
from builders import example, sequence_example

from helpers import describe as hi
from helpers._examples import TENSOR_DTYPES, message, parse
from helpers.notebook import prepare_tensorflow
from helpers.records import RecordError, iter_records, write_records

prepare_tensorflow(deterministic_ops=False)
import tensorflow as tf  # noqa: E402  (after prepare_tensorflow, as everywhere in the project)


def write(path, payloads):
    write_records(path, payloads)
    return path


@pytest.fixture
def example_file(tmp_path):
    payloads = [
        example({"id": [0], "image": [bytes(300)], "label": [1, 2], "score": [0.5]}),
        example({"id": [1], "image": [bytes(200)], "label": [3, 4, 5, 6]}),
        example({"id": [2], "image": [bytes(100), bytes(50)], "label": []}),
    ]
    return write(tmp_path / "examples.tfrecord", payloads)


@pytest.fixture
def sequence_file(tmp_path):
    frame = [b"f" * 64]
    payloads = [
        sequence_example(
            {"day": [b"monday"], "fps": [25]}, {"frames": [frame] * 3, "speed": [[1.5, 2.5]] * 3}
        ),
        sequence_example({"day": [b"tuesday"]}, {"frames": [frame] * 5}),
    ]
    return write(tmp_path / "sequences.tfrecord", payloads)


def test_schema_matches_tensorflows_messages_field_for_field():
    from google.protobuf import descriptor_pb2

    pool = message("SequenceExample").DESCRIPTOR.file.pool
    names = ["SequenceExample", "Features", "Feature", "FeatureList", "FeatureLists"]
    for name in names + ["BytesList", "FloatList", "Int64List"]:
        ours = descriptor_pb2.DescriptorProto()
        theirs = descriptor_pb2.DescriptorProto()
        pool.FindMessageTypeByName(f"tensorflow.{name}").CopyToProto(ours)
        getattr(tf.train, name).DESCRIPTOR.CopyToProto(theirs)
        assert ours == theirs, name


def test_payloads_written_by_tensorflow_read_back_identically():
    payload = sequence_example({"day": [b"x"], "n": [7]}, {"v": [[1.0, 2.0], [3.0]], "w": []})
    kind, message = parse(payload)
    assert kind == "SequenceExample"
    assert message.SerializeToString(deterministic=True) == payload


def test_the_two_kinds_parse_as_each_other_in_protobuf_but_are_told_apart():
    plain = example({"a": [1]})
    sequence = sequence_example({"a": [1]}, {"b": [[1], [2]]})
    # The trap: protobuf happily parses each as the other kind ...
    assert tf.train.SequenceExample.FromString(plain).context.feature["a"].int64_list.value == [1]
    assert tf.train.Example.FromString(sequence).features.feature["a"].int64_list.value == [1]
    # ... the rule in _parse does not fall for it.
    assert parse(plain)[0] == "Example"
    assert parse(sequence)[0] == "SequenceExample"


def test_describe_example_file_types_value_ranges_and_presence(example_file):
    summary = hi.describe_file(example_file)
    assert (summary.kind, summary.num_records, summary.source) == ("Example", 3, str(example_file))
    assert list(summary.features) == ["id", "image", "label", "score"]
    image, label, score = (summary.features[k] for k in ("image", "label", "score"))
    assert (image.type, image.values, image.value_bytes, image.present) == (
        "bytes",
        (1, 2),
        (50, 300),
        3,
    )
    assert (label.type, label.values, label.value_bytes, label.present) == (
        "int64",
        (0, 4),
        None,
        3,
    )
    assert (score.type, score.values, score.present, score.steps) == ("float", (1, 1), 1, None)
    assert summary.feature_lists == {}


def test_format_summary_shows_one_row_per_feature(example_file):
    lines = hi.format_summary(hi.describe_file(example_file)).splitlines()
    assert lines[0] == f"{example_file}: 3 records of tf.train.Example"
    assert lines[1].split() == ["feature", "type", "values/record", "bytes/value", "present", "in"]
    assert lines[3].split() == ["image", "bytes", "1-2", "50-300", "3", "of", "3"]
    assert lines[4].split() == ["label", "int64", "0-4", "-", "3", "of", "3"]
    assert lines[5].split() == ["score", "float", "1", "-", "1", "of", "3"]


def test_describe_sequence_example_file(sequence_file):
    summary = hi.describe_file(sequence_file)
    assert (summary.kind, summary.num_records) == ("SequenceExample", 2)
    assert summary.features["day"].value_bytes == (6, 7)
    assert summary.features["fps"].present == 1
    frames = summary.feature_lists["frames"]
    speed = summary.feature_lists["speed"]
    assert (frames.type, frames.steps, frames.values, frames.value_bytes, frames.present) == (
        "bytes",
        (3, 5),
        (1, 1),
        (64, 64),
        2,
    )
    assert (speed.type, speed.steps, speed.values, speed.value_bytes, speed.present) == (
        "float",
        (3, 3),
        (2, 2),
        None,
        1,
    )
    rows = [line.split() for line in hi.format_summary(summary).splitlines()]
    assert ["context", "feature", "type", "values/record", "bytes/value", "present", "in"] in rows
    assert ["day", "bytes", "1", "6-7", "2", "of", "2"] in rows
    assert [
        "feature",
        "list",
        "type",
        "steps/record",
        "values/step",
        "bytes/value",
        "present",
        "in",
    ] in rows
    assert ["frames", "bytes", "3-5", "1", "64", "2", "of", "2"] in rows


def test_a_file_with_any_sequence_example_is_a_sequence_example_file(tmp_path):
    payloads = [
        example({"a": [1]}),
        sequence_example({"a": [2]}, {"b": [[1]]}),
        example({"a": [3]}),
    ]
    summary = hi.describe_file(write(tmp_path / "mixed.tfrecord", payloads))
    assert summary.kind == "SequenceExample"
    assert (summary.features["a"].present, summary.feature_lists["b"].present) == (3, 1)


def test_disagreeing_types_and_empty_features_are_reported(tmp_path):
    empty = tf.train.Example(features=tf.train.Features(feature={"x": tf.train.Feature()}))
    payloads = [example({"x": [1]}), example({"x": [b"one"]}), empty.SerializeToString()]
    summary = hi.describe_file(write(tmp_path / "mixed.tfrecord", payloads))
    assert summary.features["x"].type == "bytes|empty|int64"
    assert summary.features["x"].values == (0, 1)
    assert ["x", "bytes|empty|int64", "0-1", "3", "3", "of", "3"] in [
        line.split() for line in hi.format_summary(summary).splitlines()
    ]


def test_no_records_and_no_features(tmp_path):
    summary = hi.describe_file(write(tmp_path / "empty.tfrecord", []))
    assert (summary.kind, summary.num_records) == (None, 0)
    assert hi.format_summary(summary) == f"{tmp_path / 'empty.tfrecord'}: 0 records"
    summary = hi.describe_file(write(tmp_path / "bare.tfrecord", [b"", example({})]))
    assert (summary.kind, summary.num_records) == ("Example", 2)
    assert hi.format_summary(summary).splitlines()[1:] == ["  no features"]


@pytest.mark.parametrize(
    "junk, says",
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(40), "48 bytes that look like a PNG image"),
        (b"\xff\xd8\xff\xe0" + bytes(40), "look like a JPEG image"),
        (b"hello, world", "12 bytes that start 68656c6c6f2c2077"),
        (b"\x28\x01", "fields none of them has"),  # valid protobuf: field 5, unknown to all
        (b"\x18\x05", "fields none of them has"),  # field 3: TensorProto's version_number, unused
    ],
)
def test_a_payload_that_is_neither_names_file_record_and_offset(tmp_path, junk, says):
    path = write(tmp_path / "mixed.tfrecord", [example({"a": [1]}), example({"a": [2]}), junk])
    offsets = [offset for offset, _ in iter_records(path, offsets=True)]
    with pytest.raises(RecordError) as caught:
        hi.describe_file(path)
    error = caught.value
    assert (error.path, error.index, error.offset) == (str(path), 2, offsets[2])
    assert says in error.reason
    assert "not a tf.train.Example, SequenceExample or TensorProto" in error.reason
    with pytest.raises(ValueError, match=says):
        hi.format_record(junk)


def test_describe_file_reports_damage_as_record_error(example_file):
    data = bytearray(example_file.read_bytes())
    data[-1] ^= 0xFF
    example_file.write_bytes(bytes(data))
    with pytest.raises(RecordError, match="record 2 at byte .*payload CRC mismatch"):
        hi.describe_file(example_file)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files_written_by_tensorflow_give_the_same_summary(
    tmp_path, sequence_file, compression
):
    path = tmp_path / f"sequences.{compression}"
    with tf.io.TFRecordWriter(str(path), options=compression) as writer:
        for payload in iter_records(sequence_file):
            writer.write(payload)
    plain = hi.describe_file(sequence_file)
    packed = hi.describe_file(path, compression)
    assert packed.feature_lists == plain.feature_lists and packed.features == plain.features
    with pytest.raises(RecordError):  # read as plain, a compressed file is not a TFRecord file
        hi.describe_file(path)


def test_format_record_example_shortens_long_bytes_and_long_lists():
    values = {"blob": [bytes(range(40))], "name": [b"2007_000032"], "ints": list(range(20))}
    payload = example(values | {"x": [0.1, 2.0, 1e-7]})
    lines = hi.format_record(payload).splitlines()
    assert lines[0] == "tf.train.Example with 4 features"
    rows = {line.split()[0]: line.split(None, 2)[2] for line in lines[1:]}
    assert rows["blob"] == "[<40 bytes 0001020304050607...>]"
    assert rows["name"] == "[b'2007_000032']"
    assert rows["ints"] == "[0, 1, 2, 3, 4, 5, 6, 7, ... 12 more]"
    assert rows["x"] == "[0.1, 2.0, 1e-07]"  # float32 values shown to 7 digits


def test_format_record_sequence_example_shows_the_first_steps():
    payload = sequence_example({"day": [b"monday"]}, {"t": [[1], [2], [3], [4], [5]], "u": []})
    assert hi.format_record(payload).splitlines() == [
        "tf.train.SequenceExample with 1 context feature and 2 feature lists",
        "  day    bytes  [b'monday']",
        "  t[0]   int64  [1]",
        "  t[1]   int64  [2]",
        "  t[2]   int64  [3]",
        "  t[3:]         (5 steps in all)",
        "  u[0:]         (0 steps in all)",
    ]


def test_format_record_shows_exactly_8_values_and_a_32_byte_value_in_full():
    """The cut-offs start past the limits: 8 values get no "... 0 more", 32 bytes no <...>."""
    payload = example({"eight": list(range(8)), "b32": [bytes(range(32))]})
    lines = hi.format_record(payload).splitlines()
    rows = {line.split()[0]: line.split(None, 2)[2] for line in lines[1:]}
    assert rows["eight"] == "[0, 1, 2, 3, 4, 5, 6, 7]"
    assert rows["b32"] == f"[{bytes(range(32))!r}]"


def test_format_record_sequence_example_of_exactly_3_steps_shows_them_all():
    """A feature list of exactly 3 steps (the limit) has no "t[3:] (3 steps in all)" row."""
    payload = sequence_example({}, {"t": [[1], [2], [3]]})
    assert hi.format_record(payload).splitlines() == [
        "tf.train.SequenceExample with 0 context features and 1 feature list",
        "  t[0]  int64  [1]",
        "  t[1]  int64  [2]",
        "  t[2]  int64  [3]",
    ]


def test_inspecting_does_not_import_tensorflow(example_file):
    code = (
        "import sys; from helpers.describe import describe_file, format_summary; "
        f"print(format_summary(describe_file({str(example_file)!r}))); "
        "print('tensorflow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "False"
    assert "3 records of tf.train.Example" in done.stdout


# --------------------------------------------------------------------------- serialized tensors


def serialized_tensors(*tensors) -> list[bytes]:
    return [tf.io.serialize_tensor(t).numpy() for t in tensors]


def test_tensor_schema_matches_tensorflows_field_numbers_and_types():
    from google.protobuf.descriptor import FieldDescriptor
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2

    theirs = {
        "TensorProto": tensor_pb2.TensorProto.DESCRIPTOR,
        "TensorShapeProto": tensor_shape_pb2.TensorShapeProto.DESCRIPTOR,
        "TensorShapeProto.Dim": tensor_shape_pb2.TensorShapeProto.Dim.DESCRIPTOR,
    }
    pool = message("TensorProto").DESCRIPTOR.file.pool
    for name, their in theirs.items():
        ours = pool.FindMessageTypeByName(f"tensorflow.{name}")
        assert ours.fields, name
        for field in ours.fields:  # a subset of TensorFlow's fields, each the same on the wire
            twin = their.fields_by_number[field.number]
            their_type = FieldDescriptor.TYPE_INT32 if twin.type == twin.TYPE_ENUM else twin.type
            assert (field.name, field.type, field.is_repeated) == (
                twin.name,
                their_type,
                twin.is_repeated,
            ), f"{name}.{field.name}"
            if field.message_type:
                assert field.message_type.full_name == twin.message_type.full_name
    ours = {f.name for f in pool.FindMessageTypeByName("tensorflow.TensorProto").fields}
    assert ours == {"dtype", "tensor_shape", "tensor_content", "string_val"}


def test_dtype_numbers_names_and_sizes_are_tensorflows():
    from tensorflow.core.framework import types_pb2

    for number, (name, size) in TENSOR_DTYPES.items():
        dtype = tf.as_dtype(number)
        assert (dtype.name, dtype.as_datatype_enum) == (name, number), types_pb2.DataType.Name(
            number
        )
        assert size == (0 if dtype == tf.string else dtype.size), name
    common = {
        1: "float32",
        2: "float64",
        3: "int32",
        4: "uint8",
        5: "int16",
        6: "int8",
        7: "string",
        9: "int64",
        10: "bool",
        19: "float16",
        17: "uint16",
        14: "bfloat16",
    }
    assert {n: TENSOR_DTYPES[n][0] for n in common} == common


def test_describe_a_file_of_serialized_3d_tensors(tmp_path):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 4, 3)).astype(np.float32) for n in (2, 5, 3)]
    path = write(tmp_path / "volumes.tfrecord", serialized_tensors(*arrays))
    summary = hi.describe_file(path)
    assert (summary.kind, summary.num_records, list(summary.tensors)) == (
        "TensorProto",
        3,
        ["float32"],
    )
    t = summary.tensors["float32"]
    assert (t.present, t.ranks, t.dims, t.values, t.shape) == (
        3,
        (3, 3),
        [(2, 5), (4, 4), (3, 3)],
        (24, 60),
        "[2-5, 4, 3]",
    )
    assert summary.features == summary.feature_lists == {}
    assert hi.format_summary(summary).splitlines() == [
        f"{path}: 3 records of TensorProto (tf.io.serialize_tensor)",
        "  dtype    rank  shape        values/record  present in",
        "  float32  3     [2-5, 4, 3]  24-60          3 of 3",
    ]


def test_scalars_strings_and_varying_ranks_are_reported_per_dtype(tmp_path):
    payloads = serialized_tensors(
        tf.constant(1.5),
        tf.constant(2.5),
        tf.constant([b"a", b"bc"]),
        tf.constant(b"x"),
        tf.zeros([0, 3], tf.int64),
        tf.zeros([2, 3], tf.int64),
        tf.zeros([4], tf.bfloat16),
        tf.constant([True, False]),
        tf.zeros([2, 2], tf.uint8),
        tf.zeros([3], tf.float16),
    )
    summary = hi.describe_file(write(tmp_path / "mixed.tfrecord", payloads))
    assert list(summary.tensors) == [
        "bfloat16",
        "bool",
        "float16",
        "float32",
        "int64",
        "string",
        "uint8",
    ]
    scalars, strings, ints = (summary.tensors[k] for k in ("float32", "string", "int64"))
    assert (scalars.ranks, scalars.shape, scalars.values, scalars.present) == (
        (0, 0),
        "[]",
        (1, 1),
        2,
    )
    assert (strings.ranks, strings.shape, strings.values) == ((0, 1), "[...]", (1, 2))
    assert (ints.ranks, ints.shape, ints.values) == ((2, 2), "[0-2, 3]", (0, 6))
    rows = [line.split() for line in hi.format_summary(summary).splitlines()]
    assert ["float32", "0", "[]", "1", "2", "of", "10"] in rows
    assert ["string", "0-1", "[...]", "1-2", "2", "of", "10"] in rows


def test_format_record_shows_a_tensors_dtype_and_shape():
    volume, scalar, text = serialized_tensors(
        tf.zeros([2, 4, 3]), tf.constant(7), tf.constant([b"a"])
    )
    assert hi.format_record(volume) == "TensorProto: dtype float32, shape [2, 4, 3]"
    assert hi.format_record(scalar) == "TensorProto: dtype int32, shape []"
    assert hi.format_record(text) == "TensorProto: dtype string, shape [1]"


def test_examples_and_tensors_parse_as_each_other_in_protobuf_but_are_told_apart():
    from tensorflow.core.framework import tensor_pb2, types_pb2

    plain = example({"a": [1], "b": [b"x"]})
    sequence = sequence_example({"a": [1]}, {"b": [[1], [2]]})
    (tensor,) = serialized_tensors(tf.ones([3, 4]))
    # The trap: protobuf parses each as the other, silently ...
    assert tf.train.Example.FromString(tensor).features.feature == {}  # an empty Example
    wrong = tensor_pb2.TensorProto.FromString(plain)
    assert wrong.dtype == types_pb2.DT_INVALID and wrong.ByteSize() > 0  # unknown fields only
    # ... _parse does not fall for it: each payload has exactly one sensible reading.
    assert [parse(p)[0] for p in (plain, sequence, tensor, b"")] == [
        "Example",
        "SequenceExample",
        "TensorProto",
        "Example",
    ]
    assert parse(tensor)[1].SerializeToString() == tensor


@pytest.mark.parametrize(
    "payload, tensorflow_reads, accepted",
    [
        (b"\x08\x01", True, True),  # a float32 scalar with no value stored: TensorFlow reads 0.0
        (b"\x08\x07\x12\x04\x12\x02\x08\x00", True, True),  # a string tensor of shape [0]
        (b'\x08\x01"\x02ab', False, False),  # 2 content bytes for one float32 (4 bytes)
        (b"\x08\x03\x12\x04\x12\x02\x08\x02\x22\x04\x01\x00\x00\x00", False, False),  # 1 of 2
        # Stricter than TensorFlow, which reads these as a scalar and as [b"a"]:
        (b"\x08\x01\x12\x02\x18\x01", True, False),  # a shape of unknown rank
        (b"\x08\x07\x12\x04\x12\x02\x08\x01B\x01aB\x01b", True, False),  # 2 strings for shape [1]
    ],
)
def test_a_tensor_proto_is_accepted_only_if_tensorflow_parses_it(
    payload, tensorflow_reads, accepted
):
    try:
        tf.io.parse_tensor(payload, {1: tf.float32, 3: tf.int32, 7: tf.string}[payload[1]])
        assert tensorflow_reads, "TensorFlow parsed it"
    except tf.errors.InvalidArgumentError:
        assert not tensorflow_reads, "TensorFlow refused it"
    if accepted:
        assert parse(payload)[0] == "TensorProto"
    else:
        with pytest.raises(ValueError, match="TensorProto of unknown dtype or wrong size"):
            parse(payload)


def test_every_dtype_that_serialize_tensor_writes_is_recognised():
    from tensorflow.core.framework import types_pb2

    written = []
    for number in types_pb2.DataType.values():  # the _REF types (100 + n) are no tensor's
        if number in (types_pb2.DT_INVALID, types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT) or (
            number > 100
        ):
            continue
        try:
            payload = tf.io.serialize_tensor(tf.zeros([2, 3], tf.as_dtype(number))).numpy()
        except (TypeError, ValueError, tf.errors.OpError):  # no kernel or no zeros for it
            continue
        written.append(number)
        kind, message = parse(payload)
        assert (kind, TENSOR_DTYPES[number][0]) == ("TensorProto", tf.as_dtype(number).name)
    assert sorted(written) == sorted(TENSOR_DTYPES)


def test_a_tensor_of_another_dtype_is_refused_naming_the_dtype(tmp_path):
    from tensorflow.core.framework import tensor_pb2

    float8 = tensor_pb2.TensorProto(dtype=25, tensor_content=bytes(2))  # DT_FLOAT8_E4M3FN
    float8.tensor_shape.dim.add(size=2)
    assert tf.io.parse_tensor(float8.SerializeToString(), tf.as_dtype(25)).shape == [2]
    path = write(tmp_path / "float8.tfrecord", [float8.SerializeToString()])
    with pytest.raises(RecordError, match=r"record 0 .*wrong size: dtype 25, shape \[2\]"):
        hi.describe_file(path)


def test_a_tensor_among_examples_is_an_error_naming_the_record(tmp_path):
    path = write(
        tmp_path / "mixed.tfrecord", [example({"a": [1]}), *serialized_tensors(tf.ones([2]))]
    )
    with pytest.raises(
        RecordError,
        match="record 1 at byte .*: a TensorProto in a file whose records so far are Examples",
    ):
        hi.describe_file(path)
    path = write(
        tmp_path / "other.tfrecord", [*serialized_tensors(tf.ones([2])), example({"a": [1]})]
    )
    with pytest.raises(RecordError, match="record 1 .*: a Example in a file whose records so far"):
        hi.describe_file(path)


def test_the_command_line_describes_a_tensor_file_without_tensorflow(tmp_path):
    path = write(tmp_path / "t.tfrecord", serialized_tensors(tf.zeros([3, 4]), tf.zeros([3, 4])))
    code = (
        "import sys; from helpers.cli import main; "
        f"status = main(['inspect', {str(path)!r}, '--show', '1']); "
        "print('tensorflow' in sys.modules, status)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"{path}: 2 records of TensorProto (tf.io.serialize_tensor)",
        "  dtype    rank  shape   values/record  present in",
        "  float32  2     [3, 4]  12             2 of 2",
        "record 1: TensorProto: dtype float32, shape [3, 4]",
        "False 0",
    ]


def test_detection_records_show_how_many_values_each_list_holds(tmp_path):
    from helpers import voc
    from helpers.voc_records import record_payload

    root = voc.sample_root()
    ids = ["espresso_cup", "cat_chelsea", "two_horses"]  # 0, 1 and 2 objects
    path = write(tmp_path / "d.tfrecord", [record_payload(root, i, "detection") for i in ids])
    rows = {
        line.split()[0]: line.split()[1:]
        for line in hi.format_summary(hi.describe_file(path)).splitlines()[2:]
    }
    for corner in ("xmin", "xmax", "ymin", "ymax"):
        assert rows[f"image/object/bbox/{corner}"] == ["float", "0-2", "-", "3", "of", "3"]
    assert rows["image/object/class/text"] == ["bytes", "0-2", "3-5", "3", "of", "3"]
    assert rows["image/object/class/label"][:2] == ["int64", "0-2"]
    assert rows["image/height"][:2] == ["int64", "1"]


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (
            b"hello world, plain text",
            "23 bytes that start 68656c6c6f20776f (protobuf cannot parse it)",
        ),
        # Not a SequenceExample (a map key that is not UTF-8), but a TensorProto whose shape
        # holds a field TensorShapeProto does not have:
        (
            b"\x12\x05\x0a\x03\x0a\x01\xff",
            "7 bytes that start 12050a030a01ff (protobuf, but with fields none of them has)",
        ),
    ],
)
def test_a_payload_of_no_record_kind_is_refused_with_its_first_8_bytes_and_why(payload, why):
    with pytest.raises(ValueError) as caught:
        parse(payload)
    assert str(caught.value) == f"not a tf.train.Example, SequenceExample or TensorProto: {why}"
