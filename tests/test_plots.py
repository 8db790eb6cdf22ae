"""Light tests of helpers.plots: colours, overlays and the figures' layout (no pixels compared)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots


def test_overlay_tints_labelled_pixels_and_keeps_background():
    image = np.full((2, 2, 3), 100, np.uint8)
    mask = np.array([[0, 1], [255, 0]], np.uint8)
    out = plots._overlay(image, mask[..., None], alpha=0.5, void_alpha=0.5)
    assert out[0, 0].tolist() == [100, 100, 100] and out[1, 1].tolist() == [100, 100, 100]
    assert out[0, 1].tolist() == [114, 50, 50]  # halfway to aeroplane red (128, 0, 0)
    assert out[1, 0].tolist() == [162, 162, 146]  # halfway to void cream (224, 224, 192)
    np.testing.assert_array_equal(plots._overlay(image, mask, alpha=0, void_alpha=0), image)
    assert plots._overlay(image, mask, void_alpha=1.0)[1, 0].tolist() == [224, 224, 192]


@pytest.mark.parametrize(
    "image, mask, message",
    [
        (np.zeros((2, 3, 3), np.uint8), np.zeros((2, 2), np.uint8), r"image is \(2, 3\) but mask"),
        (np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8), r"uint8 \[H, W, 3\]"),
        (np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.int32), "a mask must be uint8"),
    ],
)
def test_overlay_refuses_mismatched_inputs(image, mask, message):
    with pytest.raises(ValueError, match=message):
        plots._overlay(image, mask)


def test_class_names_lists_present_classes_and_void_last():
    masks = np.array([255, 15, 0, 15], np.uint8)
    assert plots.class_names(masks) == ["background", "person", "void"]


def test_show_batch_draws_one_tile_per_image_and_a_legend():
    images = np.zeros((5, 8, 8, 3), np.uint8)
    masks = np.zeros((5, 8, 8, 1), np.uint8)
    masks[0, :2] = 8
    figure = plots.show_batch(images, masks, columns=3, titles=list("abcde"), title="batch")
    try:
        shown = [ax for ax in figure.axes if ax.images]
        assert len(shown) == 5 and len(figure.axes) == 6  # 2 rows of 3, the last tile empty
        assert [ax.get_title() for ax in shown] == list("abcde")
        assert figure.get_suptitle() == "batch"
        labels = [t.get_text() for t in figure.legends[0].get_texts()]
        assert labels == ["0 background", "8 cat"]
    finally:
        plt.close(figure)
    with pytest.raises(ValueError, match="as many masks"):
        plots.show_batch(images, masks, titles=["a"])
    with pytest.raises(ValueError, match="as many masks"):
        plots.show_batch(images, masks[:2])


def test_show_pairs_puts_each_mask_under_its_image_in_voc_colours():
    images = [np.zeros((4, 6, 3), np.uint8), np.zeros((8, 8, 3), np.uint8)]
    masks = [np.full((4, 6), 15, np.uint8), np.full((8, 8, 1), 255, np.uint8)]
    figure = plots.show_pairs(images, masks, titles=["small", "padded"])
    try:
        assert len(figure.axes) == 4
        first_mask = figure.axes[2].images[0].get_array()  # row 2, column 1
        assert first_mask.shape == (4, 6, 3)
        assert first_mask[0, 0].tolist() == [192, 128, 128]  # person
        assert figure.axes[3].images[0].get_array()[0, 0].tolist() == [224, 224, 192]  # void
        labels = [t.get_text() for t in figure.legends[0].get_texts()]
        assert labels == ["15 person", "255 void"]
    finally:
        plt.close(figure)
    with pytest.raises(ValueError, match="same number"):
        plots.show_pairs(images, masks[:1])


def test_importing_plots_imports_neither_matplotlib_nor_tensorflow():
    import subprocess
    import sys

    code = (
        "import helpers.plots, sys; "
        "assert 'tensorflow' not in sys.modules and 'matplotlib' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
