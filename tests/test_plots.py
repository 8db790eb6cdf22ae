"""Light tests of helpers.plots through its public figures: colours of the drawn pixels, layout."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots


@pytest.fixture(autouse=True)
def close_figures():
    """Every figure a test makes, also one left behind by a refused call, is closed after it."""
    yield
    plt.close("all")


def drawn(figure, k: int) -> np.ndarray:
    """The pixels that axes ``k`` of ``figure`` shows."""
    return np.asarray(figure.axes[k].images[0].get_array())


def test_show_batch_tints_labelled_pixels_and_keeps_background():
    image = np.full((2, 2, 3), 100, np.uint8)
    mask = np.array([[0, 1], [255, 0]], np.uint8)
    figure = plots.show_batch([image, image], [mask[..., None], np.zeros((2, 2, 1), np.uint8)])
    tinted, plain = drawn(figure, 0), drawn(figure, 1)
    assert tinted.dtype == np.uint8 and tinted.shape == (2, 2, 3)
    assert tinted[0, 0].tolist() == [100, 100, 100] and tinted[1, 1].tolist() == [100, 100, 100]
    assert tinted[0, 1].tolist() == [115, 45, 45]  # 55% of the way to aeroplane red (128, 0, 0)
    assert tinted[1, 0].tolist() == [205, 205, 178]  # 85% of the way to void cream (224, 224, 192)
    np.testing.assert_array_equal(plain, image)  # all background: the photo as it is


@pytest.mark.parametrize(
    "image, mask, message",
    [
        (np.zeros((2, 3, 3), np.uint8), np.zeros((2, 2), np.uint8), r"image is \(2, 3\) but mask"),
        (np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8), r"uint8 \[H, W, 3\]"),
        (np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.int32), "a mask must be uint8"),
    ],
)
def test_show_batch_refuses_mismatched_inputs(image, mask, message):
    with pytest.raises(ValueError, match=message):
        plots.show_batch([image], [mask])


def test_show_pairs_refuses_a_mask_that_is_not_uint8():
    with pytest.raises(ValueError, match="a mask must be uint8"):
        plots.show_pairs([np.zeros((2, 2, 3), np.uint8)], [np.zeros((2, 2), np.int32)])


def test_class_names_lists_present_classes_and_void_last():
    masks = np.array([255, 15, 0, 15], np.uint8)
    assert plots.class_names(masks) == ["background", "person", "void"]


def test_show_batch_draws_one_tile_per_image_and_a_legend():
    images = np.zeros((5, 8, 8, 3), np.uint8)
    masks = np.zeros((5, 8, 8, 1), np.uint8)
    masks[0, :2] = 8
    figure = plots.show_batch(images, masks, columns=3, titles=list("abcde"), title="batch")
    shown = [ax for ax in figure.axes if ax.images]
    assert len(shown) == 5 and len(figure.axes) == 6  # 2 rows of 3, the last tile empty
    assert [ax.get_title() for ax in shown] == list("abcde")
    assert figure.get_suptitle() == "batch"
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert labels == ["0 background", "8 cat"]
    with pytest.raises(ValueError, match="as many masks"):
        plots.show_batch(images, masks, titles=["a"])
    with pytest.raises(ValueError, match="as many masks"):
        plots.show_batch(images, masks[:2])


def test_show_pairs_puts_each_mask_under_its_image_in_voc_colours():
    images = [np.zeros((4, 6, 3), np.uint8), np.zeros((8, 8, 3), np.uint8)]
    masks = [np.full((4, 6), 15, np.uint8), np.full((8, 8, 1), 255, np.uint8)]
    figure = plots.show_pairs(images, masks, titles=["small", "padded"])
    assert len(figure.axes) == 4
    first_mask = drawn(figure, 2)  # row 2, column 1
    assert first_mask.shape == (4, 6, 3)
    assert first_mask[0, 0].tolist() == [192, 128, 128]  # person
    assert drawn(figure, 3)[0, 0].tolist() == [224, 224, 192]  # void
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert labels == ["15 person", "255 void"]
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
