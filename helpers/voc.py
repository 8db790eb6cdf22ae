"""Read photos, palette masks, split files and boxes of a VOC2012-layout folder (notebook 01)."""

import importlib.resources
import os
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

import numpy as np
from PIL import Image, UnidentifiedImageError

from helpers._checks import PathLike

#: The 21 class names of VOC2012 segmentation; the index is the class id.
VOC_CLASSES: tuple[str, ...] = (
    "background",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)

#: Mask value for "not labelled" (object outlines, ambiguous regions); losses ignore it.
VOID_LABEL = 255

_FOLDERS = ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_VALID = frozenset(range(len(VOC_CLASSES))) | {VOID_LABEL}


class VOCError(ValueError):
    """A VOC folder, split file, image or mask is not what it should be."""


class _MissingFile(VOCError, FileNotFoundError):
    """A file the VOC layout calls for is missing (catch it as VOCError or FileNotFoundError)."""


def colormap() -> np.ndarray:
    """The VOC palette, uint8 (256, 3), index to RGB colour. Shown in notebook 02."""
    # Bit 3 * g + c of an index sets bit 7 - g of colour channel c (g = 0, 1, 2; c = R, G, B).
    bits = (np.arange(256)[:, None, None] >> (3 * np.arange(3)[:, None] + np.arange(3))) & 1
    return (bits << (7 - np.arange(3))[:, None]).sum(axis=1).astype(np.uint8)


def sample_root() -> Path:
    """The small VOC2012-format sample inside this package. VOCError if it is missing."""
    root = Path(str(importlib.resources.files("helpers").joinpath("sample_data", "VOC2012")))
    if not (root / "JPEGImages").is_dir():
        raise VOCError(f"the embedded VOC sample is missing at {root}; reinstall the project")
    return root


def voc_root() -> Path:
    """``$VOC_ROOT`` if set, else :func:`sample_root` (notebook 02); VOCError if no VOC2012."""
    value = os.environ.get("VOC_ROOT", "")
    if not value.strip():
        return sample_root()
    root = Path(value).expanduser()
    if not root.is_dir():
        raise VOCError(f"VOC_ROOT={value!r}: no folder {root}; unset it to use the sample")
    if missing := ", ".join(name for name in _FOLDERS if not (root / name).is_dir()):
        hint = f" (did you mean {root / 'VOC2012'}?)" if (root / "VOC2012").is_dir() else ""
        raise VOCError(f"VOC_ROOT={value!r}: {root} lacks {missing}: not a VOC2012 folder{hint}")
    return root


def _plain(name: object, what: str) -> str:
    """``name`` if it is a plain file stem (no separators, no '..'); else VOCError."""
    if not isinstance(name, str):
        raise VOCError(f"{what} must be a str, got {type(name).__name__}: {name!r}")
    if not _PLAIN.fullmatch(name) or ".." in name:
        raise VOCError(f"{what} {name!r} is not a plain name (letters, digits, _ - .; no '..')")
    return name


def image_path(root: PathLike, image_id: str) -> Path:
    """``root/JPEGImages/<id>.jpg`` (not checked for existence); VOCError for a bad id."""
    return Path(root) / "JPEGImages" / f"{_plain(image_id, 'image id')}.jpg"


def mask_path(root: PathLike, image_id: str) -> Path:
    """``root/SegmentationClass/<id>.png`` (not checked for existence); VOCError for a bad id."""
    return Path(root) / "SegmentationClass" / f"{_plain(image_id, 'image id')}.png"


def read_split(root: PathLike, split: str, folder: str = "Segmentation") -> list[str]:
    """The ids in ``ImageSets/<folder>/<split>.txt`` (notebook 02). VOCError for an unknown split
    (a FileNotFoundError too), non-UTF-8 text or a bad id."""
    path = Path(root) / "ImageSets" / _plain(folder, "folder") / f"{_plain(split, 'split')}.txt"
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        found = sorted(p.stem for p in path.parent.glob("*.txt")) if path.parent.is_dir() else []
        listed = ", ".join(found) or f"none: {path.parent} has no .txt files or does not exist"
        raise _MissingFile(f"no split {split!r}: no {path} (available splits: {listed})") from None
    except UnicodeDecodeError as error:
        raise VOCError(f"split file {path} is not UTF-8 text: {error}") from None
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)]
    return [_plain(line, f"{path}, line {n}: image id") for n, line in lines if line]


def _open(path: Path, what: str, image_id: str) -> Image.Image:
    """Fully decode an image file; VOCError naming id and file if it is missing (a
    FileNotFoundError too), too large, unreadable or corrupt."""
    try:
        with warnings.catch_warnings(action="error", category=Image.DecompressionBombWarning):
            image = Image.open(path)  # over Image.MAX_IMAGE_PIXELS: refused, not decoded
        image.load()  # decodes every pixel: a truncated or corrupt file fails here
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as error:
        raise VOCError(f"{what} of image id {image_id!r} is too large: {path} ({error})") from None
    except FileNotFoundError:
        raise _MissingFile(f"{what} of image id {image_id!r} not found: {path}") from None
    except (UnidentifiedImageError, SyntaxError, OSError) as error:  # errno None: a bad file
        problem = "cannot be read" if getattr(error, "errno", None) else "cannot be decoded"
        raise VOCError(f"{what} of image id {image_id!r} {problem}: {path} ({error})") from None
    return image


def load_image(root: PathLike, image_id: str) -> np.ndarray:
    """The photo of ``image_id`` as uint8 (H, W, 3) RGB (notebook 01); VOCError as ``_open``."""
    with _open(image_path(root, image_id), "photo", image_id) as image:
        if image.mode == "P" and "transparency" in image.info:
            image = image.convert("RGBA")  # PIL wants palette transparency resolved first
        return np.array(image if image.mode == "RGB" else image.convert("RGB"), dtype=np.uint8)


def load_mask(root: PathLike, image_id: str) -> np.ndarray:
    """The mask of ``image_id`` as uint8 class ids (notebook 02). VOCError as ``_open``, or if it
    is not a palette PNG or holds values not 0-20, 255."""
    path = mask_path(root, image_id)
    with _open(path, "mask", image_id) as image:
        if image.mode != "P":
            problem = f"is a {image.mode!r}-mode image, not 'P'"
            raise VOCError(f"mask of image id {image_id!r} {problem}: {path}")
        mask = np.array(image, dtype=np.uint8)
    if bad := [value for value in np.unique(mask).tolist() if value not in _VALID]:
        shown = ", ".join(map(str, bad[:12])) + (", ..." if len(bad) > 12 else "")
        problem = f"has values not in 0-20, 255: {shown}"
        raise VOCError(f"mask of image id {image_id!r} {problem} ({path})")
    return mask


def load_pair(root: PathLike, image_id: str) -> tuple[np.ndarray, np.ndarray]:
    """``(image, mask)`` of ``image_id`` (notebook 03); VOCError as theirs, or if sizes differ."""
    image = load_image(root, image_id)
    mask = load_mask(root, image_id)
    if image.shape[:2] != mask.shape:
        sizes = f"photo {image.shape[:2]} vs mask {mask.shape} (height, width)"
        raise VOCError(f"image id {image_id!r}: {sizes}: {image_path(root, image_id)}")
    return image, mask


@dataclass(frozen=True)
class VOCObject:
    """One ``<object>`` of an annotation; corners are 1-based, inclusive pixel numbers."""

    name: str
    pose: str
    truncated: bool
    difficult: bool
    xmin: int
    ymin: int
    xmax: int
    ymax: int


@dataclass(frozen=True)
class Annotation:
    """What ``Annotations/<id>.xml`` says: the image's file and size, and its objects."""

    image_id: str
    filename: str
    width: int
    height: int
    depth: int
    objects: tuple[VOCObject, ...]


def _text(where: str, element: ET.Element, field: str) -> str:
    """The stripped text of ``element``'s ``field``; VOCError if it is missing or blank."""
    found = element.find(field)
    if found is None or not (found.text or "").strip():
        raise VOCError(f"{where} has no <{field}> in <{element.tag}>")
    return found.text.strip()


def _number(where: str, element: ET.Element, field: str, low: int, high: float) -> int | float:
    """``field`` as a number in [low, high]; VOCError if it is not one or out of range."""
    value = _text(where, element, field)
    try:
        value = int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        raise VOCError(f"{where}: <{field}> is {value!r}, not a number") from None
    if not low <= value <= high:
        raise VOCError(f"{where}: <{field}> {value} is outside {low}-{high}")
    return value


def _flag(where: str, element: ET.Element, field: str) -> bool:
    """``field`` as a bool; VOCError unless it is 0 or 1."""
    value = _text(where, element, field)
    if value not in ("0", "1"):
        raise VOCError(f"{where}: <{field}> is {value!r}, expected 0 or 1")
    return value == "1"


def _object(where: str, element: ET.Element, width: int, height: int) -> VOCObject:
    """One ``<object>``: a VOC class, a box inside the image, its flags and pose; else VOCError."""
    name = _text(where, element, "name")
    if name not in VOC_CLASSES[1:]:
        raise VOCError(f"{where}: unknown class {name!r} (not a VOC class)")
    corners = ("xmin", "xmax", "ymin", "ymax")
    limit = {"x": width, "y": height}
    box = {c: _number(where, element, f"bndbox/{c}", 1, limit[c[0]]) for c in corners}
    if box["xmin"] > box["xmax"] or box["ymin"] > box["ymax"]:
        corners = f"({box['xmin']}, {box['ymin']}, {box['xmax']}, {box['ymax']})"
        raise VOCError(f"{where}: {name} box {corners} has min > max")
    truncated = _flag(where, element, "truncated")
    difficult = _flag(where, element, "difficult")
    return VOCObject(name, _text(where, element, "pose"), truncated, difficult, **box)


def load_annotation(root: PathLike, image_id: str) -> Annotation:
    """The boxes of ``image_id`` from ``root/Annotations/<id>.xml`` (notebook 15). VOCError naming
    id and file: missing (a FileNotFoundError too), malformed XML, DOCTYPE, or a bad field."""
    path = Path(root) / "Annotations" / f"{_plain(image_id, 'image id')}.xml"
    where = f"annotation of image id {image_id!r} ({path})"

    class RefusingDoctype(ET.TreeBuilder):  # refused at a DOCTYPE's start: no ENTITY is read
        def doctype(self, *_: object) -> None:
            raise VOCError(f"{where} declares a DOCTYPE or ENTITY: refused (hostile XML)")

    parser = ET.XMLParser(target=RefusingDoctype())
    try:
        parser.feed(path.read_bytes())
        tree = parser.close()
    except FileNotFoundError:
        raise _MissingFile(f"{where} not found") from None
    except ET.ParseError as error:
        line, column = error.position
        problem = f"line {line}, column {column + 1}: {expat.ErrorString(error.code)}"
        raise VOCError(f"{where} is not well-formed XML: {problem}") from None
    if tree.tag != "annotation":
        raise VOCError(f"{where}: <{tree.tag}>, expected <annotation> of {image_id}.jpg")
    filename = _text(where, tree, "filename")
    if filename != f"{image_id}.jpg":
        raise VOCError(f"{where}: filename {filename!r}, expected <annotation> of {image_id}.jpg")
    width = _number(where, tree, "size/width", 1, 1 << 31)
    height = _number(where, tree, "size/height", 1, 1 << 31)
    depth = _number(where, tree, "size/depth", 1, 1 << 31)
    objects = tuple(_object(where, element, width, height) for element in tree.findall("object"))
    return Annotation(image_id, filename, width, height, depth, objects)
