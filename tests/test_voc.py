"""helpers.voc reads VOC2012-layout folders and refuses bad input with clear messages."""

import importlib.resources
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import voc

# ---------------------------------------------------------------------------
# Building small VOC folders in tmp_path
# ---------------------------------------------------------------------------


def make_root(base: Path) -> Path:
    root = base / "VOC2012"
    for folder in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (root / folder).mkdir(parents=True)
    return root


def write_photo(root: Path, image_id: str, array: np.ndarray, fmt: str = "JPEG") -> None:
    Image.fromarray(array).save(root / "JPEGImages" / f"{image_id}.jpg", format=fmt)


def write_mask(
    root: Path, image_id: str, indices: np.ndarray, palette: bytes | None = None
) -> None:
    image = Image.frombytes(
        "P", indices.shape[::-1], np.ascontiguousarray(indices, dtype=np.uint8).tobytes()
    )
    image.putpalette(palette if palette is not None else voc.colormap().tobytes())
    image.save(root / "SegmentationClass" / f"{image_id}.png")


def some_indices(height: int = 20, width: int = 30) -> np.ndarray:
    """A mask that uses every valid value: 0-20 in stripes and a void border."""
    mask = (np.arange(height * width).reshape(height, width) // 7 % 21).astype(np.uint8)
    mask[0, :] = voc.VOID_LABEL
    return mask


def gradient_rgb(height: int = 20, width: int = 30) -> np.ndarray:
    rows, cols = np.mgrid[:height, :width]
    return np.stack([rows * 10, cols * 8, 255 - rows * 5], axis=-1).astype(np.uint8)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_root(tmp_path)
    write_photo(root, "pair_ok", gradient_rgb())
    write_mask(root, "pair_ok", some_indices())
    return root


# ---------------------------------------------------------------------------
# Constants and palette
# ---------------------------------------------------------------------------


def test_class_table_matches_voc_order():
    assert len(voc.VOC_CLASSES) == 21
    assert voc.VOC_CLASSES[0] == "background" and voc.VOC_CLASSES[-1] == "tvmonitor"
    assert {voc.VOC_CLASSES.index(n): n for n in ("cat", "horse", "motorbike", "person")} == {
        8: "cat",
        13: "horse",
        14: "motorbike",
        15: "person",
    }
    assert voc.VOID_LABEL == 255


def test_colormap_known_entries():
    colours = voc.colormap()
    assert colours.shape == (256, 3) and colours.dtype == np.uint8
    assert colours[0].tolist() == [0, 0, 0]
    assert colours[1].tolist() == [128, 0, 0]
    assert colours[8].tolist() == [64, 0, 0]  # cat
    assert colours[15].tolist() == [192, 128, 128]  # person
    assert colours[255].tolist() == [224, 224, 192]  # void
    assert len({tuple(c) for c in colours.tolist()}) == 256  # every index has its own colour


# ---------------------------------------------------------------------------
# Split files
# ---------------------------------------------------------------------------


def test_read_split_tolerates_crlf_blank_lines_spaces_and_bom(root: Path):
    path = root / "ImageSets" / "Segmentation" / "train.txt"
    path.write_bytes(
        b"\xef\xbb\xbf2007_000032\r\n\r\n  2007_000039  \r\n\n\t2007_000063\r\n   \r\n"
    )
    assert voc.read_split(root, "train") == ["2007_000032", "2007_000039", "2007_000063"]


def test_read_split_keeps_file_order(root: Path):
    (root / "ImageSets" / "Segmentation" / "val.txt").write_text("b\na\nc\n")
    assert voc.read_split(root, "val") == ["b", "a", "c"]


def test_unknown_split_names_file_and_lists_available_splits(root: Path):
    for name in ("train", "val"):
        (root / "ImageSets" / "Segmentation" / f"{name}.txt").write_text("x\n")
    with pytest.raises(voc.VOCError) as caught:
        voc.read_split(root, "test")
    message = str(caught.value)
    assert "no split 'test'" in message
    assert str(root / "ImageSets" / "Segmentation" / "test.txt") in message
    assert "available splits: train, val" in message
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, voc.VOCError)


def test_unknown_split_when_the_folder_is_missing(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="has no .txt files or does not exist"):
        voc.read_split(tmp_path, "train")


def test_split_line_that_is_not_an_id_gives_the_line_number(root: Path):
    (root / "ImageSets" / "Segmentation" / "train.txt").write_text("good_id\n\n../../etc/passwd\n")
    with pytest.raises(voc.VOCError, match=r"train\.txt, line 3: image id '\.\./\.\./etc/passwd'"):
        voc.read_split(root, "train")


def test_a_split_file_that_is_not_utf8_names_the_file(root: Path):
    path = root / "ImageSets" / "Segmentation" / "train.txt"
    path.write_bytes(b"2007_000032\n\xff\n")
    expected = f"split file {path} is not UTF-8 text: 'utf-8' codec can't decode byte 0xff"
    with pytest.raises(voc.VOCError, match=re.escape(expected)):
        voc.read_split(root, "train")


@pytest.mark.parametrize("split", ["", "../train", "a/b", ".hidden"])
def test_split_name_must_be_plain(root: Path, split: str):
    with pytest.raises(voc.VOCError, match="not a plain name"):
        voc.read_split(root, split)


# ---------------------------------------------------------------------------
# Image ids and paths
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image_id", ["", "..", "../x", "a/b", "a\\b", ".hidden", "a..b", "a b", "x\n", "/abs"]
)
def test_ids_that_are_not_plain_names_are_refused(root: Path, image_id: str):
    for function in (voc.image_path, voc.mask_path, voc.load_image, voc.load_mask, voc.load_pair):
        with pytest.raises(voc.VOCError, match="not a plain name"):
            function(root, image_id)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda root: voc.image_path(root, 42), "image id must be a str, got int: 42"),
        (lambda root: voc.mask_path(root, 4.5), "image id must be a str, got float: 4.5"),
        (lambda root: voc.mask_path(root, "a/b"), "image id 'a/b' is not a plain name"),
        (lambda root: voc.load_annotation(root, "../x"), "image id '../x' is not a plain name"),
        (lambda root: voc.read_split(root, "a/b"), "split 'a/b' is not a plain name"),
        (lambda root: voc.read_split(root, "t", folder=".."), "folder '..' is not a plain name"),
    ],
)
def test_a_refused_name_is_called_what_it_is(root: Path, call, message: str):
    """Each refusal names the argument: image id, split or folder, and the type if not a str."""
    with pytest.raises(voc.VOCError, match="^" + re.escape(message)):
        call(root)


def test_paths_follow_the_voc_layout(root: Path):
    assert voc.image_path(root, "2007_000032") == root / "JPEGImages" / "2007_000032.jpg"
    assert voc.mask_path(str(root), "2007_000032") == root / "SegmentationClass" / "2007_000032.png"


# ---------------------------------------------------------------------------
# Photos
# ---------------------------------------------------------------------------


def test_rgb_jpeg_loads_as_uint8_rgb(root: Path):
    image = voc.load_image(root, "pair_ok")
    assert image.shape == (20, 30, 3) and image.dtype == np.uint8
    # JPEG is lossy, but a smooth gradient survives closely.
    assert np.abs(image.astype(int) - gradient_rgb().astype(int)).max() < 20


def test_grayscale_jpeg_becomes_three_equal_channels(root: Path):
    gray = (np.arange(20 * 30).reshape(20, 30) % 256).astype(np.uint8)
    write_photo(root, "gray", gray)
    assert Image.open(voc.image_path(root, "gray")).mode == "L"
    image = voc.load_image(root, "gray")
    assert image.shape == (20, 30, 3)
    assert (image == image[..., :1]).all()


def test_rgba_and_palette_files_become_rgb(root: Path):
    rgba = np.zeros((4, 5, 4), dtype=np.uint8)
    rgba[..., 0] = 200  # fully transparent red: the colour is kept, alpha dropped
    rgba[..., 3] = 0
    write_photo(root, "rgba", rgba, fmt="PNG")
    assert voc.load_image(root, "rgba")[0, 0].tolist() == [200, 0, 0]

    palette_image = Image.frombytes("P", (5, 4), bytes([1] * 20))
    palette_image.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    palette_image.info["transparency"] = 0
    palette_image.save(voc.image_path(root, "palette"), format="PNG", transparency=0)
    with warnings.catch_warnings():
        # PIL warns when palette transparency is converted carelessly
        warnings.simplefilter("error")
        image = voc.load_image(root, "palette")
    assert image.shape == (4, 5, 3) and image[0, 0].tolist() == [10, 20, 30]


def test_a_palette_photo_with_partial_transparency_becomes_rgb_without_warnings(root: Path):
    palette_image = Image.frombytes("P", (5, 4), bytes([1] * 10 + [2] * 10))
    palette_image.putpalette([0, 0, 0, 10, 20, 30, 40, 50, 60] + [0] * 759)
    palette_image.save(voc.image_path(root, "alpha"), format="PNG", transparency=b"\x00\x80")
    assert isinstance(Image.open(voc.image_path(root, "alpha")).info["transparency"], bytes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converting it straight to RGB would warn
        image = voc.load_image(root, "alpha")
    assert image[0, 0].tolist() == [10, 20, 30] and image[-1, -1].tolist() == [40, 50, 60]


def test_a_photo_over_the_pixel_limit_is_refused_even_where_warnings_are_ignored(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 400)  # 600 pixels: PIL only warns below 800
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(voc.VOCError, match=r"photo of image id 'pair_ok' is too large: "):
            voc.load_image(root, "pair_ok")


def test_a_photo_pil_only_warns_about_still_loads(root: Path):
    """Only the decompression-bomb warning is an error: a malformed MPO header is not."""
    jpeg = io.BytesIO()
    Image.new("RGB", (4, 3), (0, 128, 255)).save(jpeg, format="JPEG")
    app2 = b"MPF\x00" + b"not a TIFF header"
    segment = b"\xff\xe2" + struct.pack(">H", len(app2) + 2) + app2
    voc.image_path(root, "mpo").write_bytes(b"\xff\xd8" + segment + jpeg.getvalue()[2:])
    with pytest.warns(UserWarning, match="malformed MPO"):
        assert voc.load_image(root, "mpo").shape == (3, 4, 3)


def test_a_png_photo_with_a_broken_chunk_cannot_be_decoded(root: Path):
    """PIL raises SyntaxError here, not an OSError: it has no errno."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    pixels = zlib.compress(bytes(13 * 4))  # 4 rows: filter byte and 4 black RGB pixels
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
    broken = chunk(b"IDAT", pixels[:5]) + chunk(b"\x00\x01\x02\x03", pixels[5:])
    png = b"\x89PNG\r\n\x1a\n" + header + broken + chunk(b"IEND", b"")
    voc.image_path(root, "chunk").write_bytes(png)
    with pytest.raises(
        voc.VOCError, match=r"'chunk' cannot be decoded: .*chunk\.jpg \(broken PNG file"
    ):
        voc.load_image(root, "chunk")


def test_missing_photo_names_id_and_file(root: Path):
    with pytest.raises(voc.VOCError) as caught:
        voc.load_image(root, "nobody")
    assert "'nobody'" in str(caught.value)
    assert str(root / "JPEGImages" / "nobody.jpg") in str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)


def test_truncated_photo_is_a_voc_error(root: Path):
    data = voc.image_path(root, "pair_ok").read_bytes()
    voc.image_path(root, "pair_ok").write_bytes(data[: len(data) // 2])
    with pytest.raises(
        voc.VOCError, match=r"photo of image id 'pair_ok' cannot be decoded: .*pair_ok\.jpg"
    ):
        voc.load_image(root, "pair_ok")


def test_a_folder_in_place_of_the_photo_cannot_be_read(root: Path):
    voc.image_path(root, "folder").mkdir()
    with pytest.raises(
        voc.VOCError, match=r"photo of image id 'folder' cannot be read: .*folder\.jpg"
    ):
        voc.load_image(root, "folder")


def test_undecodable_photo_names_id_and_file(root: Path):
    voc.image_path(root, "broken").write_bytes(b"\xff\xd8 this is not really a JPEG")
    with pytest.raises(voc.VOCError, match=r"'broken' cannot be decoded: .*broken\.jpg"):
        voc.load_image(root, "broken")


# ---------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------


def test_mask_indices_round_trip_exactly(root: Path):
    mask = voc.load_mask(root, "pair_ok")
    assert mask.dtype == np.uint8 and mask.shape == (20, 30)
    np.testing.assert_array_equal(mask, some_indices())


def test_mask_gives_indices_whatever_the_palette_colours(root: Path):
    # All-black palette: converting to colours would lose every label.
    write_mask(root, "black_palette", some_indices(), palette=bytes(768))
    np.testing.assert_array_equal(voc.load_mask(root, "black_palette"), some_indices())


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA"])
def test_mask_that_is_not_a_palette_png_is_refused(root: Path, mode: str):
    Image.new(mode, (30, 20)).save(voc.mask_path(root, "pair_ok"))
    expected = rf"'pair_ok' is a '{mode}'-mode image, not 'P': .*pair_ok\.png"
    with pytest.raises(voc.VOCError, match=expected):
        voc.load_mask(root, "pair_ok")


def test_mask_values_outside_the_classes_are_listed(root: Path):
    indices = some_indices()
    indices[5, 5] = 21
    indices[6, 6] = 100
    indices[7, 7] = 254
    write_mask(root, "pair_ok", indices)
    with pytest.raises(
        voc.VOCError, match=r"'pair_ok' has values not in 0-20, 255: 21, 100, 254 \("
    ):
        voc.load_mask(root, "pair_ok")


def test_mask_with_many_bad_values_lists_a_few(root: Path):
    write_mask(root, "pair_ok", np.arange(30, 230, dtype=np.uint8).reshape(10, 20))
    with pytest.raises(voc.VOCError, match=r"30, 31, .*, 41, \.\.\."):
        voc.load_mask(root, "pair_ok")


@pytest.mark.parametrize(
    "bad, shown", [(12, "30, 31, .*, 41 \\("), (13, "30, 31, .*, 41, \\.\\.\\. \\(")]
)
def test_up_to_12_bad_mask_values_are_listed_all(root: Path, bad: int, shown: str):
    indices = some_indices()
    indices[1, :bad] = np.arange(30, 30 + bad)
    write_mask(root, "pair_ok", indices)
    with pytest.raises(voc.VOCError, match=f"has values not in 0-20, 255: {shown}"):
        voc.load_mask(root, "pair_ok")


def test_missing_mask_names_id_and_file(root: Path):
    write_photo(root, "photo_only", gradient_rgb())
    with pytest.raises(FileNotFoundError) as caught:
        voc.load_pair(root, "photo_only")
    assert "mask of image id 'photo_only'" in str(caught.value)
    assert str(root / "SegmentationClass" / "photo_only.png") in str(caught.value)


def test_undecodable_mask_is_a_voc_error(root: Path):
    voc.mask_path(root, "pair_ok").write_bytes(b"not a png")
    with pytest.raises(voc.VOCError, match=r"mask of image id 'pair_ok' cannot be decoded"):
        voc.load_mask(root, "pair_ok")


# ---------------------------------------------------------------------------
# Pairs
# ---------------------------------------------------------------------------


def test_pair_returns_photo_and_indices(root: Path):
    image, mask = voc.load_pair(root, "pair_ok")
    assert image.shape == (20, 30, 3) and mask.shape == (20, 30)
    np.testing.assert_array_equal(mask, some_indices())


def test_pair_with_different_sizes_gives_both(root: Path):
    write_mask(root, "pair_ok", some_indices(20, 31))
    with pytest.raises(
        voc.VOCError, match=r"'pair_ok': photo \(20, 30\) vs mask \(20, 31\) \(height, width\)"
    ):
        voc.load_pair(root, "pair_ok")


# ---------------------------------------------------------------------------
# Where the data is: VOC_ROOT or the embedded sample
# ---------------------------------------------------------------------------


def test_without_voc_root_the_sample_is_used(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VOC_ROOT", raising=False)
    assert voc.voc_root() == voc.sample_root()
    assert (voc.sample_root() / "JPEGImages").is_dir()
    monkeypatch.setenv("VOC_ROOT", "  ")
    assert voc.voc_root() == voc.sample_root()


def test_voc_root_points_at_a_real_layout(root: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VOC_ROOT", str(root))
    assert voc.voc_root() == root


def test_voc_root_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("VOC_ROOT", str(missing))
    with pytest.raises(voc.VOCError, match=rf"VOC_ROOT=.*: no folder {missing};"):
        voc.voc_root()


def test_voc_root_lacking_folders_says_which(root: Path, monkeypatch: pytest.MonkeyPatch):
    shutil.rmtree(root / "SegmentationClass")
    monkeypatch.setenv("VOC_ROOT", str(root))
    with pytest.raises(voc.VOCError) as caught:
        voc.voc_root()
    assert str(caught.value) == (  # no "did you mean": root holds no VOC2012 folder
        f"VOC_ROOT={str(root)!r}: {root} lacks SegmentationClass: not a VOC2012 folder"
    )


def test_a_missing_embedded_sample_says_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    missing = tmp_path / "sample_data" / "VOC2012"
    expected = f"the embedded VOC sample is missing at {missing}; reinstall the project"
    with pytest.raises(voc.VOCError, match=f"^{re.escape(expected)}$"):
        voc.sample_root()


def test_voc_root_at_the_devkit_folder_suggests_voc2012(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    devkit = root.parent
    monkeypatch.setenv("VOC_ROOT", str(devkit))
    with pytest.raises(voc.VOCError) as caught:
        voc.voc_root()
    assert "lacks JPEGImages, SegmentationClass, ImageSets/Segmentation" in str(caught.value)
    assert f"did you mean {root}?" in str(caught.value)


def test_importing_does_not_import_tensorflow_or_print():
    code = "import sys, helpers.voc; print(sorted(m for m in sys.modules if 'tensorflow' in m))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "VOC_ROOT": "/definitely/not/here"},
    )
    assert result.stdout == "[]\n" and result.stderr == ""


# ---------------------------------------------------------------------------
# load_annotation: Annotations/<id>.xml
# ---------------------------------------------------------------------------

OBJECT = """<object><name>{name}</name><pose>Left</pose><truncated>1</truncated>
<difficult>0</difficult><bndbox><xmin>{xmin}</xmin><ymin>2</ymin><xmax>{xmax}</xmax>
<ymax>7</ymax></bndbox></object>"""


def write_annotation(root: Path, image_id: str, body: str, filename: str | None = None) -> None:
    """An annotation of a 20x10 photo whose objects are ``body``."""
    (root / "Annotations").mkdir(exist_ok=True)
    xml = (
        f"<annotation><folder>VOC2012</folder><filename>{filename or image_id + '.jpg'}</filename>"
        f"<size><width>20</width><height>10</height><depth>3</depth></size>{body}</annotation>"
    )
    (root / "Annotations" / f"{image_id}.xml").write_text(xml)


def annotation_error(root: Path, image_id: str) -> str:
    with pytest.raises(voc.VOCError) as caught:
        voc.load_annotation(root, image_id)
    message = str(caught.value)
    assert repr(image_id) in message and f"{image_id}.xml" in message, message
    return message


def test_annotation_reads_every_field_exactly(root: Path):
    body = OBJECT.format(name="dog", xmin=1, xmax=20) + OBJECT.format(name="cat", xmin=3, xmax=3)
    write_annotation(root, "two", body)
    annotation = voc.load_annotation(root, "two")
    assert (annotation.image_id, annotation.filename) == ("two", "two.jpg")
    assert (annotation.width, annotation.height, annotation.depth) == (20, 10, 3)
    assert annotation.objects == (
        voc.VOCObject("dog", "Left", True, False, 1, 2, 20, 7),
        voc.VOCObject("cat", "Left", True, False, 3, 2, 3, 7),
    )
    with pytest.raises(AttributeError):  # frozen
        annotation.width = 3  # type: ignore[misc]


def test_annotation_accepts_the_first_class_and_a_box_one_pixel_high(root: Path):
    body = OBJECT.format(name="aeroplane", xmin=1, xmax=4).replace(">7</ymax>", ">2</ymax>")
    write_annotation(root, "flat", body)
    assert voc.load_annotation(root, "flat").objects == (
        voc.VOCObject("aeroplane", "Left", True, False, 1, 2, 4, 2),
    )


def test_annotation_sizes_go_up_to_2_to_the_31(root: Path):
    write_annotation(root, "huge", "")
    path = root / "Annotations" / "huge.xml"
    path.write_text(path.read_text().replace(">20</width>", f">{1 << 31}</width>"))
    assert voc.load_annotation(root, "huge").width == 1 << 31
    path.write_text(path.read_text().replace(f">{1 << 31}</", f">{(1 << 31) + 1}</"))
    assert "<size/width> 2147483649 is outside 1-2147483648" in annotation_error(root, "huge")


def test_annotation_without_objects_and_with_decimal_corners(root: Path):
    write_annotation(root, "none", "")
    assert voc.load_annotation(root, "none").objects == ()
    write_annotation(root, "half", OBJECT.format(name="dog", xmin="1.5", xmax="19"))
    assert voc.load_annotation(root, "half").objects[0].xmin == 1.5


def test_every_sample_annotation_loads_with_some_images_empty_and_some_crowded():
    root = voc.sample_root()
    counts = {
        i: len(voc.load_annotation(root, i).objects)
        for i in voc.read_split(root, "trainval", folder="Main")
    }
    assert min(counts.values()) == 0 and max(counts.values()) >= 2, counts


@pytest.mark.parametrize(
    "body, expected",
    [
        (OBJECT.format(name="unicorn", xmin=1, xmax=2), "unknown class 'unicorn'"),
        (OBJECT.format(name="dog", xmin=0, xmax=2), "<bndbox/xmin> 0 is outside 1-20"),
        (OBJECT.format(name="dog", xmin=-3, xmax=2), "<bndbox/xmin> -3 is outside 1-20"),
        (OBJECT.format(name="dog", xmin=1, xmax=21), "<bndbox/xmax> 21 is outside 1-20"),
        (OBJECT.format(name="dog", xmin=5, xmax=4), "dog box (5, 2, 4, 7) has min > max"),
        (OBJECT.format(name="dog", xmin="one", xmax=4), "<bndbox/xmin> is 'one', not a number"),
        (OBJECT.format(name="dog", xmin=1, xmax=4).replace("<pose>Left</pose>", ""), "no <pose>"),
        ("<object><name>dog</name></object>", "no <bndbox/xmin> in <object>"),
        (
            OBJECT.format(name="dog", xmin=1, xmax=4).replace(">Left<", "><"),
            "no <pose> in <object>",
        ),
        (OBJECT.format(name="dog", xmin=1, xmax=4).replace(">1</trunc", ">yes</trunc"), "0 or 1"),
        ("<object><name>dog", "not well-formed XML"),
    ],
)
def test_bad_annotations_are_refused_naming_the_id_and_file(root: Path, body: str, expected: str):
    write_annotation(root, "bad", body)
    assert expected in annotation_error(root, "bad")


def test_malformed_annotation_names_line_and_column(root: Path):
    (root / "Annotations").mkdir()
    (root / "Annotations" / "broken.xml").write_text("<annotation>\n<filename>x</file>\n")
    assert "line 2, column 14: mismatched tag" in annotation_error(root, "broken")


def test_missing_annotation_is_a_file_not_found_error(root: Path):
    with pytest.raises(FileNotFoundError):
        voc.load_annotation(root, "absent")
    assert "not found" in annotation_error(root, "absent")


def test_annotation_of_another_picture_is_refused(root: Path):
    write_annotation(root, "mine", "", filename="theirs.jpg")
    assert "filename 'theirs.jpg', expected <annotation> of mine.jpg" in annotation_error(
        root, "mine"
    )


def test_an_xml_file_that_is_not_an_annotation_says_what_it_is(root: Path):
    (root / "Annotations").mkdir()
    (root / "Annotations" / "odd.xml").write_text("<voc><filename>odd.jpg</filename></voc>")
    assert "<voc>, expected <annotation> of odd.jpg" in annotation_error(root, "odd")
