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
from helpers.records import iter_records, verify, write_records
from helpers.shuffle import permutation
from helpers.voc_records import convert_split, feature_spec, voc_example

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
    "image/encoded",
    "image/filename",
    "image/format",
    "image/height",
    "image/width",
    "image/channels",
    "image/segmentation/class/encoded",
    "image/segmentation/class/format",
]


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


def read_pairs(paths, encoding="raw", compression=None):
    """``(filename, image, mask)`` of every record, parsed as notebook 03 does (PIL decodes)."""
    pairs = []
    spec = feature_spec(encoding)
    for record in tf.data.TFRecordDataset([str(p) for p in paths], compression or ""):
        f = {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        if encoding == "raw":
            size = int(f["height"]), int(f["width"])
            image = np.frombuffer(f["image_raw"], np.uint8).reshape(*size, 3)
            mask = np.frombuffer(f["mask_raw"], np.uint8).reshape(size)
            name = f["filename"]
        else:
            image = np.array(Image.open(io.BytesIO(f["image/encoded"])).convert("RGB"))
            mask = np.array(Image.open(io.BytesIO(f["image/segmentation/class/encoded"])))
            name = f["image/filename"]
        pairs.append((name.decode(), image, mask))
    return pairs


def pairs_by_name(paths, encoding, compression=None):
    return {name: (image, mask) for name, image, mask in read_pairs(paths, encoding, compression)}


# --------------------------------------------------------------------------- module


def test_importing_does_not_import_tensorflow():
    code = "import sys, helpers.voc_records; print([m for m in sys.modules if 'tensorflow' in m])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", "")


def test_each_listed_encoding_round_trips_and_the_refusal_names_exactly_those(voc_root, tmp_path):
    """Notebook 04 loops over ENCODINGS: each must write a pair that reads back as it was."""
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
    height = int(parsed["height"])
    width = int(parsed["width"])
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
    suffix = {None: ".tfrecord", "GZIP": ".tfrecord.gz", "ZLIB": ".tfrecord.zz"}[compression]
    assert paths == [out.with_name(f"train-0000{i}-of-00002{suffix}") for i in range(2)]
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
    loads = []
    loaded_when_written = []
    real_load_pair = voc.load_pair
    real_write_sharded = voc_records.write_sharded

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
    existing = tmp_path / "train-00001-of-00002.tfrecord"
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
    """Before reading anything: an unknown split is not even looked up."""
    with pytest.raises(error, match=message):
        convert_split(voc_root, "no-such-split", tmp_path / "x", progress=False, **arguments)
    assert list(tmp_path.glob("x*")) == []


def test_the_embedded_sample_converts(tmp_path):
    root = voc.sample_root()
    ids = voc.read_split(root, "train")
    paths = convert_split(root, "train", tmp_path / "sample", 2, "encoded", progress=False)
    assert sum(verify(p) for p in paths) == len(ids)
    assert sorted(pairs_by_name(paths, "encoded")) == sorted(f"{i}.jpg" for i in ids)


def test_a_zlib_file_written_by_tensorflow_reads_back(voc_root, tmp_path):
    path = tmp_path / "tf.tfrecord.zz"
    with tf.io.TFRecordWriter(str(path), options="ZLIB") as writer:
        for image_id in SPLITS["val"]:
            writer.write(serialized(voc_example(voc_root, image_id)))
    names = [name for name, _, _ in read_pairs([path], "raw", "ZLIB")]
    assert names == ["img_d.jpg", "img_e.jpg"]
    assert os.path.getsize(path) < sum(len(r) for r in iter_records(path, "ZLIB"))


# --------------------------------------------------------------------------- boundaries


def test_a_grayscale_jpeg_reads_back_as_three_channels(voc_root, tmp_path):
    gray = make_pair(24, 32, 0)[0][..., 1]
    Image.fromarray(gray).save(voc.image_path(voc_root, "img_a"), quality=90)  # an "L" JPEG
    paths = convert_split(voc_root, "train", tmp_path / "gray", 1, "encoded", progress=False)
    image, mask = pairs_by_name(paths, "encoded")["img_a.jpg"]
    assert image.shape == (24, 32, 3)
    np.testing.assert_array_equal(image, voc.load_image(voc_root, "img_a"))
    np.testing.assert_array_equal(mask, voc.load_mask(voc_root, "img_a"))


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


def test_convert_split_with_index_writes_each_shards_offsets_beside_it(voc_root, tmp_path):
    from helpers.index import RecordView, build_index

    paths = convert_split(voc_root, "trainval", tmp_path / "tv", 2, progress=False, index=True)
    for path in paths:
        starts, sizes = np.loadtxt(path.with_name(path.name + ".index"), np.int64, ndmin=2).T
        assert starts.tolist() == build_index(path)[:-1].tolist()
        assert (starts + sizes).tolist() == build_index(path)[1:].tolist()
    assert RecordView(paths)[[0, -1]] == [
        next(iter_records(paths[0])),
        list(iter_records(paths[1]))[-1],
    ]
