"""The embedded VOC-format sample is complete, VOC-like, small, and what its build script makes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage as ndi

from helpers import voc

ROOT = voc.sample_root()
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_voc_sample.py"
IDS = voc.read_split(ROOT, "trainval")
MAIN_IDS = voc.read_split(ROOT, "trainval", folder="Main")  # pictures with boxes


def all_files(root: Path) -> dict[str, Path]:
    return {
        path.relative_to(root).as_posix(): path
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {image_id: voc.load_pair(ROOT, image_id) for image_id in IDS}


def test_splits_are_sorted_disjoint_and_trainval_is_their_union():
    train = voc.read_split(ROOT, "train")
    val = voc.read_split(ROOT, "val")
    assert len(IDS) >= 8 and len(train) >= 5 and len(val) >= 2
    assert not set(train) & set(val)
    assert IDS == sorted(train + val)
    assert train == sorted(train) and val == sorted(val)
    for name in ("train", "val", "trainval"):
        raw = (ROOT / "ImageSets" / "Segmentation" / f"{name}.txt").read_bytes()
        assert b"\r" not in raw and raw.endswith(b"\n") and b"\n\n" not in raw, name


def test_ids_are_plain_and_every_file_belongs_to_a_listed_id():
    for image_id in MAIN_IDS:
        assert image_id.replace("_", "").isalnum() and image_id.isascii(), image_id
    assert sorted(p.stem for p in (ROOT / "JPEGImages").iterdir()) == MAIN_IDS
    assert sorted(p.stem for p in (ROOT / "SegmentationClass").iterdir()) == IDS
    assert sorted(p.name for p in (ROOT / "Annotations").iterdir()) == [
        f"{i}.xml" for i in MAIN_IDS
    ]


def test_main_splits_keep_the_segmentation_split_and_add_detection_only_pictures():
    for name in ("train", "val", "trainval"):
        main = voc.read_split(ROOT, name, "Main")
        segmentation = voc.read_split(ROOT, name)
        assert set(segmentation) <= set(main) and main == sorted(main), name
        raw = (ROOT / "ImageSets" / "Main" / f"{name}.txt").read_bytes()
        assert b"\r" not in raw and raw.endswith(b"\n") and b"\n\n" not in raw, name
    train = voc.read_split(ROOT, "train", "Main")
    val = voc.read_split(ROOT, "val", "Main")
    assert not set(train) & set(val) and MAIN_IDS == sorted(train + val)
    only = set(MAIN_IDS) - set(IDS)
    assert only == {"two_horses"}
    for image_id in only:  # detection only: no mask, and the XML says so
        assert not voc.mask_path(ROOT, image_id).exists()
        assert "<segmented>0</segmented>" in (ROOT / f"Annotations/{image_id}.xml").read_text()


def test_every_pair_loads_with_matching_sizes_and_valid_values(pairs):
    for image_id, (image, mask) in pairs.items():
        assert image.ndim == 3 and image.shape[2] == 3 and image.shape[:2] == mask.shape, image_id
        assert set(np.unique(mask).tolist()) <= set(range(21)) | {255}, image_id


def test_masks_are_palette_pngs_with_the_voc_palette():
    for image_id in IDS:
        with Image.open(voc.mask_path(ROOT, image_id)) as mask:
            assert mask.format == "PNG" and mask.mode == "P", image_id
            palette = np.array(mask.getpalette(), dtype=np.uint8).reshape(-1, 3)
        np.testing.assert_array_equal(palette[:256], voc.colormap(), err_msg=image_id)


def test_at_least_three_voc_classes_are_present(pairs):
    classes = set()
    for _, mask in pairs.values():
        classes |= {int(v) for v in np.unique(mask) if 0 < v < 21}
    assert len(classes) >= 3, [voc.VOC_CLASSES[c] for c in sorted(classes)]


def test_sizes_are_voc_like_and_varied(pairs):
    sizes = {image.shape[:2] for image, _ in pairs.values()}
    assert len(sizes) >= 3
    assert (384, 384) not in sizes
    assert all(max(size) <= 500 for size in sizes)
    assert any(min(size) < 384 for size in sizes)  # something to pad up to a 384 crop
    assert any(max(size) < 384 for size in sizes)  # ... even in both directions


def test_a_grayscale_jpeg_is_included_and_loads_as_rgb():
    gray = [i for i in MAIN_IDS if Image.open(voc.image_path(ROOT, i)).mode == "L"]
    assert gray, "no 1-channel JPEG in the sample"
    image = voc.load_image(ROOT, gray[0])
    assert image.shape[2] == 3 and np.array_equal(image[..., 0], image[..., 2])


def test_every_jpeg_is_a_jpeg():
    for image_id in MAIN_IDS:
        with Image.open(voc.image_path(ROOT, image_id)) as image:
            assert image.format == "JPEG" and image.mode in ("RGB", "L"), image_id


def test_objects_are_separated_from_background_by_a_void_band(pairs):
    for image_id, (_, mask) in pairs.items():
        assert (mask == 255).any(), f"{image_id}: no void at all"
        objects = (mask > 0) & (mask < 255)
        if not objects.any():
            continue
        # Distance from every background pixel to the nearest object pixel: a band of
        # about 5 px (3 of them outside the object) keeps it above 3.
        distance = ndi.distance_transform_edt(~objects)
        assert distance[mask == 0].min() > 3, f"{image_id}: background touches an object"
        # ... and the band is not the whole object: most of it keeps its class.
        assert objects.sum() > 2 * (mask == 255).sum() or objects.sum() > 5000, image_id


def test_void_only_pictures_are_named_in_sources_as_void(pairs):
    text = (ROOT / "SOURCES.md").read_text()
    for image_id, (_, mask) in pairs.items():
        if not ((mask > 0) & (mask < 255)).any():
            row = next(line for line in text.splitlines() if line.startswith(f"| `{image_id}` |"))
            assert "void (255) for" in row and "no VOC class" in row, image_id


def test_sources_lists_every_id_with_a_licence_column_and_its_boxes():
    text = (ROOT / "SOURCES.md").read_text()
    for image_id in MAIN_IDS:
        rows = [line for line in text.splitlines() if line.startswith(f"| `{image_id}` |")]
        # 7 filled columns, the last one the licence / credit; then 4 in the boxes table
        assert [row.count("|") for row in rows] == [8, 5], rows


def test_sample_is_small():
    total = sum(path.stat().st_size for path in all_files(ROOT).values())
    assert total < 3 * 2**20, f"{total:,} bytes"


def test_rebuilding_reproduces_the_committed_files_byte_for_byte(tmp_path: Path):
    out = tmp_path / "VOC2012"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    built = all_files(out)
    committed = all_files(ROOT)
    assert sorted(built) == sorted(committed)
    different = [name for name in built if built[name].read_bytes() != committed[name].read_bytes()]
    assert not different, (
        f"rebuild differs for {different}; run `make sample` and review the changes"
    )
    assert not list(out.rglob("*.tmp")), "temporary files left behind"


def test_boxes_are_the_mask_regions_grown_by_the_void_band_and_cover_every_class_pixel(pairs):
    for image_id, (_, mask) in pairs.items():
        annotation = voc.load_annotation(ROOT, image_id)
        height, width = mask.shape
        assert (annotation.width, annotation.height) == (width, height), image_id
        present = {voc.VOC_CLASSES[v] for v in np.unique(mask).tolist() if 0 < v < 255}
        assert {o.name for o in annotation.objects} == present, image_id
        for name in present:
            rows, cols = np.nonzero(mask == voc.VOC_CLASSES.index(name))
            covered = np.zeros(rows.shape, dtype=bool)
            for box in (o for o in annotation.objects if o.name == name):
                inside = (box.xmin - 1 <= cols) & (cols <= box.xmax - 1)
                inside &= (box.ymin - 1 <= rows) & (rows <= box.ymax - 1)
                covered |= inside
                top = rows[inside].min()
                left = cols[inside].min()
                bottom = rows[inside].max()
                right = cols[inside].max()
                grown = (max(left - 2, 0) + 1, max(top - 2, 0) + 1)
                grown += (min(right + 2, width - 1) + 1, min(bottom + 2, height - 1) + 1)
                assert (box.xmin, box.ymin, box.xmax, box.ymax) == grown, (image_id, box)
                border = top == 0 or left == 0 or bottom == height - 1 or right == width - 1
                assert box.truncated == border and not box.difficult, (image_id, box)
            assert covered.all(), f"{image_id}: {name} pixels outside every box"


def test_some_pictures_have_no_object_and_one_has_two():
    counts = {i: len(voc.load_annotation(ROOT, i).objects) for i in MAIN_IDS}
    assert counts["espresso_cup"] == counts["rocket_launch"] == 0
    assert counts["two_horses"] == 2 and set(counts.values()) == {0, 1, 2}
