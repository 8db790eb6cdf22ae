"""Figures of VOC images and masks in the VOC colours (void is cream): notebook 05."""

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from helpers import voc

if TYPE_CHECKING:  # importing this module imports no matplotlib
    from matplotlib.figure import Figure


def _as_mask(mask: ArrayLike) -> np.ndarray:
    mask = np.asarray(mask)
    mask = mask[..., 0] if mask.ndim == 3 and mask.shape[-1] == 1 else mask
    if mask.ndim != 2 or mask.dtype != np.uint8:
        raise ValueError(f"a mask must be uint8 [H, W] or [H, W, 1], got {mask.dtype} {mask.shape}")
    return mask


def _overlay(image, mask, alpha: float = 0.55, void_alpha: float = 0.85) -> np.ndarray:
    """The photo, each pixel but background tinted by its class colour (void by ``void_alpha``)."""
    image = np.asarray(image)
    mask = _as_mask(mask)
    if image.ndim != 3 or image.shape[-1] != 3 or image.dtype != np.uint8:
        raise ValueError(f"an image must be uint8 [H, W, 3], got {image.dtype} {image.shape}")
    if image.shape[:2] != mask.shape:
        raise ValueError(f"image is {image.shape[:2]} but mask is {mask.shape}")
    weight = np.where(mask == voc.VOID_LABEL, void_alpha, alpha).astype(np.float32)[..., None]
    blended = (1 - weight) * image + weight * voc.colormap()[mask]
    return np.round(np.where((mask != 0)[..., None], blended, image)).astype(np.uint8)


def class_names(masks: ArrayLike) -> list[str]:
    """Names of the classes present in ``masks`` (any shape), in class order, "void" last."""
    values = np.unique(np.asarray(masks))
    names = [voc.VOC_CLASSES[v] for v in values if v < len(voc.VOC_CLASSES)]
    return names + (["void"] if voc.VOID_LABEL in values else [])


def _figure(rows: int, columns: int, width: float, height: float, masks):
    """A grid of axes without ticks, and a legend of the classes in ``masks``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    size = (width * columns, height * rows + 0.9)
    figure, axes = plt.subplots(rows, columns, figsize=size, squeeze=False, layout="constrained")
    for ax in axes.flat:
        ax.set(xticks=[], yticks=[])
    handles = []
    for name in class_names(masks):
        index = voc.VOID_LABEL if name == "void" else voc.VOC_CLASSES.index(name)
        colour = voc.colormap()[index] / 255
        handles.append(Patch(facecolor=colour, edgecolor="0.4", label=f"{index} {name}"))
    columns = min(len(handles), 6)
    figure.legend(handles=handles, loc="outside lower center", ncol=columns, frameon=False)
    return figure, axes


def show_batch(
    images: ArrayLike,
    masks: ArrayLike,
    columns: int = 4,
    titles: Sequence[str] | None = None,
    title: str = "",
) -> "Figure":
    """A grid of overlays of a batch (notebook 05). ValueError if the numbers of images, masks and
    titles (if any) differ or are 0, or for arrays of another dtype or shape."""
    images = np.asarray(images)
    masks = np.asarray(masks)
    titles = list(titles or [])
    if len(images) == 0 or len(masks) != len(images) or len(titles) not in (0, len(images)):
        counts = f"{len(images)}, {len(masks)} and {len(titles)}"
        raise ValueError(f"need as many masks (and titles) as images, at least one, got {counts}")
    columns = max(1, min(columns, len(images)))
    height = 2.4 * images.shape[1] / images.shape[2] + (0.3 if titles else 0)
    figure, axes = _figure(-(-len(images) // columns), columns, 2.4, height, masks)
    for k, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if k < len(images):
            ax.imshow(_overlay(images[k], masks[k]))
            ax.set_title(titles[k] if titles else "", fontsize="small")
    if title:
        figure.suptitle(title)
    return figure


def show_pairs(
    images: Sequence[ArrayLike],
    masks: Sequence[ArrayLike],
    titles: Sequence[str] | None = None,
) -> "Figure":
    """A figure of each image above its mask, one column per pair (notebook 05). ValueError
    if the numbers of images, masks and titles (if any) differ or are 0, or a mask is bad."""
    titles = list(titles or [])
    masks = [_as_mask(mask) for mask in masks]
    if len(images) == 0 or len(masks) != len(images) or len(titles) not in (0, len(images)):
        raise ValueError("need the same number (at least one) of images, masks and titles")
    size = 3.0  # inches per pair, and a little less in height
    figure, axes = _figure(2, len(images), size, size - 0.15, np.concatenate(masks, axis=None))
    for k, (image, mask) in enumerate(zip(images, masks, strict=True)):
        axes[0, k].imshow(np.asarray(image))
        axes[1, k].imshow(voc.colormap()[mask], interpolation="nearest")
        axes[0, k].set_title(titles[k] if titles else "", fontsize="medium")
    axes[0, 0].set_ylabel("image")
    axes[1, 0].set_ylabel("mask")
    return figure
