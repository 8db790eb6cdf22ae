"""helpers.voc_records: the two schemas, one pair as an Example, whole splits, reading back."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from lock_imports import require
from PIL import Image

from helpers import voc, voc_records
from helpers.records import RecordError, _shard_paths, iter_records, verify, write_records
from helpers.shuffle import permutation
from helpers.voc_records import convert_split, feature_spec, read_pairs, summarize, voc_example

tf = require("tensorflow")

SIZES = {
    "img_a": (24, 32),
    "img_b": (17, 9),
    "img_c": (40, 40),
    "img_d": (8, 30),
    "img_e": (21, 13),
}
SPLITS = {"train": ["img_a", "img_b", "img_c"], "val": ["img_d", "img_e"]}
RAW_KEYS = ["height", "width", "image_raw", "mask_raw", "filename"]
ENCODED_KEYS = [
    "image/encoded", "image/filename", "image/format", "image/height", "image/width",
    "image/channels", "image/segmentation/class/encoded", "image/segmentation/class/format",
]  # fmt: skip


def make_pair(height, width, seed):
    """A smooth photo-like image and a mask of classes with a void band."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([(x * 7 + seed * 30) % 256, (y * 5) % 256, (x + y) * 3 % 256], axis=-1)
    image = np.clip(image + rng.integers(0, 8, image.shape), 0, 255).astype(np.uint8)
    mask = np.where(x < width // 2, 0, 1 + seed % 20).astype(np.uint8)
    mask[:, width // 2] = voc.VOID_LABEL
    return image, mask


@pytest.fixture
def voc_root(tmp_path):
    """A tiny folder in the VOC2012 layout: JPEG photos, palette PNG masks, split lists."""
    root = tmp_path / "VOC2012"
    for folder in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (root / folder).mkdir(parents=True)
    for seed, (image_id, (height, width)) in enumerate(SIZES.items()):
        image, mask = make_pair(height, width, seed)
        Image.fromarray(image).save(root / "JPEGImages" / f"{image_id}.jpg", quality=90)
        png = Image.frombytes("P", (width, height), mask.tobytes())
        png.putpalette(voc.colormap().tobytes())
        png.save(root / "SegmentationClass" / f"{image_id}.png")
    lists = {**SPLITS, "trainval": SPLITS["train"] + SPLITS["val"]}
    for split, ids in lists.items():
        (root / "ImageSets" / "Segmentation" / f"{split}.txt").write_text("\n".join(ids) + "\n")
    return root


def serialized(example):
    return example.SerializeToString(deterministic=True)


def pairs_by_name(paths, encoding, compression=None):
    return {name: (image, mask) for name, image, mask in read_pairs(paths, encoding, compression)}


# --------------------------------------------------------------------------- module


def test_importing_does_not_import_tensorflow():
    code = "import sys, helpers.voc_records; print([m for m in sys.modules if 'tensorflow' in m])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", "")


def test_each_listed_encoding_round_trips_and_the_refusal_names_exactly_those(voc_root, tmp_path):
    """Notebook 02 loops over ENCODINGS: each must write a pair that reads back as it was."""
    image, mask = voc.load_pair(voc_root, "img_e")
    for encoding in voc_records.ENCODINGS:
        record = serialized(voc_example(voc_root, "img_e", encoding))
        assert tf.io.parse_single_example(record, feature_spec(encoding))
        write_records(tmp_path / encoding, [record])
        ((name, got_image, got_mask),) = read_pairs([tmp_path / encoding], encoding)
        assert name == "img_e.jpg", encoding
        np.testing.assert_array_equal(got_image, image)
        np.testing.assert_array_equal(got_mask, mask)
    with pytest.raises(ValueError) as caught:
        feature_spec("png")
    named = re.findall(r"'(\w+)'", str(caught.value).split(", got ")[0])
    assert named == list(voc_records.ENCODINGS)


# --------------------------------------------------------------------------- feature specs


def test_feature_spec_lists_the_keys_of_each_schema_with_their_types():
    raw = feature_spec("raw")
    assert sorted(raw) == sorted(RAW_KEYS)
    assert raw["height"] == tf.io.FixedLenFeature([], tf.int64)
    assert raw["image_raw"] == tf.io.FixedLenFeature([], tf.string)
    assert raw["filename"] == tf.io.FixedLenFeature([], tf.string, default_value=b"")  # optional
    encoded = feature_spec("encoded")
    assert sorted(encoded) == sorted(ENCODED_KEYS)
    ints = {key for key, feature in encoded.items() if feature.dtype == tf.int64}
    assert ints == {"image/height", "image/width", "image/channels"}


def test_feature_spec_refuses_an_unknown_schema():
    with pytest.raises(ValueError, match="encoding must be 'raw' or 'encoded', got 'png'"):
        feature_spec("png")


# --------------------------------------------------------------------------- one pair


def test_raw_example_parses_with_its_spec_to_the_pair(voc_root):
    image, mask = voc.load_pair(voc_root, "img_b")
    parsed = tf.io.parse_single_example(
        serialized(voc_example(voc_root, "img_b")), feature_spec("raw")
    )
    height, width = int(parsed["height"]), int(parsed["width"])
    got = tf.reshape(tf.io.decode_raw(parsed["image_raw"], tf.uint8), [height, width, 3])
    np.testing.assert_array_equal(got.numpy(), image)
    got_mask = tf.io.decode_raw(parsed["mask_raw"], tf.uint8).numpy().reshape(height, width)
    np.testing.assert_array_equal(got_mask, mask)
    assert parsed["filename"].numpy() == b"img_b.jpg"


def test_encoded_example_keeps_the_jpeg_and_stores_the_indices_as_png(voc_root):
    record = serialized(voc_example(voc_root, "img_a", "encoded"))
    parsed = tf.io.parse_single_example(record, feature_spec("encoded"))
    assert parsed["image/encoded"].numpy() == voc.image_path(voc_root, "img_a").read_bytes()
    assert (int(parsed["image/height"]), int(parsed["image/width"])) == (24, 32)
    assert int(parsed["image/channels"]) == 3 and parsed["image/format"].numpy() == b"jpeg"
    assert parsed["image/segmentation/class/format"].numpy() == b"png"
    png = tf.io.decode_png(parsed["image/segmentation/class/encoded"]).numpy()
    assert png.shape == (24, 32, 1)  # one channel: the class indices, not palette colours
    np.testing.assert_array_equal(png[..., 0], voc.load_mask(voc_root, "img_a"))


def test_voc_example_is_deterministic_and_refuses_an_unknown_encoding(voc_root):
    assert serialized(voc_example(voc_root, "img_c")) == serialized(voc_example(voc_root, "img_c"))
    with pytest.raises(ValueError, match="encoding must be 'raw' or 'encoded', got 'png'"):
        voc_example(voc_root, "img_a", "png")


@pytest.mark.parametrize("encoding", ["raw", "encoded"])
def test_voc_example_refuses_mismatched_sizes(voc_root, encoding):
    Image.fromarray(make_pair(5, 5, 0)[0]).save(voc.image_path(voc_root, "img_a"))
    with pytest.raises(voc.VOCError, match=r"'img_a': photo \(5, 5\) vs mask \(24, 32\)"):
        voc_example(voc_root, "img_a", encoding)


def test_a_photo_that_is_not_a_jpeg_file_is_refused_for_the_encoded_schema(voc_root):
    Image.fromarray(make_pair(24, 32, 0)[0]).save(voc.image_path(voc_root, "img_a"), format="PNG")
    assert voc_example(voc_root, "img_a", "raw")  # raw stores pixels: any format will do
    with pytest.raises(voc.VOCError, match=r"'img_a' is not a JPEG file: .*img_a\.jpg"):
        voc_example(voc_root, "img_a", "encoded")


# --------------------------------------------------------------------------- bad JPEGs


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def corrupt(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(range(200, 256)) + b"\xff\xd9" * 4  # garbage, early EOI
    path.write_bytes(bytes(data))


def replace_with_garbage(path):
    path.write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG" + bytes(200))


@pytest.mark.parametrize("damage", [truncate, corrupt, replace_with_garbage])
@pytest.mark.parametrize("encoding", ["encoded", "raw"])
def test_a_bad_jpeg_names_the_id_and_file_and_leaves_no_output(
    voc_root, tmp_path, damage, encoding
):
    damage(voc.image_path(voc_root, "img_b"))
    out = tmp_path / "out"
    with pytest.raises(voc.VOCError) as caught:
        convert_split(voc_root, "train", out / "train", 2, encoding, progress=False)
    message = str(caught.value)
    assert "photo of image id 'img_b' cannot be decoded" in message
    assert str(voc.image_path(voc_root, "img_b")) in message
    assert not out.exists()  # neither shards nor temporary files, nor the folder made for them


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_bad_jpeg_leaves_nothing_with_compression_either(voc_root, tmp_path, compression):
    truncate(voc.image_path(voc_root, "img_c"))
    with pytest.raises(voc.VOCError, match="img_c"):
        convert_split(
            voc_root, "trainval", tmp_path / "tv", 3, "encoded", compression, progress=False
        )
    assert list(tmp_path.glob("tv*")) == [] and list(tmp_path.glob(".*")) == []


# --------------------------------------------------------------------------- whole splits


@pytest.mark.parametrize("encoding", ["raw", "encoded"])
@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_convert_split_writes_every_pair_of_the_split(voc_root, tmp_path, encoding, compression):
    out = tmp_path / "out" / "train"  # the folder is created
    paths = convert_split(
        voc_root, "train", out, np.int64(2), encoding, compression, progress=False
    )
    assert paths == _shard_paths(out, 2, compression)
    assert [verify(p, compression) for p in paths] == [2, 1]
    pairs = pairs_by_name(paths, encoding, compression)
    assert sorted(pairs) == ["img_a.jpg", "img_b.jpg", "img_c.jpg"]
    for image_id in SPLITS["train"]:
        image, mask = voc.load_pair(voc_root, image_id)
        # encoded: Pillow decodes the stored JPEG bytes exactly as load_image decoded the file
        np.testing.assert_array_equal(pairs[f"{image_id}.jpg"][0], image)
        np.testing.assert_array_equal(pairs[f"{image_id}.jpg"][1], mask)


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tensorflow_reads_the_converted_shards(voc_root, tmp_path, compression):
    paths = convert_split(
        voc_root, "val", tmp_path / "val", 1, "encoded", compression, progress=False
    )
    dataset = tf.data.TFRecordDataset([str(p) for p in paths], compression_type=compression or "")
    parse = feature_spec("encoded")
    names = [tf.io.parse_single_example(r, parse)["image/filename"].numpy() for r in dataset]
    assert names == [b"img_d.jpg", b"img_e.jpg"]


def test_convert_split_shards_round_robin_in_split_order(voc_root, tmp_path):
    paths = convert_split(voc_root, "trainval", tmp_path / "tv", num_shards=2, progress=False)
    names = [[name for name, _, _ in read_pairs([path])] for path in paths]
    ids = [f"{i}.jpg" for i in SPLITS["train"] + SPLITS["val"]]
    assert names == [ids[0::2], ids[1::2]]


def test_convert_split_shows_progress_on_stderr_only_when_asked(voc_root, tmp_path, capsys):
    convert_split(voc_root, "val", tmp_path / "quiet", progress=False)
    assert capsys.readouterr() == ("", "")
    convert_split(voc_root, "val", tmp_path / "loud", progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "val (raw)" in err and "2/2" in err


def test_convert_split_streams_pairs_one_at_a_time(voc_root, tmp_path, monkeypatch):
    loads, loaded_when_written = [], []
    real_load_pair, real_write_sharded = voc.load_pair, voc_records.write_sharded

    def counting_load_pair(root, image_id):
        loads.append(image_id)
        return real_load_pair(root, image_id)

    def recording_write_sharded(prefix, payloads, *args):
        def watched():
            for payload in payloads:
                loaded_when_written.append(len(loads))
                yield payload

        return real_write_sharded(prefix, watched(), *args)

    monkeypatch.setattr(voc, "load_pair", counting_load_pair)
    monkeypatch.setattr(voc_records, "write_sharded", recording_write_sharded)
    convert_split(voc_root, "trainval", tmp_path / "tv", progress=False)
    assert loaded_when_written == [1, 2, 3, 4, 5], "each pair is written before the next is loaded"


def test_convert_split_refuses_to_overwrite_before_reading_anything(voc_root, tmp_path):
    existing = _shard_paths(tmp_path / "train", 2)[1]
    existing.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="train-00001-of-00002.tfrecord"):
        convert_split(voc_root, "no-such-split", tmp_path / "train", 2, progress=False)
    assert existing.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["VOC2012", existing.name]
    paths = convert_split(voc_root, "train", tmp_path / "train", 2, overwrite=True, progress=False)
    assert [verify(p) for p in paths] == [2, 1]


def test_convert_split_reports_an_unknown_split_and_writes_nothing(voc_root, tmp_path):
    with pytest.raises(voc.VOCError, match="no split 'test'") as caught:
        convert_split(voc_root, "test", tmp_path / "test", progress=False)
    assert isinstance(caught.value, FileNotFoundError)
    assert list(tmp_path.glob("test*")) == [] and list(tmp_path.glob(".*")) == []


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        ({"encoding": "jpeg"}, ValueError, "encoding must be 'raw' or 'encoded'"),
        ({"num_shards": 0}, ValueError, "num_shards must be at least 1"),
        ({"num_shards": 2.0}, TypeError, "num_shards must be an int"),
        ({"num_shards": None}, TypeError, "num_shards must be an int"),
        ({"compression": "BZIP2"}, ValueError, "compression must be None, 'GZIP' or 'ZLIB'"),
    ],
)
def test_convert_split_refuses_bad_arguments(voc_root, tmp_path, arguments, error, message):
    with pytest.raises(error, match=message):
        convert_split(voc_root, "train", tmp_path / "x", progress=False, **arguments)
    assert list(tmp_path.glob("x*")) == []


def test_the_embedded_sample_converts(tmp_path):
    root = voc.sample_root()
    ids = voc.read_split(root, "train")
    paths = convert_split(root, "train", tmp_path / "sample", 2, "encoded", progress=False)
    assert summarize(paths).records == len(ids)
    assert sorted(pairs_by_name(paths, "encoded")) == sorted(f"{i}.jpg" for i in ids)


# --------------------------------------------------------------------------- summary


def test_summarize_counts_records_and_bytes(voc_root, tmp_path):
    paths = convert_split(voc_root, "trainval", tmp_path / "tv", num_shards=3, progress=False)
    summary = summarize(paths)
    assert (summary.files, summary.records) == (3, 5)
    assert summary.bytes == sum(p.stat().st_size for p in paths)
    assert str(summary) == f"5 records in 3 files, {summary.bytes:,} bytes"
    one = convert_split(voc_root, "val", tmp_path / "one", 2, progress=False)[:1]
    assert str(summarize(one)).startswith("1 record in 1 file, ")
    paths[1].write_bytes(paths[1].read_bytes()[:-1])
    with pytest.raises(RecordError, match="tv-00001-of-00003.tfrecord: record 1"):
        summarize(paths)


# --------------------------------------------------------------------------- read_pairs errors


def raw_features(height=2, width=3, image=b"\0" * 18, mask=b"\0" * 6, filename=b"bad.jpg"):
    def value(v):
        if isinstance(v, int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))

    values = dict(zip(RAW_KEYS, (height, width, image, mask, filename), strict=True))
    return {key: value(v) for key, v in values.items()}


def file_with(tmp_path, features, good_first=True):
    """A file whose record 1 (or 0) is an Example with ``features``; record 0 is a good one."""
    records = [serialized(tf.train.Example(features=tf.train.Features(feature=raw_features())))]
    if not good_first:
        records = []
    records.append(serialized(tf.train.Example(features=tf.train.Features(feature=features))))
    path = tmp_path / "bad.tfrecord"
    write_records(path, records, overwrite=True)
    return path


def test_the_raw_feature_builder_of_these_tests_is_valid(tmp_path):
    pairs = list(read_pairs([file_with(tmp_path, raw_features())]))
    assert [(name, image.shape, mask.shape) for name, image, mask in pairs] == [
        ("bad.jpg", (2, 3, 3), (2, 3))
    ] * 2


def expect_error(path, match, encoding="raw"):
    with pytest.raises(RecordError, match=match) as caught:
        list(read_pairs([path], encoding))
    return caught.value


def test_a_missing_feature_names_file_record_offset_and_feature(tmp_path):
    features = raw_features()
    del features["mask_raw"]
    path = file_with(tmp_path, features)
    error = expect_error(path, r"raw schema: no feature 'mask_raw'; keys found \['filename'")
    assert (error.path, error.index, error.offset) == (
        str(path),
        1,
        len(next(iter_records(path))) + 16,
    )
    assert str(error).startswith(f"{path}: record 1 at byte {error.offset}: ")


def test_a_feature_of_the_wrong_kind_is_named(tmp_path):
    features = raw_features()
    features["height"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"2"]))
    expect_error(
        file_with(tmp_path, features), "feature 'height' holds a bytes_list, expected a int64_list"
    )
    features["height"] = tf.train.Feature(float_list=tf.train.FloatList(value=[2.0]))
    expect_error(file_with(tmp_path, features), "feature 'height' holds a float_list, expected")


def test_a_feature_with_several_values_is_named(tmp_path):
    features = raw_features()
    features["width"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[3, 3]))
    expect_error(file_with(tmp_path, features), "feature 'width' holds 2 values, expected 1")


@pytest.mark.parametrize(
    "change", [{"image": b"\0" * 17}, {"mask": b"\0" * 7}, {"height": 3}, {"height": -2}]
)
def test_pixel_bytes_that_do_not_fit_the_sizes_are_refused(tmp_path, change):
    features = raw_features(**change)
    expect_error(
        file_with(tmp_path, features), r"raw schema: bad.jpg: \d+ image and \d+ mask bytes for"
    )


def test_a_payload_that_is_not_an_example(tmp_path):
    path = tmp_path / "text.tfrecord"
    write_records(path, [b"\xff\xff\xff not protobuf"])
    expect_error(
        path, "record 0 at byte 0: raw schema: the payload is not a serialized tf.train.Example"
    )


def test_reading_with_the_other_schema_says_which_schema_it_is(voc_root, tmp_path):
    raw = convert_split(voc_root, "val", tmp_path / "raw", progress=False)
    error = expect_error(raw[0], "encoded schema: no feature 'image/encoded'", "encoded")
    assert error.reason.endswith("; it is in the raw schema")
    assert "keys found ['filename', 'height', 'image_raw', 'mask_raw', 'width']" in error.reason
    encoded = convert_split(voc_root, "val", tmp_path / "enc", encoding="encoded", progress=False)
    error = expect_error(encoded[0], r"raw schema: no feature 'height'; keys found \['image/chan")
    assert error.reason.endswith("; it is in the encoded schema")


def test_encoded_records_with_a_broken_image_or_wrong_sizes(voc_root, tmp_path):
    example = voc_example(voc_root, "img_a", "encoded")
    example.features.feature["image/encoded"].bytes_list.value[0] = b"not a jpeg"
    path = tmp_path / "broken.tfrecord"
    write_records(path, [serialized(example)])
    expect_error(path, "img_a.jpg: feature 'image/encoded' is not a readable image", "encoded")
    example = voc_example(voc_root, "img_a", "encoded")
    example.features.feature["image/height"].int64_list.value[0] = 23
    write_records(path, [serialized(example)], overwrite=True)
    expect_error(
        path, r"img_a.jpg: image \(24, 32, 3\), mask \(24, 32\), sizes \(23, 32\)", "encoded"
    )


def test_read_pairs_refuses_an_unknown_encoding(tmp_path):
    with pytest.raises(ValueError, match="encoding must be 'raw' or 'encoded'"):
        next(read_pairs([tmp_path / "x.tfrecord"], "jpeg"))


def test_a_zlib_file_written_by_tensorflow_reads_back(voc_root, tmp_path):
    path = tmp_path / "tf.tfrecord.zz"
    with tf.io.TFRecordWriter(str(path), options="ZLIB") as writer:
        for image_id in SPLITS["val"]:
            writer.write(serialized(voc_example(voc_root, image_id)))
    names = [name for name, _, _ in read_pairs([path], "raw", "ZLIB")]
    assert names == ["img_d.jpg", "img_e.jpg"]
    assert os.path.getsize(path) < sum(len(r) for r in iter_records(path, "ZLIB"))


# --------------------------------------------------------------------------- foreign layouts


def _int64(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _bytes(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def write_like_the_guide(path, pairs):
    """The original guide's writer in TensorFlow 2: exactly four features, no file name."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for image, mask in pairs:
            example = tf.train.Example(features=tf.train.Features(feature={
                "height": _int64(image.shape[0]), "width": _int64(image.shape[1]),
                "image_raw": _bytes(image.tobytes()), "mask_raw": _bytes(mask.tobytes())}))  # fmt: skip
            writer.write(example.SerializeToString())
    return path


def test_the_original_guides_four_feature_file_reads_exactly(voc_root, tmp_path):
    pairs = [voc.load_pair(voc_root, image_id) for image_id in SPLITS["train"]]
    path = write_like_the_guide(tmp_path / "pascal_voc_segmentation.tfrecords", pairs)
    got = list(read_pairs([path]))
    assert [name for name, _, _ in got] == [f"{path}: record {i}" for i in range(3)]
    for (image, mask), (_, got_image, got_mask) in zip(pairs, got, strict=True):
        assert got_image.tobytes() == image.tobytes() and got_image.shape == image.shape
        assert got_mask.tobytes() == mask.tobytes() and got_mask.shape == mask.shape
    parsed = tf.io.parse_single_example(next(iter_records(path)), feature_spec("raw"))
    assert parsed["filename"].numpy() == b"" and int(parsed["height"]) == 24  # the default


def test_a_file_without_filename_reads_exactly_as_one_with_it(voc_root, tmp_path):
    with_names = convert_split(voc_root, "trainval", tmp_path / "named", progress=False)[0]
    examples = [tf.train.Example.FromString(r) for r in iter_records(with_names)]
    for example in examples[:3]:  # records 0-2 lose the name, 3 gets an empty one
        del example.features.feature["filename"]
    examples[3].features.feature["filename"].bytes_list.value[0] = b""
    without = tmp_path / "unnamed.tfrecord"
    write_records(without, [serialized(example) for example in examples])
    named, unnamed = list(read_pairs([with_names])), list(read_pairs([without]))
    assert [name for name, _, _ in unnamed] == [f"{without}: record {i}" for i in range(4)] + [
        "img_e.jpg"]  # fmt: skip
    for (_, *pair), (_, *same) in zip(named, unnamed, strict=True):
        assert all(
            a.tobytes() == b.tobytes() and a.shape == b.shape
            for a, b in zip(pair, same, strict=True)
        )


def test_a_bad_record_without_filename_is_named_by_file_and_record(tmp_path):
    features = raw_features(image=b"\0" * 17)
    del features["filename"]
    error = expect_error(file_with(tmp_path, features), r"raw schema: 17 image and 6 mask bytes")
    assert (error.index, str(error).count("bad.tfrecord")) == (1, 1)


@pytest.mark.parametrize("encoding", ["raw", "encoded"])
def test_a_record_of_neither_schema_names_file_record_and_keys(voc_root, tmp_path, encoding):
    """The official TensorFlow tutorial's images.tfrecords: a JPEG in image_raw, no mask."""
    jpeg = voc.image_path(voc_root, "img_a").read_bytes()
    path = tmp_path / "images.tfrecords"
    with tf.io.TFRecordWriter(str(path)) as writer:
        example = tf.train.Example(features=tf.train.Features(feature={
            "height": _int64(24), "width": _int64(32), "depth": _int64(3), "label": _int64(0),
            "image_raw": _bytes(jpeg)}))  # fmt: skip
        writer.write(example.SerializeToString())
    error = expect_error(path, f"{encoding} schema: no feature", encoding)
    assert str(error).startswith(f"{path}: record 0 at byte 0: {encoding} schema: no feature ")
    found = "['depth', 'height', 'image_raw', 'label', 'width']"
    expected = {
        "raw": "['filename (optional)', 'height', 'image_raw', 'mask_raw', 'width']",
        "encoded": str(sorted(ENCODED_KEYS)),
    }[encoding]
    assert f"keys found {found}, expected {expected}; it matches neither schema" in error.reason


# --------------------------------------------------------------------------- boundaries


def test_summarize_reads_compressed_shards_with_their_compression(voc_root, tmp_path):
    paths = convert_split(
        voc_root, "trainval", tmp_path / "tv", 2, compression="GZIP", progress=False
    )
    summary = summarize(paths, "GZIP")
    assert (summary.files, summary.records) == (2, 5)
    with pytest.raises(RecordError, match="starts like GZIP"):
        summarize(paths)


def test_a_raw_record_of_zero_rows_reads_as_an_empty_pair(tmp_path):
    path = file_with(tmp_path, raw_features(height=0, image=b"", mask=b""), good_first=False)
    ((name, image, mask),) = read_pairs([path])
    assert (name, image.shape, mask.shape) == ("bad.jpg", (0, 3, 3), (0, 3))


def test_a_grayscale_jpeg_reads_back_as_three_channels(voc_root, tmp_path):
    gray = make_pair(24, 32, 0)[0][..., 1]
    Image.fromarray(gray).save(voc.image_path(voc_root, "img_a"), quality=90)  # an "L" JPEG
    paths = convert_split(voc_root, "train", tmp_path / "gray", 1, "encoded", progress=False)
    image, mask = pairs_by_name(paths, "encoded")["img_a.jpg"]
    assert image.shape == (24, 32, 3)
    np.testing.assert_array_equal(image, voc.load_image(voc_root, "img_a"))
    np.testing.assert_array_equal(mask, voc.load_mask(voc_root, "img_a"))


def test_an_encoded_image_or_mask_alone_of_another_size_is_refused(voc_root, tmp_path):
    path = tmp_path / "sizes.tfrecord"
    example = voc_example(voc_root, "img_a", "encoded")  # 24 x 32
    png = io.BytesIO()
    Image.fromarray(np.zeros((24, 31), np.uint8)).save(png, format="PNG")
    example.features.feature["image/segmentation/class/encoded"].bytes_list.value[0] = (
        png.getvalue()
    )
    write_records(path, [serialized(example)])
    expect_error(
        path, r"img_a.jpg: image \(24, 32, 3\), mask \(24, 31\), sizes \(24, 32\)", "encoded"
    )
    example = voc_example(voc_root, "img_a", "encoded")
    other = voc.image_path(voc_root, "img_b").read_bytes()  # 17 x 9
    example.features.feature["image/encoded"].bytes_list.value[0] = other
    write_records(path, [serialized(example)], overwrite=True)
    expect_error(
        path, r"img_a.jpg: image \(17, 9, 3\), mask \(24, 32\), sizes \(24, 32\)", "encoded"
    )


def test_split_order_reads_the_split_file_of_the_task_and_shuffles_it_by_seed():
    root = voc.sample_root()
    segmentation = voc.read_split(root, "trainval")
    detection = voc.read_split(root, "trainval", folder="Main")
    assert segmentation != detection
    assert voc_records.split_order(root, "trainval") == segmentation
    assert voc_records.split_order(root, "trainval", "detection") == detection
    shuffled = voc_records.split_order(root, "trainval", "detection", shuffle_seed=8)
    assert shuffled == [detection[i] for i in permutation(len(detection), 8)] != detection
    message = r"^task must be 'segmentation' or 'detection', got 'boxes'$"
    with pytest.raises(ValueError, match=message):
        voc_records.split_order(root, "trainval", "boxes")


def test_convert_split_makes_missing_folders_and_shows_progress_by_default(
    voc_root, tmp_path, capsys
):
    paths = convert_split(voc_root, "val", tmp_path / "a" / "b" / "val")
    assert [verify(p) for p in paths] == [2]
    err = capsys.readouterr().err
    assert "val (raw)" in err and "image/s" in err  # counted in images, not tqdm's "it"


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"num_shards": 0}, "num_shards must be at least 1, got 0"),
        ({"encoding": "png"}, "encoding must be 'raw' or 'encoded', got 'png'"),
        ({"task": "boxes"}, "task must be 'segmentation' or 'detection', got 'boxes'"),
    ],
)
def test_convert_split_refuses_bad_arguments_before_making_any_folder(
    voc_root, tmp_path, arguments, message
):
    with pytest.raises(ValueError, match=message):
        convert_split(voc_root, "val", tmp_path / "out" / "val", progress=False, **arguments)
    assert not (tmp_path / "out").exists()


def test_record_payload_is_by_default_the_raw_segmentation_example(voc_root):
    assert voc_records.record_payload(voc_root, "img_a") == serialized(
        voc_example(voc_root, "img_a")
    )


def test_convert_split_writes_the_seeded_order_of_split_order(voc_root, tmp_path):
    order = voc_records.split_order(voc_root, "trainval", shuffle_seed=3)
    assert order != SPLITS["train"] + SPLITS["val"]
    paths = convert_split(voc_root, "trainval", tmp_path / "s", shuffle_seed=3, progress=False)
    assert [name for name, _, _ in read_pairs(paths)] == [f"{i}.jpg" for i in order]


def test_convert_split_of_boxes_says_detection_in_its_progress_bar(tmp_path, capsys):
    paths = convert_split(voc.sample_root(), "trainval", tmp_path / "boxes", task="detection")
    assert verify(paths[0]) == len(voc.read_split(voc.sample_root(), "trainval", folder="Main"))
    assert "trainval (detection)" in capsys.readouterr().err


def test_a_failed_conversion_removes_only_the_folders_it_made(voc_root, tmp_path):
    truncate(voc.image_path(voc_root, "img_b"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    for prefix in (tmp_path / "a" / "b" / "train", mine / "train"):
        with pytest.raises(voc.VOCError):
            convert_split(voc_root, "train", prefix, 2, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["VOC2012", "mine"]
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
