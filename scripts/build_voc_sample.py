"""Build the embedded PASCAL VOC2012-format sample: `make sample`.

The sample lives in ``helpers/sample_data/VOC2012`` with the layout of a real
``VOCdevkit/VOC2012`` folder::

    JPEGImages/<id>.jpg              the photos
    SegmentationClass/<id>.png       8-bit palette PNGs: class index per pixel,
                                     255 (void) in a band around every object
    Annotations/<id>.xml             detection boxes in VOC's XML, derived from the masks
    ImageSets/Segmentation/*.txt     train / val / trainval lists of ids with a mask
    ImageSets/Main/*.txt             train / val / trainval lists of ids with boxes
    SOURCES.md                       where every image comes from, and its licence

As in VOC2012, some images are for detection only: they have boxes but no mask
(``two_horses``; its label map is made here, turned into boxes, and not saved).

Every picture is a file that ships inside an installed package (scikit-image's
``skimage/data`` and matplotlib's ``mpl-data/sample_data``), so building needs
no network. The masks are made here, reproducibly: hand-placed polygons,
thresholds and a stereo disparity map, sometimes snapped to the image edges by
a random walker seeded from the polygon. Nothing is random, so running the
script twice gives byte-identical files (tests/test_voc_sample.py checks that
the committed files are exactly what this script writes).

Usage:
    python scripts/build_voc_sample.py                  # rewrite the committed sample
    python scripts/build_voc_sample.py --out DIR        # build somewhere else
    python scripts/build_voc_sample.py --preview DIR    # also write mask overlays to look at
"""

from __future__ import annotations

import argparse
import importlib.resources
import io
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage as ndi
from skimage import measure
from skimage.draw import polygon as draw_polygon
from skimage.segmentation import random_walker

from helpers._commit import commit, staged
from helpers.voc import VOC_CLASSES, VOID_LABEL, colormap

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "helpers" / "sample_data" / "VOC2012"
JPEG_QUALITY = 90
BAND_OUTSIDE = 3  # the void band reaches this many pixels out of an object ...
BAND_INSIDE = 2  # ... and this many pixels into it (5 px wide in all)

CAT, HORSE, MOTORBIKE, PERSON = (
    VOC_CLASSES.index(n) for n in ("cat", "horse", "motorbike", "person")
)

Points = list[tuple[float, float]]  # (x, y) pairs in the source image's pixel coordinates


# ---------------------------------------------------------------------------
# Reading the source files from the installed packages
# ---------------------------------------------------------------------------


def package_file(package: str, relative: str) -> Path:
    """Path of a data file inside an installed package (no network involved)."""
    path = Path(str(importlib.resources.files(package).joinpath(relative)))
    if not path.is_file():
        raise FileNotFoundError(f"{package} has no {relative} (looked at {path})")
    return path


def skimage_image(name: str) -> np.ndarray:
    """An image of ``skimage/data`` as a uint8 array (H, W) or (H, W, 3)."""
    with Image.open(package_file("skimage", f"data/{name}")) as im:
        return np.asarray(im if im.mode == "L" else im.convert("RGB"))


def grace_hopper() -> np.ndarray:
    """matplotlib's sample photo of Grace Hopper, RGB uint8."""
    with Image.open(package_file("matplotlib", "mpl-data/sample_data/grace_hopper.jpg")) as im:
        return np.asarray(im.convert("RGB"))


def motorcycle_disparity() -> np.ndarray:
    """Disparity (pixels) of the left motorcycle view; NaN where unknown."""
    with np.load(package_file("skimage", "data/motorcycle_disp.npz")) as data:
        disparity = data["arr_0"].astype(np.float64)
    disparity[~np.isfinite(disparity)] = np.nan
    return disparity


# ---------------------------------------------------------------------------
# Mask tools
# ---------------------------------------------------------------------------


def fill_polygon(shape: tuple[int, ...], points: Points) -> np.ndarray:
    """Boolean mask (H, W) of the inside of a polygon given as (x, y) points."""
    xs, ys = zip(*points, strict=True)
    rows, cols = draw_polygon(np.array(ys), np.array(xs), shape=shape[:2])
    mask = np.zeros(shape[:2], dtype=bool)
    mask[rows, cols] = True
    return mask


def largest_component(mask: np.ndarray) -> np.ndarray:
    """The biggest 8-connected blob of a boolean mask."""
    labels, count = ndi.label(mask, structure=np.ones((3, 3)))
    if count == 0:
        return mask
    sizes = ndi.sum_labels(mask, labels, index=np.arange(1, count + 1))
    return labels == 1 + int(np.argmax(sizes))


def snap_to_edges(
    image: np.ndarray, rough: np.ndarray, margin: int, beta: float = 130.0
) -> np.ndarray:
    """Move the outline of ``rough`` onto nearby image edges (random walker).

    Pixels deeper than ``margin`` inside the rough mask are seeds for the
    object, pixels farther than ``margin`` outside are seeds for the
    background; the random walker decides the band in between, following
    intensity edges. The direct solver keeps the result deterministic.
    """
    disk = _disk(margin)
    seeds = np.zeros(rough.shape, dtype=np.int32)
    seeds[~ndi.binary_dilation(rough, disk)] = 1
    seeds[ndi.binary_erosion(rough, disk, border_value=1)] = 2
    data = image.astype(np.float64) / 255.0
    labels = random_walker(
        data, seeds, beta=beta, mode="bf", channel_axis=-1 if data.ndim == 3 else None
    )
    return labels == 2


def _disk(radius: int) -> np.ndarray:
    y, x = np.mgrid[-radius : radius + 1, -radius : radius + 1]
    return x * x + y * y <= radius * radius


def add_void_band(labels: np.ndarray) -> np.ndarray:
    """Mark a void (255) band along every object outline, as VOC does.

    For each class present, the band is the object dilated by BAND_OUTSIDE
    pixels minus the object eroded by BAND_INSIDE pixels. The image border is
    not treated as an edge (an object cut by the frame gets no band there).
    """
    out = labels.copy()
    band = np.zeros(labels.shape, dtype=bool)
    for value in np.unique(labels):
        if value == 0:
            continue
        region = labels == value
        grown = ndi.binary_dilation(region, _disk(BAND_OUTSIDE))
        shrunk = ndi.binary_erosion(region, _disk(BAND_INSIDE), border_value=1)
        band |= grown & ~shrunk
    out[band] = VOID_LABEL
    return out


def label_map(shape: tuple[int, ...], *layers: tuple[int, np.ndarray]) -> np.ndarray:
    """A uint8 label map: 0 everywhere, then each (value, mask) layer painted in order."""
    labels = np.zeros(shape[:2], dtype=np.uint8)
    for value, mask in layers:
        labels[mask] = value
    return labels


def fill_small_holes(mask: np.ndarray, max_area: int) -> np.ndarray:
    """Fill the holes of a boolean mask that are at most ``max_area`` pixels."""
    holes = ndi.binary_fill_holes(mask) & ~mask
    labels, count = ndi.label(holes)
    if count == 0:
        return mask
    sizes = ndi.sum_labels(holes, labels, index=np.arange(1, count + 1))
    small = np.isin(labels, 1 + np.flatnonzero(sizes <= max_area))
    return mask | small


# ---------------------------------------------------------------------------
# One function per picture: source array -> label map at the source's size
# (0 background, a VOC class index, or 255 for an object VOC has no class for)
# ---------------------------------------------------------------------------

CAT_OUTLINE: Points = [
    (0, 125),
    (12, 115),
    (25, 105),
    (30, 85),
    (32, 60),
    (34, 30),
    (38, 0),
    (397, 0),
    (390, 20),
    (380, 40),
    (363, 60),
    (360, 80),
    (362, 100),
    (363, 120),
    (362, 140),
    (357, 160),
    (350, 180),
    (340, 200),
    (330, 220),
    (317, 240),
    (307, 260),
    (300, 280),
    (297, 300),
    (0, 300),
]


def labels_cat(image: np.ndarray) -> np.ndarray:
    """Chelsea: one hand-traced outline of the head and shoulders (soft fur, so no snapping)."""
    return label_map(image.shape, (CAT, fill_polygon(image.shape, CAT_OUTLINE)))


ASTRONAUT_OUTLINE: Points = [
    # hair, clockwise from the left
    (153, 80),
    (155, 60),
    (167, 40),
    (190, 23),
    (217, 15),
    (240, 17),
    (267, 27),
    (287, 47),
    (298, 67),
    (302, 83),
    (298, 100),
    (290, 117),
    (280, 130),
    (272, 138),
    (267, 150),
    (262, 165),
    # right side of the neck ring, right shoulder
    (270, 172),
    (287, 185),
    (298, 200),
    (305, 220),
    (306, 240),
    (303, 255),
    (320, 263),
    (340, 278),
    (353, 300),
    (360, 330),
    (362, 350),
    # along the helmet she holds (not part of the person), down to the bottom edge
    (345, 360),
    (322, 374),
    (302, 390),
    (288, 412),
    (280, 440),
    (277, 470),
    (278, 512),
    # left arm, up to the neck ring and the left side of the face
    (25, 512),
    (22, 480),
    (18, 420),
    (20, 350),
    (28, 310),
    (40, 275),
    (55, 250),
    (80, 228),
    (105, 212),
    (112, 195),
    (117, 178),
    (125, 167),
    (135, 158),
    (150, 151),
    (165, 147),
    (183, 147),
    (185, 135),
    (173, 123),
    (160, 110),
]


def labels_astronaut(image: np.ndarray) -> np.ndarray:
    """Eileen Collins: traced outline snapped to the edges; the helmet she holds is background."""
    rough = fill_polygon(image.shape, ASTRONAUT_OUTLINE)
    return label_map(image.shape, (PERSON, snap_to_edges(image, rough, margin=5)))


CAMERAMAN_FACE: Points = [
    (200, 133),
    (225, 126),
    (245, 132),
    (255, 145),
    (253, 158),
    (254, 167),
    (245, 171),
    (246, 176),
    (242, 181),
    (239, 186),
    (232, 192),
    (215, 200),
    (195, 195),
    (185, 170),
    (180, 140),
]
CAMERAMAN_RIGHT_GLOVE: Points = [
    (307, 172),
    (318, 168),
    (328, 172),
    (331, 185),
    (330, 200),
    (325, 215),
    (318, 228),
    (305, 225),
    (303, 200),
    (303, 180),
]
CAMERAMAN_TROUSERS: Points = [
    (100, 440),
    (140, 512),
    (88, 512),
    (95, 460),
]  # light grey, between the coat flaps
CAMERA_AND_TRIPOD: tuple[Points, ...] = (
    [
        (250, 140),
        (282, 138),
        (325, 138),
        (325, 156),
        (318, 165),
        (312, 183),
        (262, 183),
        (258, 160),
        (250, 152),
    ],
    [(268, 183), (296, 183), (296, 210), (268, 210)],  # tripod head
    [(286, 210), (299, 210), (299, 512), (286, 512)],  # tripod pole
)


def labels_cameraman(image: np.ndarray) -> np.ndarray:
    """Cameraman: dark coat and hair by threshold, plus traced face, trousers and glove, minus camera and tripod."""
    smooth = ndi.gaussian_filter(image.astype(np.float64), 1.5)
    person = largest_component(smooth < 70)
    for outline in (CAMERAMAN_FACE, CAMERAMAN_TROUSERS):
        person |= fill_polygon(image.shape, outline)
    person = ndi.binary_fill_holes(person)
    for outline in CAMERA_AND_TRIPOD:
        person &= ~fill_polygon(image.shape, outline)
    person |= fill_polygon(image.shape, CAMERAMAN_RIGHT_GLOVE)
    return label_map(image.shape, (PERSON, largest_component(person)))


GRACE_HOPPER_OUTLINE: Points = [
    # cap, clockwise from its left edge
    (170, 78),
    (180, 58),
    (197, 44),
    (222, 31),
    (250, 24),
    (280, 26),
    (310, 35),
    (335, 50),
    (352, 66),
    (362, 86),
    (371, 100),
    (373, 125),
    (370, 150),
    # right side of the face and the right shoulder
    (372, 175),
    (375, 200),
    (371, 228),
    (363, 258),
    (352, 282),
    (340, 296),
    (330, 325),
    (350, 342),
    (400, 361),
    (437, 374),
    (475, 386),
    (494, 405),
    (503, 430),
    (509, 467),
    (512, 520),
    (512, 600),
    # left shoulder and the left side of the face
    (12, 600),
    (19, 530),
    (25, 467),
    (28, 405),
    (37, 374),
    (62, 367),
    (94, 358),
    (125, 349),
    (156, 339),
    (187, 327),
    (200, 311),
    (205, 292),
    (187, 285),
    (169, 268),
    (156, 248),
    (153, 206),
    (153, 150),
    (150, 112),
    (160, 90),
]


def labels_grace_hopper(image: np.ndarray) -> np.ndarray:
    """Grace Hopper: traced outline snapped to the edges."""
    rough = fill_polygon(image.shape, GRACE_HOPPER_OUTLINE)
    return label_map(image.shape, (PERSON, snap_to_edges(image, rough, margin=5)))


def horse_coverage() -> np.ndarray:
    """How much of each pixel the horse silhouette covers, 0.0 to 1.0 (its edges are anti-aliased)."""
    with Image.open(package_file("skimage", "data/horse.png")) as im:
        gray = np.asarray(im.convert("L"), dtype=np.float64)
    return 1.0 - gray / 255.0


def paint_on_grass(coverage: np.ndarray, top: int = 0, left: int = 0) -> np.ndarray:
    """Horse coverage (0-1) painted brown over a patch of the grass texture tinted green: RGB."""
    height, width = coverage.shape
    grass = skimage_image("grass.png")[top : top + height, left : left + width]
    texture = (grass.astype(np.float64) / 255.0)[..., None]
    field = texture * np.array([90.0, 150.0, 60.0]) + np.array([40.0, 60.0, 25.0])
    horse = (0.6 + 0.4 * texture) * np.array([110.0, 70.0, 40.0])
    covered = coverage[..., None]
    return (covered * horse + (1.0 - covered) * field).round().astype(np.uint8)


def horse_on_grass() -> np.ndarray:
    """The horse silhouette painted brown over the grass texture, tinted green: RGB (328, 400, 3)."""
    return paint_on_grass(horse_coverage())


# Two horses on a 500x375 field: (scale, mirrored, left, top) of each silhouette on the canvas.
# The big one runs off the right edge (a truncated object); they stay well apart.
TWO_HORSES_SIZE = (500, 375)
TWO_HORSES = ((0.5, False, 30, 190), (0.8, True, 250, 60))


def two_horses_coverage() -> list[np.ndarray]:
    """The coverage (0-1) of each of the two horses on the canvas, one array per horse."""
    source = Image.fromarray(horse_coverage().astype(np.float32))  # mode "F"
    layers = []
    for scale, mirrored, left, top in TWO_HORSES:
        size = (round(source.width * scale), round(source.height * scale))
        horse = source.resize(size, Image.Resampling.BOX)
        if mirrored:
            horse = horse.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        canvas = Image.new("F", TWO_HORSES_SIZE, 0.0)
        canvas.paste(horse, (left, top))
        layers.append(np.clip(np.asarray(canvas, dtype=np.float64), 0.0, 1.0))
    return layers


def two_horses_on_grass() -> np.ndarray:
    """Two horse silhouettes, one small, one mirrored and cut by the frame, on grass: RGB."""
    return paint_on_grass(np.maximum(*two_horses_coverage()), top=100, left=0)


def labels_two_horses(image: np.ndarray) -> np.ndarray:
    """Each horse: the pixels its silhouette covers at least half of (two separate regions)."""
    return label_map(image.shape, *((HORSE, c >= 0.5) for c in two_horses_coverage()))


def labels_horse(image: np.ndarray) -> np.ndarray:
    """The horse: exactly the pixels the silhouette covers at least half of."""
    return label_map(image.shape, (HORSE, horse_coverage() >= 0.5))


def labels_motorbike_left(image: np.ndarray) -> np.ndarray:
    """The motorcycle is whatever stands out of the floor plane in the disparity map."""
    bike, _ = motorbike_in_left_view(motorcycle_disparity())
    return label_map(image.shape, (MOTORBIKE, bike))


def motorbike_in_left_view(disparity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of the motorcycle in the left stereo view: (cleaned, measured).

    ``measured`` are the pixels whose disparity puts them on the bike; the
    cleaned mask also has its cracks closed and its small holes filled.
    """
    rows, cols = np.mgrid[: disparity.shape[0], : disparity.shape[1]]
    # Fit the floor as a plane d = a*row + b*col + c on floor-only areas of the left view.
    floor = np.zeros(disparity.shape, dtype=bool)
    floor[400:, :] = True
    floor[330:, :90] = True
    floor[380:470, 100:700] = False
    floor &= np.isfinite(disparity)
    design = np.column_stack([rows[floor], cols[floor], np.ones(int(floor.sum()))])
    (a, b, c), *_ = np.linalg.lstsq(design, disparity[floor], rcond=None)
    above_floor = np.nan_to_num(disparity - (a * rows + b * cols + c), nan=0.0)
    near = np.nan_to_num(disparity, nan=0.0) > 32.0  # nearer than the bench and the shelves
    measured = largest_component((above_floor > 1.5) & near)
    bike = fill_small_holes(ndi.binary_closing(measured, _disk(2)), max_area=150)
    return bike, measured


def labels_motorbike_right(image: np.ndarray) -> np.ndarray:
    """The right view: every motorcycle pixel of the left view moved left by its disparity.

    A left-view pixel at column x shows up in the right view at column x - d.
    Pixels the left mask gained by closing and hole filling have the disparity
    of whatever is behind the bike, so they borrow the disparity of the nearest
    measured bike pixel instead. The result is then snapped to the edges.
    """
    disparity = motorcycle_disparity()
    left, measured = motorbike_in_left_view(disparity)
    _, (near_rows, near_cols) = ndi.distance_transform_edt(~measured, return_indices=True)
    bike_disparity = disparity[near_rows, near_cols]
    rows, cols = np.nonzero(left)
    shifted = cols - bike_disparity[rows, cols]
    bike = np.zeros(image.shape[:2], dtype=bool)
    for target in (np.floor(shifted).astype(int), np.ceil(shifted).astype(int)):
        inside = (target >= 0) & (target < image.shape[1])
        bike[rows[inside], target[inside]] = True
    bike = ndi.binary_closing(bike, _disk(2))  # close the cracks where the bike stretches
    bike = fill_small_holes(largest_component(bike), max_area=150)
    return label_map(image.shape, (MOTORBIKE, snap_to_edges(image, bike, margin=3)))


ESPRESSO_OUTLINE: Points = [  # cup, saucer and spoon together
    (77, 214),
    (84, 180),
    (93, 150),
    (104, 126),
    (126, 95),
    (146, 83),
    (168, 75),
    (178, 68),
    (190, 50),
    (215, 33),
    (250, 22),
    (286, 19),
    (325, 22),
    (360, 33),
    (385, 50),
    (398, 62),
    (405, 70),
    (410, 66),
    (418, 66),
    (423, 72),
    (420, 90),
    (440, 100),
    (460, 125),
    (472, 155),
    (477, 190),
    (476, 230),
    (470, 265),
    (458, 300),
    (437, 330),
    (405, 355),
    (370, 372),
    (330, 383),
    (290, 387),
    (250, 386),
    (210, 378),
    (175, 365),
    (145, 345),
    (120, 320),
    (100, 295),
    (85, 265),
    (78, 240),
]


def labels_espresso(image: np.ndarray) -> np.ndarray:
    """Cup, saucer and spoon: VOC has no class for them, so they are void, not background."""
    return label_map(image.shape, (VOID_LABEL, fill_polygon(image.shape, ESPRESSO_OUTLINE)))


ROCKET_OUTLINE: Points = [
    (322, 126),
    (328, 131),
    (332, 141),
    (334, 155),
    (334, 180),
    (334, 405),
    (311, 405),
    (311, 180),
    (311, 155),
    (313, 140),
    (316, 131),
]


def labels_rocket(image: np.ndarray) -> np.ndarray:
    """The Falcon 9 rocket: no VOC class, so void; the towers around it are background."""
    return label_map(image.shape, (VOID_LABEL, fill_polygon(image.shape, ROCKET_OUTLINE)))


# ---------------------------------------------------------------------------
# The table of pictures
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Picture:
    """One image of the sample and how it is made."""

    image_id: str
    split: str  # "train" or "val"
    source: str  # package and file(s)
    credit: str  # origin and licence, as the package states them
    load: Callable[[], np.ndarray]  # -> source picture, (H, W) gray or (H, W, 3) RGB uint8
    make_labels: Callable[
        [np.ndarray], np.ndarray
    ]  # source picture -> label map of the same height and width
    size: tuple[int, int]  # output (width, height)
    crop: tuple[int, int, int, int] | None = None  # (left, top, right, bottom) in source pixels
    extra: str = ""  # anything else done to the picture
    void_note: str = ""  # objects labelled void (255) because VOC has no class for them
    segmented: bool = True  # False: detection only (boxes, no mask, not in ImageSets/Segmentation)


def _skimage(name: str) -> Callable[[], np.ndarray]:
    """A loader for one picture of ``skimage/data``."""
    return lambda: skimage_image(name)


# Licence statements are quoted from the docstrings of the `skimage.data`
# functions that load each file (the data folder's README.txt does not give
# them); matplotlib's sample_data/README.txt gives none for grace_hopper.jpg.
MIDDLEBURY = (
    "Middlebury 2014 stereo benchmark (D. Scharstein et al., GCPR 2014), down-sampled by scikit-image; "
    "scikit-image states no licence for it, only the citation"
)
PICTURES: tuple[Picture, ...] = (
    Picture(
        "cat_chelsea",
        "val",
        "scikit-image `skimage/data/chelsea.png`",
        "Chelsea the cat. No copyright restrictions; CC0 by the photographer (Stefan van der Walt)",
        _skimage("chelsea.png"),
        labels_cat,
        size=(451, 300),
    ),
    Picture(
        "person_astronaut",
        "train",
        "scikit-image `skimage/data/astronaut.png`",
        "Astronaut Eileen Collins, from the NASA Great Images database. No known copyright restrictions, "
        "released into the public domain",
        _skimage("astronaut.png"),
        labels_astronaut,
        size=(375, 500),
        crop=(0, 0, 384, 512),
    ),
    Picture(
        "person_cameraman",
        "train",
        "scikit-image `skimage/data/camera.png`",
        "No copyright restrictions; CC0 by the photographer (Lav Varshney)",
        _skimage("camera.png"),
        labels_cameraman,
        size=(360, 360),
        extra="kept grayscale (a 1-channel JPEG)",
    ),
    Picture(
        "person_grace_hopper",
        "val",
        "matplotlib `mpl-data/sample_data/grace_hopper.jpg`",
        "Portrait of Commodore Grace M. Hopper. matplotlib states no licence or credit for this file; "
        "it is widely given as an official U.S. Navy photograph (public domain as a U.S. government work)",
        grace_hopper,
        labels_grace_hopper,
        size=(427, 500),
    ),
    Picture(
        "horse_on_grass",
        "train",
        "scikit-image `skimage/data/horse.png` and `skimage/data/grass.png`",
        "Horse silhouette from openclipart: no copyright restrictions, CC0 given by the owner (Andreas Preuss, "
        "marauder). Grass from DeviantArt (linolafett), CC0",
        horse_on_grass,
        labels_horse,
        size=(400, 328),
        extra="synthetic: the silhouette painted brown over the top-left 400x328 of the grass, tinted green",
    ),
    Picture(
        "motorbike_left",
        "train",
        "scikit-image `skimage/data/motorcycle_left.png`; mask from `motorcycle_disp.npz`",
        MIDDLEBURY,
        _skimage("motorcycle_left.png"),
        labels_motorbike_left,
        size=(500, 375),
        crop=(37, 0, 704, 500),
    ),
    Picture(
        "motorbike_right",
        "train",
        "scikit-image `skimage/data/motorcycle_right.png`; mask from `motorcycle_disp.npz`",
        MIDDLEBURY,
        _skimage("motorcycle_right.png"),
        labels_motorbike_right,
        size=(500, 375),
        crop=(0, 0, 667, 500),
        extra="the other view of motorbike_left, so both are in train",
    ),
    Picture(
        "espresso_cup",
        "train",
        "scikit-image `skimage/data/coffee.png`",
        "Courtesy of Pikolo Espresso Bar. No copyright restrictions; CC0 by the photographer (Rachel Michetti)",
        _skimage("coffee.png"),
        labels_espresso,
        size=(500, 333),
        void_note="cup, saucer and spoon",
    ),
    Picture(
        "rocket_launch",
        "val",
        "scikit-image `skimage/data/rocket.jpg`",
        "Launch of DSCOVR on a Falcon 9, photo by SpaceX, released into the public domain",
        _skimage("rocket.jpg"),
        labels_rocket,
        size=(500, 334),
        void_note="the rocket",
    ),
    Picture(
        "two_horses",
        "train",
        "scikit-image `skimage/data/horse.png` and `skimage/data/grass.png`",
        "Horse silhouette from openclipart: no copyright restrictions, CC0 given by the owner (Andreas Preuss, "
        "marauder). Grass from DeviantArt (linolafett), CC0",
        two_horses_on_grass,
        labels_two_horses,
        size=TWO_HORSES_SIZE,
        extra="synthetic, for detection only (no mask): the silhouette at half size and, mirrored, "
        "at 0.8 size and cut by the right edge, painted brown over rows 100-475 of the grass, tinted green",
        segmented=False,
    ),
)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def crop_and_resize(
    array: np.ndarray, crop: tuple[int, int, int, int] | None, size: tuple[int, int]
) -> Image.Image:
    """Crop then resize a photo with Lanczos filtering (anti-aliased)."""
    image = Image.fromarray(array)
    if crop is not None:
        image = image.crop(crop)
    if image.size != size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image


def resize_labels(
    labels: np.ndarray, crop: tuple[int, int, int, int] | None, size: tuple[int, int]
) -> np.ndarray:
    """Crop then resize a label map: each pixel takes the label covering most of it."""
    values = np.unique(labels)
    scores = []
    for value in values:
        plane = Image.fromarray(np.where(labels == value, 255, 0).astype(np.uint8))
        if crop is not None:
            plane = plane.crop(crop)
        if plane.size != size:
            plane = plane.resize(size, Image.Resampling.BOX)
        scores.append(np.asarray(plane))
    return values[np.argmax(np.stack(scores), axis=0)].astype(np.uint8)


def build(picture: Picture, source: np.ndarray) -> tuple[Image.Image, Image.Image]:
    """The photo and the palette mask of one picture, at the output size.

    A detection-only picture gets a mask too (its boxes come from it), which is not saved.
    """
    labels = picture.make_labels(source)
    if labels.shape != source.shape[:2]:
        raise AssertionError(
            f"{picture.image_id}: labels {labels.shape} vs image {source.shape[:2]}"
        )
    photo = crop_and_resize(source, picture.crop, picture.size)
    mask_array = add_void_band(resize_labels(labels, picture.crop, picture.size))
    mask = Image.frombytes("P", picture.size, np.ascontiguousarray(mask_array).tobytes())
    mask.putpalette(colormap().tobytes())
    return photo, mask


MIN_REGION_PIXELS = 100  # a class region smaller than this is a speck of the mask, not an object


@dataclass(frozen=True)
class Box:
    """One object for Annotations/<id>.xml: VOC's 1-based, inclusive pixel corners."""

    label: int  # VOC class index, 1-20
    xmin: int
    ymin: int
    xmax: int
    ymax: int
    truncated: bool  # the object's pixels reach the image border


def mask_objects(mask: np.ndarray) -> list[Box]:
    """The objects of a VOC mask, one per connected region of a class, in reading order.

    A region is an 8-connected group of pixels of one class, where void (255)
    pixels also connect (the void band can cut a thin part off an object).
    Regions under MIN_REGION_PIXELS pixels of the class are dropped, and a
    region whose box lies inside the box of a bigger region of the same class
    is a part of that object (a motorbike's mirror), not an object of its own.
    The box is that of the class pixels grown by BAND_INSIDE on every side
    (the void band covers that much of every object's edge), clipped to the image.
    """
    height, width = mask.shape
    boxes = []
    for value in (int(v) for v in np.unique(mask) if 0 < v < len(VOC_CLASSES)):
        pixels = mask == value
        regions = measure.label(pixels | (mask == VOID_LABEL), connectivity=2)
        found = []  # (size, (top, left, bottom, right)) of each region, 0-based inclusive
        for region in np.unique(regions[pixels]):
            rows, cols = np.nonzero(pixels & (regions == region))
            if rows.size >= MIN_REGION_PIXELS:
                found.append((rows.size, (rows.min(), cols.min(), rows.max(), cols.max())))
        kept: list[tuple[int, int, int, int]] = []
        for _, (top, left, bottom, right) in sorted(found, key=lambda f: -f[0]):
            if not any(
                t <= top and x <= left and bottom <= b and right <= r for t, x, b, r in kept
            ):
                kept.append((top, left, bottom, right))
        for top, left, bottom, right in kept:
            truncated = top == 0 or left == 0 or bottom == height - 1 or right == width - 1
            grow = BAND_INSIDE
            boxes.append(
                Box(
                    value,
                    xmin=int(max(left - grow, 0)) + 1,
                    ymin=int(max(top - grow, 0)) + 1,
                    xmax=int(min(right + grow, width - 1)) + 1,
                    ymax=int(min(bottom + grow, height - 1)) + 1,
                    truncated=bool(truncated),
                )
            )
    return sorted(boxes, key=lambda b: (b.xmin, b.ymin, b.label))


def annotation_xml(picture: Picture, photo: Image.Image, boxes: list[Box]) -> bytes:
    """Annotations/<id>.xml in the layout of VOC2012's (tab-indented, no XML declaration)."""
    root = ET.Element("annotation")

    def add(parent: ET.Element, tag: str, text: object = None) -> ET.Element:
        element = ET.SubElement(parent, tag)
        if text is not None:
            element.text = str(text)
        return element

    add(root, "folder", "VOC2012")
    add(root, "filename", f"{picture.image_id}.jpg")
    source = add(root, "source")
    add(source, "database", "TFRecord tutorial sample")
    add(source, "annotation", "boxes derived from the masks by scripts/build_voc_sample.py")
    add(source, "image", picture.source.split(" ")[0])
    size = add(root, "size")
    add(size, "width", photo.size[0])
    add(size, "height", photo.size[1])
    add(size, "depth", len(photo.getbands()))
    add(root, "segmented", int(picture.segmented))
    for box in boxes:
        element = add(root, "object")
        add(element, "name", VOC_CLASSES[box.label])
        add(element, "pose", "Unspecified")
        add(element, "truncated", int(box.truncated))
        add(element, "difficult", 0)
        bndbox = add(element, "bndbox")
        for corner in ("xmin", "ymin", "xmax", "ymax"):
            add(bndbox, corner, getattr(box, corner))
    ET.indent(root, space="\t")
    return (ET.tostring(root, encoding="unicode") + "\n").encode()


def describe_boxes(boxes: list[Box]) -> str:
    """The objects of one annotation, in words, for SOURCES.md."""
    if not boxes:
        return "none"
    words = []
    for box in boxes:
        cut = ", truncated" if box.truncated else ""
        corners = f"{box.xmin},{box.ymin},{box.xmax},{box.ymax}"
        words.append(f"{VOC_CLASSES[box.label]} ({corners}{cut})")
    return "; ".join(words)


def encode_jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=JPEG_QUALITY)
    return buffer.getvalue()


def encode_png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a synced temporary file next to ``path``, then commit it as
    helpers.records does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    commit([staged(path, data)], overwrite=True)


def split_files(pictures: tuple[Picture, ...]) -> dict[str, bytes]:
    """The contents of train.txt, val.txt and trainval.txt: sorted ids, one per line, LF endings."""
    splits: dict[str, list[str]] = {
        "train": sorted(p.image_id for p in pictures if p.split == "train"),
        "val": sorted(p.image_id for p in pictures if p.split == "val"),
    }
    splits["trainval"] = sorted(splits["train"] + splits["val"])
    return {
        name: "".join(f"{image_id}\n" for image_id in ids).encode() for name, ids in splits.items()
    }


def describe_changes(picture: Picture, source_shape: tuple[int, ...]) -> str:
    """What was done to the source picture, in words, for SOURCES.md."""
    height, width = source_shape[:2]
    steps = []
    if picture.crop is not None:
        left, top, right, bottom = picture.crop
        steps.append(f"cropped to x {left}-{right}, y {top}-{bottom}")
        width, height = right - left, bottom - top
    if (width, height) != picture.size:
        steps.append(f"resized {width}x{height} -> {picture.size[0]}x{picture.size[1]} (Lanczos)")
    if picture.extra:
        steps.append(picture.extra)
    return "; ".join(steps) if steps else "none"


def describe_mask(picture: Picture, mask: np.ndarray) -> str:
    """The classes a mask holds, in words, for SOURCES.md."""
    if not picture.segmented:
        return "no mask (detection only)"
    present = [int(v) for v in np.unique(mask) if 0 < v < len(VOC_CLASSES)]
    words = [f"{VOC_CLASSES[v]} ({v})" for v in present]
    if picture.void_note:
        words.append(f"void (255) for {picture.void_note} (no VOC class)")
    return ", ".join(words) if words else "background only"


SOURCES_HEADER = """\
# Sources of the embedded VOC-format sample

Generated by `scripts/build_voc_sample.py` (`make sample`); do not edit by hand.

Every picture is a file shipped inside an installed package, so the sample is
built offline. The licence and credit column repeats what the package states:
for scikit-image, the docstring of the `skimage.data` function that loads the
file (the data folder's `README.txt` gives no licences); for matplotlib, its
`sample_data/README.txt`, which gives none for `grace_hopper.jpg`. Sizes are
width x height in pixels. The build used scikit-image {skimage}, matplotlib
{matplotlib} and Pillow {pillow}.

How the masks were made: hand-placed polygons (skimage.draw.polygon), a
threshold (camera), the exact silhouette (horse) and the stereo disparity map
shipped with the motorcycle pictures; the astronaut, Grace Hopper and the right
motorcycle view are snapped to image edges by a random walker seeded from the
polygon. Labels are then resized with the pictures, and a void band (255) five
pixels wide (three outside each object, two inside) is drawn along every
object outline, as in VOC. Objects VOC has no class for are background when
they are incidental (flags, the held helmet, camera and tripod, launch towers)
and void when they are the subject of the picture (the espresso cup, the
rocket), so that a model is not taught they are background.

| id | split | size | source | what was done | mask classes | licence / credit |
|---|---|---|---|---|---|---|
"""

ANNOTATIONS_HEADER = """
## Detection boxes

`Annotations/<id>.xml` holds the boxes of every picture in VOC2012's XML layout,
and `ImageSets/Main/{{train,val,trainval}}.txt` lists the pictures with boxes (the
same split as `ImageSets/Segmentation`, plus detection-only pictures). The boxes
are derived from the masks, not drawn by hand: one object per connected region
of a class (8-connected; void pixels connect too, so a thin part cut off by the
void band stays with its object). A region of fewer than {min_pixels} class pixels is
dropped as a speck, and a region whose box lies inside the box of a bigger
region of the same class is a part of that object (the mirror of
`motorbike_right`), not an object of its own. The box is the extent of the
class pixels grown by {band} pixels on every side, because the void band covers
the outer {band} pixels of every object, clipped to the image; corners are VOC's
1-based inclusive pixel numbers. Compared with the label maps before the band
was drawn, the boxes are the same or up to 3 pixels smaller on a side where a
thin tip (an ear, a mirror) vanished in the band. `truncated` is 1 when the object reaches the
image border, `difficult` is 0 and `pose` is `Unspecified` everywhere; `depth`
is the JPEG's number of channels (1 for the grayscale `person_cameraman`).

The pictures whose masks hold only void (`espresso_cup`, `rocket_launch`) have
no objects: their XML has no `object` element. No mask holds two objects, so
`two_horses` was added for detection only, as VOC2012 has many pictures with
boxes and no mask: it is not in `ImageSets/Segmentation` and has no
`SegmentationClass` PNG; its boxes come the same way from a label map of the
two silhouettes (each pixel the silhouette covers at least half of) that the
build script makes and does not save.

| id | Main split | segmented | objects: name (xmin,ymin,xmax,ymax) |
|---|---|---|---|
"""


def sources_markdown(rows: list[str], annotation_rows: list[str]) -> bytes:
    """SOURCES.md: the header and one table row per picture, then the boxes of each."""
    import matplotlib
    import PIL
    import skimage

    def minor(version: str) -> str:
        return ".".join(version.split(".")[:2])

    header = SOURCES_HEADER.format(
        skimage=minor(skimage.__version__),
        matplotlib=minor(matplotlib.__version__),
        pillow=minor(PIL.__version__),
    )
    boxes = ANNOTATIONS_HEADER.format(min_pixels=MIN_REGION_PIXELS, band=BAND_INSIDE)
    return (header + "".join(rows) + boxes + "".join(annotation_rows)).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output VOC2012 folder (default: %(default)s)"
    )
    parser.add_argument(
        "--preview", type=Path, help="also write image+mask overlays into this folder"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    rows, annotation_rows = [], []
    for picture in PICTURES:
        source = picture.load()
        photo, mask = build(picture, source)
        write_atomically(out / "JPEGImages" / f"{picture.image_id}.jpg", encode_jpeg(photo))
        if picture.segmented:
            png = encode_png(mask)
            write_atomically(out / "SegmentationClass" / f"{picture.image_id}.png", png)
        boxes = mask_objects(np.asarray(mask))
        xml = annotation_xml(picture, photo, boxes)
        write_atomically(out / "Annotations" / f"{picture.image_id}.xml", xml)
        annotation_rows.append(
            f"| `{picture.image_id}` | {picture.split} | {int(picture.segmented)} | "
            f"{describe_boxes(boxes)} |\n"
        )
        if args.preview:
            args.preview.mkdir(parents=True, exist_ok=True)
            overlay(photo, mask).save(args.preview / f"{picture.image_id}.png")
        size = f"{photo.size[0]}x{photo.size[1]}"
        classes = describe_mask(picture, np.asarray(mask))
        rows.append(
            f"| `{picture.image_id}` | {picture.split} | {size} | {picture.source} | "
            f"{describe_changes(picture, source.shape)} | {classes} | {picture.credit} |\n"
        )
        print(f"{picture.image_id:20} {picture.split:5} {size:8} {classes}")
    segmented = tuple(p for p in PICTURES if p.segmented)
    for folder, pictures in (("Segmentation", segmented), ("Main", PICTURES)):
        for name, content in split_files(pictures).items():
            write_atomically(out / "ImageSets" / folder / f"{name}.txt", content)
    write_atomically(out / "SOURCES.md", sources_markdown(rows, annotation_rows))
    warn_about_strays(out)
    print(f"wrote {len(PICTURES)} pictures to {out}")
    return 0


def warn_about_strays(out: Path) -> None:
    """Name files in the output folder that this script did not write (left from an older table?)."""
    expected = {f"{p.image_id}.jpg" for p in PICTURES} | {f"{p.image_id}.xml" for p in PICTURES}
    expected |= {f"{p.image_id}.png" for p in PICTURES if p.segmented}
    for folder in ("JPEGImages", "SegmentationClass", "Annotations"):
        for path in sorted((out / folder).iterdir()):
            if path.name not in expected:
                print(
                    f"warning: {path} is not part of the sample; delete it if it is left over",
                    file=sys.stderr,
                )


def overlay(photo: Image.Image, mask: Image.Image) -> Image.Image:
    """Side by side: the photo with void tinted yellow, and the mask in VOC colours."""
    rgb = np.array(photo.convert("RGB"))
    indices = np.asarray(mask)
    void = indices == VOID_LABEL
    rgb[void] = rgb[void] // 2 + np.array([127, 127, 0], dtype=np.uint8)
    colours = colormap()[indices]
    return Image.fromarray(
        np.concatenate([rgb, np.full((rgb.shape[0], 8, 3), 255, np.uint8), colours], axis=1)
    )


if __name__ == "__main__":
    sys.exit(main())
