"""Detection records: the Object Detection API's PASCAL keys, every box as the XML says it."""

import hashlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import voc
from helpers.notebook import prepare_tensorflow

# Op determinism is process-wide: on, it would make tf.data ignore deterministic=False in
# every test of this worker (and hide an order bug in helpers.shuffle).
prepare_tensorflow(deterministic_ops=False)
import tensorflow as tf  # noqa: E402

from helpers.voc_records import (  # noqa: E402
    detection_example,
    detection_spec,
    parse_detection,
    record_payload,
)

SAMPLE = voc.sample_root()
IDS = voc.read_split(SAMPLE, "trainval", folder="Main")
CORNERS = ("xmin", "xmax", "ymin", "ymax")


def od_api_spec() -> dict:
    """The spec a reader of the Object Detection API's records writes, in plain TensorFlow."""
    spec = {
        "image/height": tf.io.FixedLenFeature([], tf.int64),
        "image/width": tf.io.FixedLenFeature([], tf.int64),
        "image/filename": tf.io.FixedLenFeature([], tf.string),
        "image/source_id": tf.io.FixedLenFeature([], tf.string),
        "image/key/sha256": tf.io.FixedLenFeature([], tf.string),
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "image/format": tf.io.FixedLenFeature([], tf.string),
        "image/object/class/text": tf.io.VarLenFeature(tf.string),
        "image/object/class/label": tf.io.VarLenFeature(tf.int64),
        "image/object/difficult": tf.io.VarLenFeature(tf.int64),
        "image/object/truncated": tf.io.VarLenFeature(tf.int64),
        "image/object/view": tf.io.VarLenFeature(tf.string),
    }
    for corner in CORNERS:
        spec[f"image/object/bbox/{corner}"] = tf.io.VarLenFeature(tf.float32)
    return spec


def xml_objects(image_id: str) -> tuple[int, int, list[dict[str, str]]]:
    """Width, height and the objects of the sample's XML, read with ElementTree, not helpers."""
    tree = ET.parse(SAMPLE / "Annotations" / f"{image_id}.xml").getroot()
    width = int(tree.findtext("size/width"))
    height = int(tree.findtext("size/height"))
    objects = []
    for element in tree.iter("object"):
        fields = {child.tag: child.text for child in element if child.tag != "bndbox"}
        objects.append(fields | {c: element.findtext(f"bndbox/{c}") for c in CORNERS})
    return width, height, objects


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every sample image converted by the command line and parsed with the OD API's keys."""
    out = tmp_path_factory.mktemp("detection")
    command = [sys.executable, "-m", "helpers", "convert-voc", "--task", "detection"]
    command += ["--split", "trainval", "--out", str(out / "tv"), "--num-shards", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    paths = sorted(str(p) for p in out.glob("tv-*-of-00002.tfrecord"))
    assert len(paths) == 2, paths
    parsed = {}
    for serialized in tf.data.TFRecordDataset(paths):
        values = tf.io.parse_single_example(serialized, od_api_spec())
        values = {
            k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v
            for k, v in values.items()
        }
        name = values["image/filename"].numpy().decode()
        parsed[name.removesuffix(".jpg")] = {k: v.numpy() for k, v in values.items()} | {
            "serialized": serialized.numpy()
        }
    return parsed


def test_every_image_is_converted_once_including_those_without_objects(records):
    assert sorted(records) == IDS
    counts = {i: len(r["image/object/class/label"]) for i, r in records.items()}
    assert counts["espresso_cup"] == counts["rocket_launch"] == 0
    assert max(counts.values()) >= 2, counts


def test_the_image_keys_hold_the_jpeg_file_unchanged_and_its_sha256(records):
    for image_id, values in records.items():
        jpeg = voc.image_path(SAMPLE, image_id).read_bytes()
        width, height, _ = xml_objects(image_id)
        assert values["image/encoded"] == jpeg, image_id
        assert values["image/key/sha256"] == hashlib.sha256(jpeg).hexdigest().encode()
        assert values["image/format"] == b"jpeg"
        assert values["image/filename"] == values["image/source_id"] == f"{image_id}.jpg".encode()
        assert (values["image/width"], values["image/height"]) == (width, height), image_id


def test_every_box_class_and_flag_is_what_the_xml_says(records):
    assert_boxes_are_what_the_xml_says(records)


def test_detection_example_itself_holds_what_the_xml_says():
    """The same checks on the function's Examples, in this process (the command line above runs
    in a subprocess, where mutation testing cannot see which function a test relies on)."""
    parsed = {}
    for image_id in IDS:
        serialized = detection_example(SAMPLE, image_id).SerializeToString()
        values = tf.io.parse_single_example(serialized, od_api_spec())
        values = {
            k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v
            for k, v in values.items()
        }
        parsed[image_id] = {k: v.numpy() for k, v in values.items()}
        assert parsed[image_id]["image/format"] == b"jpeg"
    assert_boxes_are_what_the_xml_says(parsed)


def assert_boxes_are_what_the_xml_says(records):
    checked = 0
    for image_id, values in records.items():
        width, height, objects = xml_objects(image_id)
        for key in ("image/object/class/text", "image/object/view"):
            assert values[key].dtype == object and len(values[key]) == len(objects), key
        for i, obj in enumerate(objects):
            assert values["image/object/class/text"][i] == obj["name"].encode()
            assert values["image/object/class/label"][i] == voc.VOC_CLASSES.index(obj["name"])
            assert 1 <= values["image/object/class/label"][i] <= 20
            assert values["image/object/view"][i] == obj["pose"].encode()
            assert values["image/object/difficult"][i] == int(obj["difficult"])
            assert values["image/object/truncated"][i] == int(obj["truncated"])
            for corner in CORNERS:  # the 1-based corner divided by the size, as the OD API does
                size = width if corner[0] == "x" else height
                expected = np.float32(int(obj[corner]) / size)
                assert values[f"image/object/bbox/{corner}"][i] == expected, (image_id, corner)
            checked += 1
    assert checked == sum(len(xml_objects(i)[2]) for i in IDS) >= 9
    assert any(w != h for w, h, _ in map(xml_objects, IDS)), "x and y need different sizes"


def test_the_writer_and_the_payload_of_the_converter_agree(records):
    for image_id in ("two_horses", "espresso_cup"):
        example = detection_example(SAMPLE, image_id)
        serialized = example.SerializeToString(deterministic=True)
        assert serialized == record_payload(SAMPLE, image_id, task="detection")
        assert serialized == records[image_id]["serialized"]


def test_labels_follow_voc_classes_from_aeroplane_1_to_tvmonitor_20(records):
    assert voc.VOC_CLASSES[1] == "aeroplane" and voc.VOC_CLASSES[20] == "tvmonitor"
    seen = {}  # label -> class text, over every object the converter wrote
    for values in records.values():
        texts = [text.decode() for text in values["image/object/class/text"]]
        seen.update(zip(values["image/object/class/label"].tolist(), texts, strict=True))
    assert seen and all(voc.VOC_CLASSES[label] == text for label, text in seen.items()), seen
    assert min(seen) >= 1, "label 0 is background, which no box has"
    assert len(seen) >= 3, f"the sample should show several classes: {seen}"


def test_parse_detection_gives_boxes_in_draw_bounding_boxes_order(records):
    for image_id, values in records.items():
        parsed = parse_detection(values["serialized"])
        image = parsed["image"].numpy()
        assert image.dtype == np.uint8 and image.shape == (*voc.load_image(SAMPLE, image_id).shape,)
        boxes = parsed["boxes"].numpy()
        assert boxes.dtype == np.float32 and boxes.shape == (len(values["image/object/view"]), 4)
        order = ("ymin", "xmin", "ymax", "xmax")
        expected = np.stack([values[f"image/object/bbox/{c}"] for c in order], axis=-1)
        np.testing.assert_array_equal(boxes, expected.reshape(-1, 4))
        np.testing.assert_array_equal(parsed["labels"], values["image/object/class/label"])
        assert parsed["difficult"].dtype == tf.bool and parsed["truncated"].dtype == tf.bool
        np.testing.assert_array_equal(parsed["truncated"], values["image/object/truncated"] > 0)
        assert parsed["filename"].numpy() == f"{image_id}.jpg".encode()


def test_parse_detection_in_a_dataset_pads_or_keeps_ragged(records):
    payloads = [records[i]["serialized"] for i in ("two_horses", "espresso_cup", "cat_chelsea")]
    dataset = tf.data.Dataset.from_tensor_slices(payloads).map(parse_detection)
    dataset = dataset.map(lambda d: {"boxes": d["boxes"], "labels": d["labels"]})
    padded = next(iter(dataset.padded_batch(3)))
    assert padded["boxes"].shape == (3, 2, 4)
    assert padded["labels"].numpy().tolist() == [[13, 13], [0, 0], [8, 0]]
    ragged = next(iter(dataset.ragged_batch(3)))
    assert ragged["labels"].to_list() == [[13, 13], [], [8]]
    assert ragged["boxes"].shape.as_list() == [3, None, 4]


def test_a_grayscale_jpeg_parses_as_three_channels(records):
    assert Image.open(voc.image_path(SAMPLE, "person_cameraman")).mode == "L"
    assert parse_detection(records["person_cameraman"]["serialized"])["image"].shape[2] == 3


def test_the_spec_has_the_od_api_keys_with_lists_as_ragged_features():
    spec = detection_spec()
    assert set(spec) == set(od_api_spec())
    for key, feature in spec.items():
        expected = tf.io.RaggedFeature if key.startswith("image/object/") else tf.io.FixedLenFeature
        assert isinstance(feature, expected), key


def test_a_record_of_another_schema_is_refused_not_read_as_no_boxes():
    from helpers.voc_records import voc_example

    segmentation = voc_example(SAMPLE, "cat_chelsea", "encoded").SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError, match="image/key/sha256"):
        parse_detection(segmentation)


def test_lists_of_different_lengths_are_refused():
    example = detection_example(SAMPLE, "two_horses")
    del example.features.feature["image/object/bbox/ymax"].float_list.value[-1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="image/object/bbox/ymax has another"):
        parse_detection(example.SerializeToString())


def test_difficult_and_truncated_flags_are_true_exactly_where_they_are_1():
    """The sample has no difficult object: set the flags of two_horses' two horses by hand."""
    example = detection_example(SAMPLE, "two_horses")
    for key, flags in (("difficult", [1, 0]), ("truncated", [0, 1])):
        example.features.feature[f"image/object/{key}"].int64_list.value[:] = flags
    parsed = parse_detection(example.SerializeToString())
    assert parsed["difficult"].numpy().tolist() == [True, False]
    assert parsed["truncated"].numpy().tolist() == [False, True]


# ---------------------------------------------------------------------------
# Bad input: every error names the image id
# ---------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the sample's two_horses and espresso_cup: photos, annotations, Main split."""
    root = tmp_path / "VOC2012"
    for folder in ("JPEGImages", "Annotations", "ImageSets/Main"):
        (root / folder).mkdir(parents=True)
    for image_id in ("two_horses", "espresso_cup"):
        shutil.copy(voc.image_path(SAMPLE, image_id), voc.image_path(root, image_id))
        shutil.copy(SAMPLE / f"Annotations/{image_id}.xml", root / f"Annotations/{image_id}.xml")
    (root / "ImageSets/Main/train.txt").write_text("two_horses\nespresso_cup\n")
    return root


def refused(root: Path, image_id: str) -> str:
    with pytest.raises(voc.VOCError) as caught:
        detection_example(root, image_id)
    assert repr(image_id) in str(caught.value), caught.value
    return str(caught.value)


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE annotation [
<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
<!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
]>
<annotation><filename>two_horses.jpg</filename><folder>&f;</folder></annotation>
"""


def external_entity(secret: Path) -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE annotation [<!ENTITY s SYSTEM "{secret.as_uri()}">]>\n'
        "<annotation><filename>two_horses.jpg</filename><folder>&s;</folder></annotation>\n"
    )


@pytest.mark.parametrize("hostile", ["billion laughs", "external entity"])
def test_hostile_xml_is_refused_at_once_without_reading_anything(root: Path, hostile: str):
    secret = root.parent / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    text = BILLION_LAUGHS if hostile == "billion laughs" else external_entity(secret)
    (root / "Annotations/two_horses.xml").write_text(text)
    message = refused(root, "two_horses")
    assert "DOCTYPE or ENTITY: refused" in message and "two_horses.xml" in message
    assert "TOP-SECRET" not in message and "aaaa" not in message
    # Refused at the DOCTYPE's name, before its declarations are read: a syntax error in the
    # first of them is never reached (a parser that went on would report it, line 2 or 3).
    broken = text.replace("<!ENTITY", "<!ENTITY %%% not a declaration", 1)
    (root / "Annotations/two_horses.xml").write_text(broken)
    assert refused(root, "two_horses") == message


def test_a_missing_annotation_names_the_id_and_file(root: Path):
    (root / "Annotations/two_horses.xml").unlink()
    assert "two_horses.xml" in refused(root, "two_horses")


def test_a_photo_whose_size_differs_from_the_xml_is_refused(root: Path):
    path = voc.image_path(root, "two_horses")
    Image.open(path).resize((250, 188)).save(path, format="JPEG")
    assert f"is 250x188, annotation says 500x375: {path}" in refused(root, "two_horses")


def test_a_photo_that_is_not_a_jpeg_file_is_refused(root: Path):
    path = voc.image_path(root, "espresso_cup")
    Image.open(path).save(path, format="PNG")
    assert "not a JPEG file" in refused(root, "espresso_cup")


def test_a_truncated_jpeg_is_refused(root: Path):
    path = voc.image_path(root, "two_horses")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert "cannot be decoded" in refused(root, "two_horses")


def test_an_unknown_class_is_refused(root: Path):
    path = root / "Annotations/two_horses.xml"
    path.write_text(path.read_text().replace("<name>horse</name>", "<name>unicorn</name>", 1))
    assert "unknown class 'unicorn'" in refused(root, "two_horses")


def test_a_failing_image_stops_the_command_line_naming_it(root: Path, tmp_path: Path):
    path = root / "Annotations/espresso_cup.xml"
    path.write_text(path.read_text().replace("<width>500</width>", "<width>0</width>"))
    command = [sys.executable, "-m", "helpers", "convert-voc", "--task", "detection", "--voc-root"]
    command += [str(root), "--split", "train", "--out", str(tmp_path / "out" / "x")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "'espresso_cup'" in done.stderr, done.stderr
    assert "<size/width> 0 is outside" in done.stderr
    assert not list((tmp_path / "out").glob("x*"))
