"""helpers.sequences: day files, windows of consecutive frames, a day's SequenceExample."""

import os
import subprocess
import sys

from helpers._tensorflow import QUIET_ENVIRONMENT

os.environ.update(QUIET_ENVIRONMENT)  # before TensorFlow is imported

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
from builders import example, feature, sequence_example  # noqa: E402

from helpers.records import iter_records, write_records  # noqa: E402
from helpers.sequences import frame_windows, read_day_sequence, write_day  # noqa: E402

DAY_LENGTHS = (11, 7, 2)  # the last day is shorter than most windows
NUM_LABELS = 4
DAY_SECONDS = 86_400


def jpeg(frame: np.ndarray) -> bytes:
    return tf.io.encode_jpeg(frame, quality=90).numpy()


def make_day(day: int, length: int, seed: int = 0):
    """JPEGs of tiny frames, labels (day, index, noise...), increasing timestamps inside `day`."""
    rng = np.random.default_rng(seed + day)
    frames = rng.integers(0, 256, size=(length, 8, 8, 3), dtype=np.uint8)
    timestamps = day * DAY_SECONDS + np.cumsum(rng.integers(1, 20, size=length))
    noise = rng.normal(size=(length, NUM_LABELS - 2))
    labels = np.column_stack([np.full(length, day), np.arange(length), noise])
    return [jpeg(frame) for frame in frames], labels.astype(np.float32), timestamps


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """Three day files and what was written to each."""
    folder = tmp_path_factory.mktemp("days")
    files = []
    written = []
    for day, length in enumerate(DAY_LENGTHS):
        written.append(make_day(day, length))
        files.append(folder / f"day_{day}.tfrecord")
        assert write_day(files[-1], *written[-1]) == length
    return files, written


def window_count(frames, size, stride=1, shift=1):
    """Notebook 09's formula."""
    span = (size - 1) * stride + 1
    return 0 if frames < span else (frames - span) // shift + 1


def window_ids(dataset):
    """(day, index of the last frame) of every window: its labels are the last frame's."""
    return [(int(label[0]), int(label[1])) for _, label, *_ in dataset.as_numpy_iterator()]


def expected_ids(size, stride, shift):
    span = (size - 1) * stride
    return [
        (day, start + span)
        for day, length in enumerate(DAY_LENGTHS)
        for start in range(0, length - span, shift)
    ]


def test_importing_the_module_imports_no_tensorflow():
    code = "import sys, helpers.sequences; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- write_day


def test_write_day_stores_one_example_per_frame_in_order_with_jpegs_unchanged(days):
    files, written = days
    jpegs, labels, stamps = written[0]
    examples = [tf.train.Example.FromString(p).features.feature for p in iter_records(files[0])]
    assert len(examples) == len(jpegs)
    for i, features in enumerate(examples):
        assert sorted(features) == ["frame/encoded", "frame/labels", "frame/timestamp"]
        assert features["frame/encoded"].bytes_list.value == [jpegs[i]]
        assert features["frame/timestamp"].int64_list.value == [stamps[i]]
        np.testing.assert_array_equal(features["frame/labels"].float_list.value, labels[i])


def test_write_day_refuses_to_overwrite_unless_asked(tmp_path):
    path = tmp_path / "d.tfrecord"
    write_day(path, *make_day(0, 3))
    with pytest.raises(FileExistsError, match="d.tfrecord"):
        write_day(path, *make_day(1, 2))
    assert write_day(path, *make_day(1, 2), overwrite=True) == 2
    assert sum(1 for _ in iter_records(path)) == 2


def test_write_day_into_a_missing_folder_names_the_target(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing/d\.tfrecord"):
        write_day(tmp_path / "missing" / "d.tfrecord", *make_day(0, 2))


def replaced(values, index, value):
    """A copy of a list or array with ``values[index] = value``."""
    values = values.copy()
    values[index] = value
    return values


#: Each kind of bad day, made from a good day of 5 frames: (jpegs, labels, stamps) -> bad ones.
BAD_DAYS = {
    "unsorted": lambda jpegs, labels, stamps: (jpegs, labels, replaced(stamps, 3, stamps[1])),
    "repeated": lambda jpegs, labels, stamps: (jpegs, labels, replaced(stamps, 3, stamps[2])),
    "float timestamps": lambda jpegs, labels, stamps: (jpegs, labels, stamps + 0.5),
    "fewer labels": lambda jpegs, labels, stamps: (jpegs, labels[:4], stamps),
    "more timestamps": lambda jpegs, labels, stamps: (
        jpegs,
        labels,
        np.append(stamps, stamps[-1] + 1),
    ),
    "nan label": lambda jpegs, labels, stamps: (jpegs, replaced(labels, (3, 2), np.nan), stamps),
    # finite in float64, inf once stored as float32
    "float32 overflow": lambda jpegs, labels, stamps: (
        jpegs,
        np.full((5, NUM_LABELS), 1e39),
        stamps,
    ),
    "1-d labels": lambda jpegs, labels, stamps: (jpegs, labels[:, 0], stamps),
    "text labels": lambda jpegs, labels, stamps: (jpegs, [["a"] * NUM_LABELS] * 5, stamps),
    "not jpeg": lambda jpegs, labels, stamps: (
        replaced(jpegs, 3, b"\x89PNG\r\n\x1a\n"),
        labels,
        stamps,
    ),
    "cut jpeg": lambda jpegs, labels, stamps: (replaced(jpegs, 3, jpegs[3][:6]), labels, stamps),
    "array frame": lambda jpegs, labels, stamps: (
        replaced(jpegs, 3, np.zeros((8, 8, 3), np.uint8)),
        labels,
        stamps,
    ),
    "other size": lambda jpegs, labels, stamps: (
        replaced(jpegs, 3, jpeg(np.zeros((8, 9, 3), np.uint8))),
        labels,
        stamps,
    ),
    "no frames": lambda jpegs, labels, stamps: ([], np.zeros((0, 2)), np.zeros(0, np.int64)),
}


def bad_day(kind):
    return BAD_DAYS[kind](*make_day(0, 5))


@pytest.mark.parametrize(
    "kind,message",
    [
        ("unsorted", r"frame 3: timestamp .* is not after frame 2's"),
        ("repeated", r"frame 3: timestamp .* is not after frame 2's"),
        ("float timestamps", r"expected integer timestamps \[frames\], got float64"),
        ("fewer labels", r"5 frames, 4 label rows, 5 timestamps; expected one of each"),
        ("more timestamps", r"5 frames, 5 label rows, 6 timestamps"),
        ("nan label", r"frame 3: expected finite float32 labels, got \[0\.0, 3\.0, nan"),
        ("float32 overflow", r"frame 0: expected finite float32 labels, got \[1e\+39, 1e\+39"),
        ("1-d labels", r"expected labels \[frames, L\] numbers, got \(5,\)"),
        ("text labels", r"expected labels \[frames, L\] numbers"),
        ("not jpeg", r"frame 3: expected JPEG bytes .* got b'\\x89PNG'"),
        ("cut jpeg", r"frame 3: the JPEG header cannot be read"),
        ("array frame", r"frame 3: expected JPEG bytes .* got ndarray"),
        ("other size", r"frame 3 is \(8, 9\) but frame 0 is \(8, 8\)"),
        ("no frames", r"expected labels \[frames, L\] numbers, got \(0, 2\)"),
    ],
)
def test_write_day_refuses_bad_input_naming_file_and_frame_and_leaves_no_file(
    tmp_path, kind, message
):
    with pytest.raises(ValueError, match=rf"bad_day\.tfrecord: {message}"):
        write_day(tmp_path / "bad_day.tfrecord", *bad_day(kind))
    assert list(tmp_path.iterdir()) == [], "a failed write left a file behind"


# ---------------------------------------------------------------- windows in order


@pytest.mark.parametrize(
    "size,stride,shift", [(1, 1, 1), (2, 1, 1), (3, 2, 1), (2, 3, 2), (3, 1, 3), (2, 6, 1)]
)
def test_windows_come_in_file_then_time_order_with_the_count_of_the_formula(
    days, size, stride, shift
):
    files, _ = days
    found = window_ids(frame_windows(files, size, stride, shift))
    assert found == expected_ids(size, stride, shift)
    per_day = [sum(1 for day, _ in found if day == d) for d in range(len(DAY_LENGTHS))]
    assert per_day == [window_count(n, size, stride, shift) for n in DAY_LENGTHS]


def test_a_day_shorter_than_a_window_yields_none(days):
    files, _ = days
    assert {day for day, _ in window_ids(frame_windows(files, size=3))} == {0, 1}
    assert window_ids(frame_windows(files[2:], size=3)) == []


@pytest.mark.parametrize("shuffle_buffer", [0, 7])
def test_frames_timestamps_and_label_are_those_of_the_strided_frames_of_one_day(
    days, shuffle_buffer
):
    files, written = days
    size = 3
    stride = 2
    dataset = frame_windows(
        files, size, stride, shuffle_buffer=shuffle_buffer, with_timestamps=True
    )
    count = 0
    for frames, label, stamps in dataset.as_numpy_iterator():
        jpegs, labels, timestamps = written[int(label[0])]
        indices = [int(label[1]) - (size - 1 - j) * stride for j in range(size)]
        assert np.array_equal(stamps, timestamps[indices])
        np.testing.assert_array_equal(label, labels[indices[-1]])
        for frame, index in zip(frames, indices, strict=True):
            np.testing.assert_array_equal(frame, tf.io.decode_jpeg(jpegs[index]).numpy())
        count += 1
    assert count == sum(window_count(n, size, stride) for n in DAY_LENGTHS)


def test_element_shapes_and_dtypes(days):
    files, _ = days
    frames_spec, label_spec = frame_windows(files, size=2).element_spec
    assert frames_spec.shape == (2, 8, 8, 3) and frames_spec.dtype == tf.uint8
    assert label_spec.shape == (NUM_LABELS,) and label_spec.dtype == tf.float32
    stamps_spec = frame_windows(files, size=2, with_timestamps=True).element_spec[2]
    assert stamps_spec.shape == (2,) and stamps_spec.dtype == tf.int64


def test_a_single_path_is_accepted(days):
    files, _ = days
    assert window_ids(frame_windows(str(files[1]), size=2)) == [(1, i) for i in range(1, 7)]


# ---------------------------------------------------------------- windows shuffled


def test_shuffling_keeps_the_same_windows_and_mixes_days(days):
    files, _ = days
    ordered = window_ids(frame_windows(files, size=2))
    shuffled = window_ids(frame_windows(files, size=2, shuffle_buffer=8, seed=3))
    assert sorted(shuffled) == sorted(ordered) and shuffled != ordered
    first = shuffled[: len(ordered) // 2]
    assert len({day for day, _ in first}) >= 2, f"first half of the stream from one day: {first}"
    changes = sum(a[0] != b[0] for a, b in zip(shuffled, shuffled[1:], strict=False))
    assert changes > len(DAY_LENGTHS), f"days not interleaved: {shuffled}"


def test_shuffle_mixes_windows_within_a_day(days):
    files, _ = days
    lasts = [last for _, last in window_ids(frame_windows(files[:1], 2, shuffle_buffer=10))]
    assert sorted(lasts) == list(range(1, DAY_LENGTHS[0])) and lasts != sorted(lasts)


def test_the_same_seed_gives_the_same_order_and_another_seed_another(days):
    files, _ = days
    first, again, other = (
        window_ids(frame_windows(files, 2, shuffle_buffer=16, seed=seed)) for seed in (5, 5, 6)
    )
    assert first == again
    assert other != first and sorted(other) == sorted(first) == expected_ids(2, 1, 1)


def test_each_epoch_is_shuffled_anew_and_the_epochs_repeat_with_the_seed(days):
    files, _ = days
    epochs = [window_ids(frame_windows(files, 2, shuffle_buffer=16, seed=5)) for _ in range(2)]
    dataset = frame_windows(files, 2, shuffle_buffer=16, seed=5)
    epoch_1 = window_ids(dataset)
    epoch_2 = window_ids(dataset)
    assert epoch_1 != epoch_2 and sorted(epoch_1) == sorted(epoch_2)
    assert epochs == [epoch_1, epoch_1]


def test_numpy_integers_are_accepted(days):
    files, _ = days
    found = frame_windows(files, np.int64(2), np.int32(1), np.int64(1), np.int64(16), np.int64(5))
    assert window_ids(found) == window_ids(frame_windows(files, 2, shuffle_buffer=16, seed=5))


@pytest.mark.parametrize(
    "bad,error,message",
    [
        (dict(size=0), ValueError, "size must be at least 1"),
        (dict(stride=0), ValueError, "stride must be at least 1"),
        (dict(shift=-1), ValueError, "shift must be at least 1"),
        (dict(size=2.0), TypeError, "size must be an int"),
        (dict(size=True), TypeError, "size must be an int"),
        (dict(shuffle_buffer=-1), ValueError, "shuffle_buffer must be at least 0"),
        (dict(cycle_length=0), ValueError, "cycle_length must be at least 1"),
        (dict(seed=None), TypeError, "seed must be an int"),
        (dict(seed=-1), ValueError, "seed must be at least 0"),
    ],
)
def test_bad_arguments_are_refused(days, bad, error, message):
    files, _ = days
    with pytest.raises(error, match=message):
        frame_windows(files, **(dict(size=2) | bad))


# ---------------------------------------------------------------- windows from bad files


def test_files_with_different_frame_sizes_are_refused_naming_both(tmp_path):
    jpegs, labels, stamps = make_day(0, 3)
    write_day(tmp_path / "small.tfrecord", jpegs, labels, stamps)
    large = [jpeg(np.zeros((16, 8, 3), np.uint8))] * 3
    write_day(tmp_path / "large.tfrecord", large, labels, stamps)
    with pytest.raises(ValueError, match=r"small\.tfrecord: \(8, 8, 4\), .*large\.tfrecord"):
        frame_windows([tmp_path / "small.tfrecord", tmp_path / "large.tfrecord"], size=2)


def test_no_frame_in_any_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"found no frame in 0 file\(s\)"):
        frame_windows([], size=2)
    write_records(tmp_path / "empty.tfrecord", [])
    with pytest.raises(ValueError, match=r"found no frame in 1 file\(s\)"):
        frame_windows([tmp_path / "empty.tfrecord"], size=2)


def frame_record(encoded=None, timestamp=None, labels=None) -> bytes:
    """A per-frame record with any features (a tf.train.Feature each), for bad files."""
    features = {"frame/encoded": encoded, "frame/timestamp": timestamp, "frame/labels": labels}
    return example({key: value for key, value in features.items() if value is not None})


GOOD = dict(
    encoded=feature([jpeg(np.zeros((8, 8, 3), np.uint8))], "bytes"),
    timestamp=feature([1], "int64"),
    labels=feature([0.5] * NUM_LABELS, "float"),
)
BAD_RECORDS = {
    "timestamp as bytes": (
        dict(timestamp=feature([b"06:30:00"], "bytes")),
        r"Key: frame/timestamp, Index: 0\.  Data types don't match\. "
        r"Data type: string but expected type: int64",
    ),
    "labels as int64": (
        dict(labels=feature([1] * NUM_LABELS, "int64")),
        r"Key: frame/labels, Index: 0\.  Data types don't match\. "
        r".*[Ee]xpected type: float(, Actual type: int64)?",
    ),
    "JPEG as float": (
        dict(encoded=feature([1.0], "float")),
        r"Key: frame/encoded, Index: 0\.  Data types don't match\. "
        r"Data type: float but expected type: string",
    ),
    "timestamp missing": (
        dict(timestamp=None),
        r"Feature: frame/timestamp \(data type: int64\) is required but could not be found\.",
    ),
}


def write_bad_day(path, record, bad):
    """Five good records, but record number `record` has the features `bad`."""
    records = [frame_record(**(GOOD | bad if i == record else GOOD)) for i in range(5)]
    write_records(path, records)


@pytest.mark.parametrize("kind", BAD_RECORDS)
def test_a_bad_first_record_is_refused_naming_file_record_and_what_was_expected(tmp_path, kind):
    bad, message = BAD_RECORDS[kind]
    write_bad_day(tmp_path / "bad.tfrecord", 0, bad)
    with pytest.raises(ValueError, match=rf"bad\.tfrecord: record 0: {message}$"):
        frame_windows([tmp_path / "bad.tfrecord"], size=2)


@pytest.mark.parametrize("kind", BAD_RECORDS)
@pytest.mark.parametrize("shuffle_buffer", [0, 4])
def test_a_bad_later_record_stops_iteration_naming_file_record_and_what_was_expected(
    tmp_path, kind, shuffle_buffer
):
    bad, message = BAD_RECORDS[kind]
    write_bad_day(tmp_path / "bad.tfrecord", 3, bad)
    dataset = frame_windows([tmp_path / "bad.tfrecord"], size=2, shuffle_buffer=shuffle_buffer)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=rf"bad\.tfrecord: record 3, {message}"
    ):
        list(dataset)


def test_a_later_record_with_another_label_count_is_named(tmp_path):
    write_bad_day(tmp_path / "bad.tfrecord", 2, dict(labels=feature([0.5], "float")))
    message = r"bad\.tfrecord: record 2, Key: frame/labels, Index: 0\.  Number of float values"
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        list(frame_windows([tmp_path / "bad.tfrecord"], size=2))


def test_a_first_record_that_is_not_a_protocol_buffer_is_refused(tmp_path):
    write_records(tmp_path / "junk.tfrecord", [b"\xff\x00 not a protocol buffer"])
    with pytest.raises(ValueError, match=r"junk\.tfrecord: record 0: not a protocol buffer"):
        frame_windows([tmp_path / "junk.tfrecord"], size=2)


def test_a_first_frame_that_is_not_a_jpeg_is_refused(tmp_path):
    write_bad_day(tmp_path / "bad.tfrecord", 0, dict(encoded=feature([b"frame.png"], "bytes")))
    with pytest.raises(ValueError, match=r"bad\.tfrecord: record 0: expected JPEG bytes"):
        frame_windows([tmp_path / "bad.tfrecord"], size=2)


# ---------------------------------------------------------------- a day as one SequenceExample


def day_sequence(**replace):
    """The SequenceExample of notebook 09 for `make_day(0, 5)`; `replace` swaps features:
    key "context/<name>" -> a Feature or None, "list/<name>" -> a list of Features or None."""
    jpegs, labels, stamps = make_day(0, 5)
    parts = {
        "context/day": feature([b"2017-05-01"], "bytes"),
        "context/frame_count": feature([len(jpegs)], "int64"),
        "list/frames": [feature([j], "bytes") for j in jpegs],
        "list/timestamps": [feature([int(t)], "int64") for t in stamps],
        "list/labels": [feature(row, "float") for row in np.asarray(labels).tolist()],
    } | replace
    context = {k.removeprefix("context/"): v for k, v in parts.items() if k.startswith("context/")}
    lists = {k.removeprefix("list/"): v for k, v in parts.items() if k.startswith("list/")}
    return sequence_example(
        {k: v for k, v in context.items() if v is not None},
        {k: v for k, v in lists.items() if v is not None},
    )


def test_a_day_round_trips_through_one_sequence_example(tmp_path):
    jpegs, labels, stamps = make_day(0, 5)
    write_records(tmp_path / "seq.tfrecord", [day_sequence()])
    context, lists = read_day_sequence(tmp_path / "seq.tfrecord", NUM_LABELS)
    assert context["day"].numpy() == b"2017-05-01" and int(context["frame_count"]) == 5
    assert [bytes(f) for f in lists["frames"].numpy()] == jpegs
    np.testing.assert_array_equal(lists["timestamps"].numpy(), stamps)
    np.testing.assert_array_equal(lists["labels"].numpy(), labels)
    assert (
        read_day_sequence(tmp_path / "seq.tfrecord", np.int64(NUM_LABELS))[0]["day"]
        == b"2017-05-01"
    )


def test_read_day_sequence_refuses_a_file_without_exactly_one_record(days, tmp_path):
    files, _ = days
    with pytest.raises(
        ValueError,
        match=r"day_0\.tfrecord: expected one SequenceExample record, found more than one",
    ):
        read_day_sequence(files[0], NUM_LABELS)
    write_records(tmp_path / "empty.tfrecord", [])
    with pytest.raises(ValueError, match=r"empty\.tfrecord: expected one .* found none"):
        read_day_sequence(tmp_path / "empty.tfrecord", NUM_LABELS)


def test_read_day_sequence_refuses_a_frame_count_that_disagrees(tmp_path):
    write_records(
        tmp_path / "lying.tfrecord",
        [day_sequence(**{"context/frame_count": feature([4], "int64")})],
    )
    with pytest.raises(
        ValueError,
        match=r"lying\.tfrecord: record 0: frame_count says 4 but the feature lists hold \{'frames': 5, 'labels': 5, 'timestamps': 5\}",
    ):
        read_day_sequence(tmp_path / "lying.tfrecord", NUM_LABELS)


BAD_SEQUENCES = {
    "timestamps as bytes": (
        {
            "list/timestamps": [
                feature([1], "int64"),
                feature([2], "int64"),
                feature([b"x"], "bytes"),
            ]
        },
        r"Feature list: timestamps, Index: 2\.  Data types don't match\. Expected type: int64",
    ),
    "labels as int64": (
        {"list/labels": [feature([1] * NUM_LABELS, "int64")] * 5},
        r"Feature list: labels, Index: 0\.  Data types don't match\. Expected type: float",
    ),
    "day as int64": (
        {"context/day": feature([20170501], "int64")},
        r"Context feature: day\.  Data types don't match\. Expected type: string",
    ),
    "frames missing": (
        {"list/frames": None},
        r"Feature list 'frames' is required but could not be found",
    ),
    "frame_count missing": (
        {"context/frame_count": None},
        r"Inconsistent max number of elements for feature frame_count: expected 1, but found 0",
    ),
    "labels of another length": (
        {"list/labels": [feature([0.5] * 3, "float")] * 5},
        r"Feature list 'labels' has an unexpected number of values\.  "
        r"Total values size: 15 is not consistent with output shape: \[\?,4\]",
    ),
}


@pytest.mark.parametrize("kind", BAD_SEQUENCES)
def test_read_day_sequence_names_file_record_and_what_was_expected(tmp_path, kind):
    replace, message = BAD_SEQUENCES[kind]
    write_records(tmp_path / "seq.tfrecord", [day_sequence(**replace)])
    with pytest.raises(ValueError, match=rf"seq\.tfrecord: record 0: {message}"):
        read_day_sequence(tmp_path / "seq.tfrecord", NUM_LABELS)


def test_read_day_sequence_refuses_a_record_that_is_not_a_sequence_example(tmp_path):
    write_records(tmp_path / "junk.tfrecord", [b"\xff\x00 not a protocol buffer"])
    with pytest.raises(ValueError, match=r"junk\.tfrecord: record 0: "):
        read_day_sequence(tmp_path / "junk.tfrecord", NUM_LABELS)


# ---------------------------------------------------------------- what the messages and limits promise


def test_an_out_of_order_timestamp_is_named_with_the_first_bad_frame_and_both_times(tmp_path):
    jpegs, labels, _ = make_day(0, 5)
    stamps = np.array([100, 101, 102, 110, 105])  # steps of exactly 1 are in order
    with pytest.raises(ValueError, match=r"frame 4: timestamp 105 is not after frame 3's 110;"):
        write_day(tmp_path / "d.tfrecord", jpegs, labels, stamps)


def test_frame_1_of_another_size_is_named_against_frame_0(tmp_path):
    jpegs, labels, stamps = make_day(0, 4)
    jpegs[1] = jpegs[2] = jpegs[3] = jpeg(np.zeros((8, 9, 3), np.uint8))
    with pytest.raises(
        ValueError, match=r"d\.tfrecord: frame 1 is \(8, 9\) but frame 0 is \(8, 8\)"
    ):
        write_day(tmp_path / "d.tfrecord", jpegs, labels, stamps)


def test_write_day_writes_the_bytes_tensorflow_writes(days, tmp_path):
    """The file TFRecordWriter writes of tf.train.Examples built by hand and serialized with
    sorted map keys (deterministic=True): the same day gives the same file in every process."""
    files, written = days
    for day_file, (jpegs, labels, stamps) in zip(files, written, strict=True):
        theirs = tmp_path / day_file.name
        with tf.io.TFRecordWriter(str(theirs)) as writer:  # TensorFlow's own writer
            for frame, row, stamp in zip(jpegs, labels.tolist(), stamps.tolist(), strict=True):
                features = {"frame/encoded": frame, "frame/timestamp": stamp, "frame/labels": row}
                writer.write(example(features))
        assert day_file.read_bytes() == theirs.read_bytes(), day_file.name


def test_read_day_sequence_checks_num_labels_and_reads_one_label_per_frame(tmp_path):
    one_label = [feature([0.25], "float")] * 5
    write_records(tmp_path / "seq.tfrecord", [day_sequence(**{"list/labels": one_label})])
    _, lists = read_day_sequence(tmp_path / "seq.tfrecord", 1)
    assert lists["labels"].numpy().tolist() == [[0.25]] * 5
    with pytest.raises(ValueError, match="^num_labels must be at least 1, got 0$"):
        read_day_sequence(tmp_path / "seq.tfrecord", 0)
    with pytest.raises(TypeError, match=r"^num_labels must be an int, got 1\.0 \(float\)$"):
        read_day_sequence(tmp_path / "seq.tfrecord", 1.0)


def test_read_day_sequence_reads_no_further_than_a_second_record(tmp_path):
    """A day file of a million frames is refused after two records, not read to the end."""
    path = tmp_path / "frames.tfrecord"
    write_records(path, [day_sequence()] * 3)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # the last payload byte of record 2: reading it would raise RecordError
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="expected one SequenceExample record, found more than"):
        read_day_sequence(path, NUM_LABELS)


def test_the_shuffle_defaults_are_seed_0_and_4_files_at_a_time(tmp_path):
    files = []
    for day in range(6):
        files.append(tmp_path / f"day_{day}.tfrecord")
        write_day(files[-1], *make_day(day, 4))
    default = window_ids(frame_windows(files, 2, shuffle_buffer=3))
    assert default == window_ids(frame_windows(files, 2, shuffle_buffer=3, seed=0, cycle_length=4))
    assert default != window_ids(frame_windows(files, 2, shuffle_buffer=3, seed=1))
    assert default != window_ids(frame_windows(files, 2, shuffle_buffer=3, cycle_length=5))


def test_grayscale_jpeg_frames_come_out_as_three_channels(tmp_path):
    _, labels, stamps = make_day(0, 3)
    grays = [jpeg(np.full((8, 8, 1), 40 * i, np.uint8)) for i in range(3)]
    write_day(tmp_path / "gray.tfrecord", grays, labels, stamps)
    frames, _ = next(frame_windows(tmp_path / "gray.tfrecord", size=2).as_numpy_iterator())
    assert frames.shape == (2, 8, 8, 3)
    np.testing.assert_array_equal(frames[1], np.repeat(tf.io.decode_jpeg(grays[1]).numpy(), 3, 2))
