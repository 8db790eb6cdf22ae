"""Tests of helpers.pipeline: shapes, void padding, identical windows, determinism, schemas, and
the files other people write (the original guide, DeepLab, the TensorFlow tutorial)."""

import glob
import itertools
import os

from helpers._tensorflow import QUIET_ENVIRONMENT

os.environ.update(QUIET_ENVIRONMENT)  # before TensorFlow is imported

import numpy as np
import pytest
import tensorflow as tf
from builders import example_message, feature

from helpers import voc
from helpers.pipeline import crop_or_pad, flip_together, voc_batches
from helpers.records import RecordError, write_records

CROP = (16, 20)  # small, so every case below stays fast
# (height, width): smaller, larger, equal, mixed and odd differences against CROP
SIZES = [(10, 12), (24, 30), (16, 20), (9, 33), (21, 7), (17, 19), (30, 20), (16, 11)]


def make_pairs(count=8, seed=0):
    """Images of various sizes whose mask is derived from the image: mask = red % 21."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(count):
        height, width = SIZES[i % len(SIZES)]
        image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        image[..., 0] = np.maximum(image[..., 0], 1)  # red never 0, so padding (0) is recognisable
        pairs.append((image, image[..., 0] % 21))
    return pairs


def png(array):
    from io import BytesIO

    from PIL import Image

    buffer = BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def raw_example(image, mask, name):
    """An Example in the raw schema of helpers.voc_records (built here from arrays)."""
    height, width = mask.shape
    return example_message(
        {
            "height": height,
            "width": width,
            "image_raw": image.tobytes(),
            "mask_raw": mask.tobytes(),
            "filename": name.encode(),
        }
    )


def encoded_example(image_bytes, mask_bytes, name, height, width, image_format="png"):
    """An Example in the encoded schema of helpers.voc_records."""
    return example_message(
        {
            "image/encoded": image_bytes,
            "image/filename": name.encode(),
            "image/format": image_format.encode(),
            "image/height": height,
            "image/width": width,
            "image/channels": 3,
            "image/segmentation/class/encoded": mask_bytes,
            "image/segmentation/class/format": b"png",
        }
    )


def serialize(pair, index, encoding, image_format="png"):
    image, mask = pair
    if encoding == "raw":
        made = raw_example(image, mask, f"pair_{index}.jpg")
    else:
        if image_format == "png":
            data = png(image)
        else:
            data = tf.io.encode_jpeg(image, quality=95).numpy()
        made = encoded_example(data, png(mask), f"pair_{index}.jpg", *mask.shape, image_format)
    return made.SerializeToString(deterministic=True)


def write_shards(
    folder, pairs, num_shards=2, encoding="raw", compression=None, image_format="png", name=None
):
    """Deal ``pairs`` round-robin over ``num_shards`` files; return the paths."""
    name = name or f"{encoding}-{compression or 'plain'}"
    paths = []
    for shard in range(num_shards):
        path = folder / f"{name}-{shard:05d}-of-{num_shards:05d}.tfrecord"
        chosen = [
            serialize(pairs[i], i, encoding, image_format)
            for i in range(shard, len(pairs), num_shards)
        ]
        write_records(path, chosen, compression=compression)
        paths.append(path)
    return paths


def stored_order(pairs, shards):
    """Indices of ``pairs`` in the order the shards store them (files one after another)."""
    return [i for shard in range(shards) for i in range(shard, len(pairs), shards)]


def expected_centre(image, mask, size=CROP):
    """Reference crop-or-pad in NumPy: centred window, image padded with 0, mask with 255."""
    out_image = np.zeros((*size, 3), np.uint8)
    out_mask = np.full((*size, 1), 255, np.uint8)
    src = []
    dst = []
    for n, t in zip(image.shape[:2], size, strict=True):
        start = max(n - t, 0) // 2
        pad = max(t - n, 0) // 2
        kept = min(n, t)
        src.append(slice(start, start + kept))
        dst.append(slice(pad, pad + kept))
    out_image[dst[0], dst[1]] = image[src[0], src[1]]
    out_mask[dst[0], dst[1], 0] = mask[src[0], src[1]]
    return out_image, out_mask


def collect(dataset):
    images = []
    masks = []
    for batch_images, batch_masks in dataset:
        images.append(batch_images.numpy())
        masks.append(batch_masks.numpy())
    return np.concatenate(images), np.concatenate(masks)


@pytest.fixture
def pairs():
    return make_pairs()


@pytest.fixture
def raw_files(tmp_path, pairs):
    return write_shards(tmp_path, pairs)


# ---------------------------------------------------------------------------
# Shapes, padding, windows
# ---------------------------------------------------------------------------


def test_batches_have_the_requested_shapes_and_dtypes(raw_files, pairs):
    dataset = voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=1)
    assert dataset.element_spec[0].shape.as_list() == [None, *CROP, 3]
    assert dataset.element_spec[1].shape.as_list() == [None, *CROP, 1]
    shapes = [(tuple(i.shape), tuple(m.shape), i.dtype, m.dtype) for i, m in dataset]
    assert [s[0][0] for s in shapes] == [3, 3, 2]  # 8 pairs: the last batch is smaller
    assert all(s[0][1:] == (*CROP, 3) and s[1][1:] == (*CROP, 1) for s in shapes)
    assert all(s[2] == tf.uint8 and s[3] == tf.uint8 for s in shapes)


def test_drop_remainder_gives_full_batches_with_a_static_size(raw_files):
    dataset = voc_batches(raw_files, 3, crop=CROP, seed=1, drop_remainder=True)
    assert dataset.element_spec[0].shape.as_list() == [3, *CROP, 3]
    assert [int(images.shape[0]) for images, _ in dataset] == [3, 3]


def test_unshuffled_batches_are_centre_crops_padded_with_void_in_stored_order(raw_files, pairs):
    images, masks = collect(voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=0))
    order = stored_order(pairs, 2)
    assert len(images) == len(order)
    for got_image, got_mask, index in zip(images, masks, order, strict=True):
        want_image, want_mask = expected_centre(*pairs[index])
        np.testing.assert_array_equal(got_image, want_image)
        np.testing.assert_array_equal(got_mask, want_mask)


def test_padding_is_zero_in_the_image_and_void_in_the_mask():
    image = np.full((10, 12, 3), 7, np.uint8)
    mask = np.zeros((10, 12), np.uint8)  # all background
    out_image, out_mask = (t.numpy() for t in crop_or_pad(image, mask[..., None], CROP))
    padded = out_mask[..., 0] == voc.VOID_LABEL
    assert padded.sum() == CROP[0] * CROP[1] - 10 * 12  # every padding pixel is void ...
    assert (out_mask[~padded] == 0).all()  # ... and every original pixel kept its class
    assert (out_image[padded] == 0).all() and (out_image[~padded] == 7).all()


def test_a_position_picks_each_window_and_each_padding_equally_often():
    """10 rows cropped to 6 leave 5 windows, 4 columns padded to 6 leave 3 placements: the
    positions (k + 0.5) / 5 and (j + 0.5) / 3 are the middles of equal shares of [0, 1)."""
    image = np.arange(10 * 4 * 3, dtype=np.uint8).reshape(10, 4, 3)
    mask = image[..., :1] % 20
    for k, j in itertools.product(range(5), range(3)):
        position = tf.constant([(k + 0.5) / 5, (j + 0.5) / 3])
        got_image, got_mask = (t.numpy() for t in crop_or_pad(image, mask, (6, 6), position))
        np.testing.assert_array_equal(got_image[:, j : j + 4], image[k : k + 6])
        np.testing.assert_array_equal(got_mask[:, j : j + 4], mask[k : k + 6])
        assert (got_image[:, [*range(j), *range(j + 4, 6)]] == 0).all()


@pytest.mark.parametrize("size", SIZES + [(1, 1), (16, 21), (15, 20)])
def test_centred_window_matches_resize_with_crop_or_pad(size):
    image = np.random.default_rng(3).integers(0, 256, (*size, 3), dtype=np.uint8)
    mask = np.ones((*size, 1), np.uint8)
    got_image, got_mask = crop_or_pad(image, mask, CROP)
    np.testing.assert_array_equal(
        got_image.numpy(), tf.image.resize_with_crop_or_pad(image, *CROP).numpy()
    )
    # The mask takes the same window; TensorFlow's function pads with 0 where we pad with 255.
    ones = tf.image.resize_with_crop_or_pad(mask, *CROP).numpy() == 1
    np.testing.assert_array_equal(got_mask.numpy() == 1, ones)
    assert (got_mask.numpy()[~ones] == 255).all()


def is_window_of(out_image, out_mask, image, mask):
    """True if the output is a crop-or-pad window of (image, mask), possibly mirrored left-right."""
    th, tw = CROP
    h, w = image.shape[:2]
    for flipped in (False, True):
        src_image = image[:, ::-1] if flipped else image
        src_mask = mask[:, ::-1] if flipped else mask
        for top in range(max(h - th, 0) + 1):
            for pad_top in range(max(th - h, 0) + 1):
                for left in range(max(w - tw, 0) + 1):
                    for pad_left in range(max(tw - w, 0) + 1):
                        want_image = np.zeros((th, tw, 3), np.uint8)
                        want_mask = np.full((th, tw), 255, np.uint8)
                        kh = min(h, th)
                        kw = min(w, tw)
                        want_image[pad_top : pad_top + kh, pad_left : pad_left + kw] = src_image[
                            top : top + kh, left : left + kw
                        ]
                        want_mask[pad_top : pad_top + kh, pad_left : pad_left + kw] = src_mask[
                            top : top + kh, left : left + kw
                        ]
                        if np.array_equal(want_image, out_image) and np.array_equal(
                            want_mask, out_mask[..., 0]
                        ):
                            return True
    return False


def test_augmentation_gives_image_and_mask_the_same_random_window(raw_files, pairs):
    images, masks = collect(
        voc_batches(raw_files, 4, crop=CROP, shuffle_buffer=0, seed=5, augment=True)
    )
    kept = masks[..., 0] != 255
    # The mask was derived from the image: the relation survives only if both got the same window.
    np.testing.assert_array_equal(masks[..., 0][kept], images[..., 0][kept] % 21)
    assert (images[~kept] == 0).all()  # where the mask is void, the image is padding
    order = stored_order(pairs, 2)
    assert all(is_window_of(images[k], masks[k], *pairs[i]) for k, i in enumerate(order))
    centre = [expected_centre(*pairs[i])[0] for i in order]
    mirrored = [expected_centre(pairs[i][0][:, ::-1], pairs[i][1][:, ::-1])[0] for i in order]
    off_centre = sum(
        not np.array_equal(a, b) and not np.array_equal(a, c)
        for a, b, c in zip(images, centre, mirrored, strict=True)
    )
    assert off_centre >= 3  # random windows, not just flips of the centre crop


@pytest.fixture
def flip_files(tmp_path):
    image = np.tile(
        np.arange(1, 21, dtype=np.uint8)[None, :, None], (16, 1, 3)
    )  # exactly CROP: no crop, no pad
    return write_shards(
        tmp_path, [(image, image[..., 0] % 21)] * 40, num_shards=1, name="ramp"
    ), image


def test_joint_flip_happens_about_half_of_the_time(flip_files):
    files, image = flip_files
    images, masks = collect(
        voc_batches(files, 10, crop=CROP, shuffle_buffer=0, seed=2, augment=True)
    )
    flipped = [np.array_equal(out, image[:, ::-1]) for out in images]
    unchanged = [np.array_equal(out, image) for out in images]
    assert all(f or u for f, u in zip(flipped, unchanged, strict=True))
    assert 8 <= sum(flipped) <= 32  # 40 fair coin flips
    np.testing.assert_array_equal(masks[..., 0], images[..., 0] % 21)


@pytest.mark.parametrize("coin, flips", [(0.0, True), (0.49, True), (0.5, False), (0.9, False)])
def test_flip_together_reverses_both_columns_below_one_half_and_neither_above(coin, flips):
    image, mask = make_pairs(1)[0]
    mask = mask[..., None]
    got_image, got_mask = flip_together(image, mask, tf.constant(coin))
    expected = (image[:, ::-1], mask[:, ::-1]) if flips else (image, mask)
    np.testing.assert_array_equal(got_image, expected[0])
    np.testing.assert_array_equal(got_mask, expected[1])


# ---------------------------------------------------------------------------
# Order and determinism
# ---------------------------------------------------------------------------


def first_images(dataset):
    return collect(dataset)[0]


@pytest.mark.parametrize("augment", [False, True])
def test_the_same_seed_gives_the_same_batches(raw_files, augment):
    a = first_images(
        voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=11, augment=augment)
    )
    b = first_images(
        voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=11, augment=augment)
    )
    c = first_images(
        voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=12, augment=augment)
    )
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_the_default_seed_is_0(raw_files):
    """Two calls without a seed agree with each other and with seed=0, not with seed=1."""
    default = first_images(voc_batches(raw_files, 3, crop=CROP, augment=True))
    np.testing.assert_array_equal(
        default, first_images(voc_batches(raw_files, 3, crop=CROP, augment=True, seed=0))
    )
    assert not np.array_equal(
        default, first_images(voc_batches(raw_files, 3, crop=CROP, augment=True, seed=1))
    )


@pytest.mark.parametrize("shuffle_buffer, augment", [(4, False), (0, True)])
def test_each_epoch_draws_anew(raw_files, shuffle_buffer, augment):
    dataset = voc_batches(
        raw_files, 3, crop=CROP, shuffle_buffer=shuffle_buffer, seed=11, augment=augment
    )
    first = first_images(dataset)
    second = first_images(dataset)
    assert first.shape == second.shape
    assert not np.array_equal(first, second)
    again = voc_batches(
        raw_files, 3, crop=CROP, shuffle_buffer=shuffle_buffer, seed=11, augment=augment
    )
    np.testing.assert_array_equal(first_images(again), first)  # a new dataset starts over


def test_shuffling_changes_the_order_but_keeps_every_record(raw_files, pairs):
    images = first_images(voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=8, seed=4))
    expected = [expected_centre(*pairs[i])[0] for i in stored_order(pairs, 2)]
    assert not all(np.array_equal(a, b) for a, b in zip(images, expected, strict=True))
    key = lambda array: array.tobytes()  # noqa: E731
    assert sorted(map(key, images)) == sorted(map(key, expected))


def test_the_file_order_is_shuffled_too(raw_files, pairs):
    # A buffer of one record shuffles nothing: what remains is the order of the files.
    firsts = {
        first_images(voc_batches(raw_files, 1, crop=CROP, shuffle_buffer=1, seed=s).take(1))[
            0
        ].tobytes()
        for s in range(8)
    }
    assert firsts == {
        expected_centre(*pairs[i])[0].tobytes() for i in (0, 1)
    }  # each file's first record


def test_shuffle_buffer_zero_reads_files_in_the_order_given(tmp_path, pairs):
    files = write_shards(tmp_path, pairs, num_shards=2)
    images = first_images(voc_batches(files[::-1], 4, crop=CROP, shuffle_buffer=0))
    order = [i for shard in (1, 0) for i in range(shard, len(pairs), 2)]
    for got, index in zip(images, order, strict=True):
        np.testing.assert_array_equal(got, expected_centre(*pairs[index])[0])


# ---------------------------------------------------------------------------
# Schemas and compression
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "encoding, compression",
    [
        ("raw", "GZIP"),
        ("raw", "ZLIB"),
        ("encoded", None),
        ("encoded", "GZIP"),
        ("encoded", "ZLIB"),
    ],
)
def test_both_schemas_plain_gzip_or_zlib_give_identical_batches(
    tmp_path, pairs, encoding, compression
):
    raw = write_shards(tmp_path, pairs)
    other = write_shards(tmp_path, pairs, encoding=encoding, compression=compression)
    for augment in (False, True):
        want = collect(voc_batches(raw, 3, crop=CROP, shuffle_buffer=4, seed=9, augment=augment))
        got = collect(voc_batches(other, 3, crop=CROP, shuffle_buffer=4, seed=9, augment=augment))
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_a_zlib_file_written_by_tensorflow_reads_back_equal(tmp_path, pairs):
    plain = write_shards(tmp_path, pairs, num_shards=1)[0]
    zlib_file = tmp_path / "by-tensorflow.tfrecord.zz"
    options = tf.io.TFRecordOptions(compression_type="ZLIB")
    with tf.io.TFRecordWriter(str(zlib_file), options=options) as writer:
        for record in tf.data.TFRecordDataset(str(plain)):
            writer.write(record.numpy())
    assert zlib_file.read_bytes()[:1] == b"\x78"  # a zlib stream, not a plain file
    for augment in (False, True):
        want = collect(voc_batches(plain, 3, crop=CROP, shuffle_buffer=4, seed=9, augment=augment))
        got = collect(
            voc_batches(zlib_file, 3, crop=CROP, shuffle_buffer=4, seed=9, augment=augment)
        )
        assert len(got[0]) == len(pairs)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    got = collect(voc_batches(zlib_file, 3, crop=CROP, shuffle_buffer=0, compression="ZLIB"))
    np.testing.assert_array_equal(
        got[0], collect(voc_batches(plain, 3, crop=CROP, shuffle_buffer=0))[0]
    )


def test_jpeg_records_decode_exactly_as_pillow_does(tmp_path):
    from io import BytesIO

    from PIL import Image

    jpeg = (voc.sample_root() / "JPEGImages" / "cat_chelsea.jpg").read_bytes()
    image = np.asarray(Image.open(BytesIO(jpeg)).convert("RGB"))
    mask = np.zeros(image.shape[:2], np.uint8)
    made = encoded_example(jpeg, png(mask), "cat.jpg", *mask.shape, image_format="jpeg")
    write_records(tmp_path / "cat.tfrecord", [made.SerializeToString()])
    got, _ = collect(voc_batches(tmp_path / "cat.tfrecord", 1, crop=image.shape[:2]))
    np.testing.assert_array_equal(
        got[0], image
    )  # dct_method="INTEGER_ACCURATE"; the default differs


def test_jpeg_images_decode_close_and_masks_exactly(tmp_path, pairs):
    smooth = [(np.full_like(image, 100), mask) for image, mask in pairs]
    raw = write_shards(tmp_path, smooth)
    jpeg = write_shards(tmp_path, smooth, encoding="encoded", image_format="jpeg")
    want = collect(voc_batches(raw, 4, crop=CROP, shuffle_buffer=0))
    got = collect(voc_batches(jpeg, 4, crop=CROP, shuffle_buffer=0))
    assert np.abs(got[0].astype(int) - want[0].astype(int)).max() <= 2
    np.testing.assert_array_equal(got[1], want[1])


def test_explicit_encoding_and_compression_are_checked(raw_files, tmp_path, pairs):
    assert (
        len(collect(voc_batches(raw_files, 2, crop=CROP, encoding="raw", compression=None))[0]) == 8
    )
    with pytest.raises(
        ValueError, match="encoding='encoded' was asked for, but the file's encoding is 'raw'"
    ):
        voc_batches(raw_files, 2, crop=CROP, encoding="encoded")
    with pytest.raises(
        ValueError, match="compression='GZIP' was asked for, but the file's compression is None"
    ):
        voc_batches(raw_files, 2, crop=CROP, compression="GZIP")
    zlib_files = write_shards(tmp_path, pairs, compression="ZLIB")
    with pytest.raises(ValueError, match="compression=None was asked for.*compression is 'ZLIB'"):
        voc_batches(zlib_files, 2, crop=CROP, compression=None)
    with pytest.raises(ValueError, match="encoding must be"):
        voc_batches(raw_files, 2, crop=CROP, encoding="jpeg")


def test_files_that_disagree_are_refused_by_name(raw_files, tmp_path, pairs):
    encoded = write_shards(tmp_path, pairs, encoding="encoded")
    with pytest.raises(ValueError, match=f"disagree on encoding.*{encoded[0].name}"):
        voc_batches([raw_files[0], encoded[0]], 2, crop=CROP)
    gzip = write_shards(tmp_path, pairs, compression="GZIP")
    with pytest.raises(ValueError, match=f"disagree on compression.*{gzip[0].name}"):
        voc_batches([raw_files[0], gzip[0]], 2, crop=CROP)
    zlib_files = write_shards(tmp_path, pairs, compression="ZLIB")
    with pytest.raises(ValueError, match=f"'GZIP' but .*{zlib_files[1].name} is 'ZLIB'"):
        voc_batches([gzip[0], zlib_files[1]], 2, crop=CROP)


def test_empty_files_are_skipped_but_no_records_at_all_is_an_error(raw_files, tmp_path):
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with_empty = collect(voc_batches([empty, *raw_files], 3, crop=CROP, shuffle_buffer=0))[0]
    np.testing.assert_array_equal(
        with_empty, collect(voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=0))[0]
    )
    also_empty = tmp_path / "also-empty.tfrecord"
    also_empty.write_bytes(b"")
    with pytest.raises(ValueError) as caught:
        voc_batches([empty, also_empty], 2, crop=CROP)
    assert str(caught.value) == f"no records in {empty}, {also_empty}"


def test_a_file_that_is_not_a_tfrecord_file_is_named(tmp_path):
    bogus = tmp_path / "notes.tfrecord"
    bogus.write_bytes(b"hello, this is not a record file")
    with pytest.raises(
        RecordError, match="notes.tfrecord: record 0 at byte 0: length CRC mismatch"
    ):
        voc_batches([bogus], 2, crop=CROP)


def test_a_record_0_of_another_kind_is_named(tmp_path):
    other = tmp_path / "other.tfrecord"
    example = tf.train.Example(
        features=tf.train.Features(
            feature={"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}
        )
    )
    write_records(other, [example.SerializeToString()])
    with pytest.raises(ValueError, match=r"other.tfrecord: record 0 has features \['label'\]"):
        voc_batches([other], 2, crop=CROP)
    wrong_type = tmp_path / "wrong_type.tfrecord"
    example = raw_example(np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.uint8), "a.jpg")
    example.features.feature["height"].CopyFrom(
        tf.train.Feature(float_list=tf.train.FloatList(value=[2.0]))
    )
    write_records(wrong_type, [example.SerializeToString()])
    with pytest.raises(
        ValueError,
        match=r"wrong_type.tfrecord: record 0 \(raw schema\): feature 'height' holds a float_list",
    ):
        voc_batches([wrong_type], 2, crop=CROP)


# ---------------------------------------------------------------------------
# Files other people write: each built with plain TensorFlow calls, the way its
# authors' code writes it, from the embedded VOC sample; masks compared exactly
# ---------------------------------------------------------------------------

SAMPLE_CROP = (352, 448)  # the sample's photos are 300-500 pixels: crops and pads both


def sample_pairs():
    """(id, photo as Pillow decodes it to RGB, class-index mask) of every sample pair."""
    from PIL import Image

    root = voc.sample_root()
    return [
        (
            image_id,
            np.asarray(Image.open(voc.image_path(root, image_id)).convert("RGB")),
            np.asarray(Image.open(voc.mask_path(root, image_id))),  # palette PNG: class indices
        )
        for image_id in voc.read_split(root, "trainval")
    ]


def assert_reads_the_sample(files, pairs, crop=SAMPLE_CROP):
    """voc_batches in stored order gives each pair's centre window, masks padded with void."""
    images, masks = collect(voc_batches(files, 4, crop=crop, shuffle_buffer=0))
    assert len(images) == len(pairs)
    for got_image, got_mask, (image_id, image, mask) in zip(images, masks, pairs, strict=True):
        want_image, want_mask = expected_centre(image, mask, crop)
        np.testing.assert_array_equal(got_mask, want_mask, err_msg=f"mask of {image_id}")
        np.testing.assert_array_equal(got_image, want_image, err_msg=f"photo of {image_id}")


def write_guide_file(path, filename_pairs):
    """The original guide's writer, translated to TensorFlow 2: four features, no filename."""
    from PIL import Image

    def _bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    with tf.io.TFRecordWriter(str(path)) as writer:  # was tf.python_io.TFRecordWriter
        for img_path, annotation_path in filename_pairs:
            img = np.array(Image.open(img_path))
            annotation = np.array(Image.open(annotation_path))
            height = img.shape[0]
            width = img.shape[1]
            img_raw = img.tobytes()  # was .tostring()
            annotation_raw = annotation.tobytes()
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "height": _int64_feature(height),
                        "width": _int64_feature(width),
                        "image_raw": _bytes_feature(img_raw),
                        "mask_raw": _bytes_feature(annotation_raw),
                    }
                )
            )
            writer.write(example.SerializeToString())


def test_the_original_guides_four_feature_file_reads_with_exact_masks(tmp_path):
    from PIL import Image

    root = voc.sample_root()
    # VOC's photos are all RGB; from the sample's one grayscale photo the guide's code would
    # store one byte per pixel, which no reader of three-channel images accepts.
    pairs = [p for p in sample_pairs() if Image.open(voc.image_path(root, p[0])).mode == "RGB"]
    filename_pairs = [(voc.image_path(root, i), voc.mask_path(root, i)) for i, _, _ in pairs]
    path = tmp_path / "pascal_voc_segmentation.tfrecords"
    write_guide_file(path, filename_pairs)
    keys = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(str(path)))).numpy())
    assert sorted(keys.features.feature) == ["height", "image_raw", "mask_raw", "width"]
    assert_reads_the_sample(path, pairs)


def test_a_raw_file_without_filename_reads_exactly_as_one_with_it(tmp_path, pairs):
    named = write_shards(tmp_path, pairs, name="named")
    unnamed = []
    for shard, path in enumerate(named):
        records = [
            tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path))
        ]
        for example in records:
            del example.features.feature["filename"]
        unnamed.append(tmp_path / f"unnamed-{shard}.tfrecord")
        write_records(unnamed[-1], [e.SerializeToString() for e in records])
    for shuffle_buffer, augment in [(0, False), (4, False), (4, True)]:
        kwargs = {"crop": CROP, "shuffle_buffer": shuffle_buffer, "seed": 3, "augment": augment}
        want = collect(voc_batches(named, 3, **kwargs))
        got = collect(voc_batches(unnamed, 3, **kwargs))
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_deeplabs_encoded_file_reads_with_exact_masks(tmp_path):
    """Keys and values as DeepLab's build_voc2012_data.py writes them: the JPEG file unchanged
    and SegmentationClassRaw, a grayscale PNG of class indices."""
    from io import BytesIO

    from PIL import Image

    def _int64_list_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[values]))

    def _bytes_list_feature(values):
        values = values.encode() if isinstance(values, str) else values
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[values]))

    pairs = sample_pairs()
    root = voc.sample_root()
    path = tmp_path / "trainval-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for image_id, image, mask in pairs:
            image_data = voc.image_path(root, image_id).read_bytes()
            seg = BytesIO()
            Image.fromarray(mask).save(seg, "PNG")  # mode "L": one channel, the class indices
            height, width = image.shape[:2]
            feature = {
                "image/encoded": _bytes_list_feature(image_data),
                "image/filename": _bytes_list_feature(image_id),
                "image/format": _bytes_list_feature("jpeg"),
                "image/height": _int64_list_feature(height),
                "image/width": _int64_list_feature(width),
                "image/channels": _int64_list_feature(3),
                "image/segmentation/class/encoded": _bytes_list_feature(seg.getvalue()),
                "image/segmentation/class/format": _bytes_list_feature("png"),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    assert tf.io.decode_png(seg.getvalue()).shape[-1] == 1
    assert_reads_the_sample(path, pairs)  # photos too: decoded exactly as Pillow decodes them


@pytest.mark.parametrize("encoding, compression", [("raw", None), ("encoded", "GZIP")])
def test_our_two_schemas_from_convert_split_read_with_exact_masks(tmp_path, encoding, compression):
    from helpers.voc_records import convert_split

    prefix = tmp_path / encoding
    options = {"encoding": encoding, "compression": compression, "progress": False}
    files = convert_split(voc.sample_root(), "trainval", prefix, num_shards=2, **options)
    pairs = sample_pairs()
    assert_reads_the_sample(files, [pairs[i] for i in stored_order(pairs, 2)])  # round-robin


def test_the_official_tutorials_images_file_is_refused_naming_the_keys(tmp_path):
    """The TensorFlow tutorial's images.tfrecords: a JPEG in image_raw, a label, no mask."""

    def _bytes_feature(value):
        if isinstance(value, type(tf.constant(0))):
            value = value.numpy()
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def image_example(image_string, label):
        image_shape = tf.io.decode_jpeg(image_string).shape
        feature = {
            "height": _int64_feature(image_shape[0]),
            "width": _int64_feature(image_shape[1]),
            "depth": _int64_feature(image_shape[2]),
            "label": _int64_feature(label),
            "image_raw": _bytes_feature(image_string),
        }
        return tf.train.Example(features=tf.train.Features(feature=feature))

    record_file = tmp_path / "images.tfrecords"
    image_labels = {"cat_chelsea": 0, "horse_on_grass": 1}
    with tf.io.TFRecordWriter(str(record_file)) as writer:
        for image_id, label in image_labels.items():
            image_string = voc.image_path(voc.sample_root(), image_id).read_bytes()
            writer.write(image_example(image_string, label).SerializeToString())
    found = r"\['depth', 'height', 'image_raw', 'label', 'width'\], which match neither"
    with pytest.raises(
        ValueError, match=rf"images\.tfrecords: record 0 has features {found}"
    ) as error:
        voc_batches(record_file, 2, crop=CROP)
    expected = "(expected every key of one: raw: height, width, image_raw, mask_raw; encoded: "
    assert expected in str(error.value) and "image/segmentation/class/encoded" in str(error.value)


# ---------------------------------------------------------------------------
# Bad records later in a file, bad arguments
# ---------------------------------------------------------------------------


def test_a_bad_later_record_names_its_file_and_index(tmp_path, pairs):
    payloads = [serialize(pair, i, "raw") for i, pair in enumerate(pairs[:4])]
    short = raw_example(*pairs[2], "short.jpg")
    short.features.feature["image_raw"].bytes_list.value[0] = b"\x00" * 10
    payloads[2] = short.SerializeToString()
    path = tmp_path / "damaged.tfrecord"
    write_records(path, payloads)
    expected = pairs[2][1].size * 3  # height * width * 3
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"damaged.tfrecord\] \[record\] \[2\] \[image_raw bytes:\] \[10\] "
        rf"\[expected height\*width\*3 =\] \[{expected}\]",
    ):
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=0))


def test_a_missing_mask_is_reported_not_read_as_empty(tmp_path, pairs):
    payloads = [serialize(pair, i, "raw") for i, pair in enumerate(pairs[:3])]
    example = raw_example(*pairs[1], "nomask.jpg")
    del example.features.feature["mask_raw"]
    payloads[1] = example.SerializeToString()
    path = tmp_path / "nomask.tfrecord"
    write_records(path, payloads)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"nomask.tfrecord\] \[record\] \[1\] \[mask_raw bytes:\] \[0\]",
    ):
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=4, seed=0))


def test_a_colour_mask_png_is_refused(tmp_path, pairs):
    image, mask = pairs[0]
    colour = np.stack([mask] * 3, axis=-1)
    example = encoded_example(
        png(image), png(colour), "colour.jpg", *mask.shape, image_format="png"
    )
    path = tmp_path / "colour.tfrecord"
    write_records(path, [example.SerializeToString()])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"colour.tfrecord\] \[record\] \[0\] \[mask PNG channels:\] \[3\] "
        r"\[expected 1 \(grayscale\)\]",
    ):
        collect(voc_batches([path], 1, crop=CROP))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2, "shuffle_buffer": -1}, "shuffle_buffer"),
        ({"batch_size": 2, "crop": (0, 5)}, "crop height must be at least 1"),
        ({"batch_size": 2, "crop": (5, 0)}, "crop width must be at least 1"),
        ({"batch_size": 2, "crop": 384}, "crop size"),
        ({"batch_size": 2, "crop": (4, 5, 6)}, "crop size"),
        (
            {"batch_size": 2, "compression": "LZ4"},
            "compression must be None, 'GZIP', 'ZLIB' or 'auto', got 'LZ4'",
        ),
        ({"batch_size": 2, "seed": -1}, "seed"),
    ],
)
def test_bad_arguments_are_refused(raw_files, kwargs, message):
    with pytest.raises(ValueError, match=message):
        voc_batches(raw_files, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 2, "seed": None}, "seed must be an int.*got None"),
        ({"batch_size": 2.0}, "batch_size must be an int"),
        ({"batch_size": 2, "crop": (16.0, 20)}, "crop height must be an int"),
        ({"batch_size": 2, "shuffle_buffer": None}, "shuffle_buffer must be an int"),
    ],
)
def test_non_integers_are_refused_with_a_type_error(raw_files, kwargs, message):
    with pytest.raises(TypeError, match=message):
        voc_batches(raw_files, **kwargs)


def test_numpy_integers_are_accepted(raw_files):
    numpy_args = voc_batches(
        raw_files,
        np.int64(3),
        crop=(np.int32(16), np.int64(20)),
        shuffle_buffer=np.int16(4),
        seed=np.uint8(11),
        augment=True,
    )
    python_args = voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=11, augment=True)
    np.testing.assert_array_equal(collect(numpy_args)[0], collect(python_args)[0])


def test_files_can_be_a_glob_pattern_and_missing_files_are_named(raw_files, tmp_path):
    pattern = str(tmp_path / "raw-plain-*.tfrecord")
    by_pattern = collect(voc_batches(pattern, 3, crop=CROP, shuffle_buffer=0))[0]
    np.testing.assert_array_equal(
        by_pattern, collect(voc_batches(sorted(raw_files), 3, crop=CROP, shuffle_buffer=0))[0]
    )
    with pytest.raises(FileNotFoundError, match="no file matches"):
        voc_batches(str(tmp_path / "nothing-*.tfrecord"), 2)
    missing = [tmp_path / "missing.tfrecord", tmp_path / "gone.tfrecord"]
    with pytest.raises(FileNotFoundError) as caught:
        voc_batches(missing, 2)
    assert str(caught.value) == f"no such file: {missing[0]}, {missing[1]}"
    with pytest.raises(ValueError, match="files is empty"):
        voc_batches([], 2)


@pytest.mark.parametrize("literal", ["shard[1].tfrecord", "shard*.tfrecord", "shard?.tfrecord"])
@pytest.mark.parametrize("as_path", [False, True])
def test_a_file_whose_name_holds_glob_characters_is_read_as_that_file(
    tmp_path, pairs, literal, as_path
):
    """Read as a pattern, each of these names would match shard1.tfrecord (other pairs) too."""
    write_records(tmp_path / literal, [serialize(pairs[0], 0, "raw")])
    write_records(tmp_path / "shard1.tfrecord", [serialize(pairs[1], 1, "raw")])
    name = tmp_path / literal if as_path else str(tmp_path / literal)
    images, masks = collect(voc_batches(name, 4, crop=CROP, shuffle_buffer=0))
    expected = expected_centre(*pairs[0])
    assert len(images) == 1
    np.testing.assert_array_equal(images[0], expected[0])
    np.testing.assert_array_equal(masks[0], expected[1])


def test_a_pattern_that_matches_nothing_says_no_file_has_that_name_either(tmp_path):
    name = str(tmp_path / "shard[1].tfrecord")
    with pytest.raises(FileNotFoundError) as caught:
        voc_batches(name, 2)
    assert str(caught.value) == f"no file matches {name!r}, and no file has that name"


def test_a_folder_name_with_glob_characters_is_escaped_in_a_pattern(tmp_path, pairs):
    folder = tmp_path / "run[1]"
    folder.mkdir()
    (tmp_path / "run1").mkdir()  # the unescaped pattern would look here and find nothing
    paths = write_shards(folder, pairs)
    by_pattern = voc_batches(os.path.join(glob.escape(str(folder)), "*.tfrecord"), 8, CROP, 0)
    by_paths = voc_batches(paths, 8, CROP, 0)
    np.testing.assert_array_equal(collect(by_pattern)[0], collect(by_paths)[0])
    with pytest.raises(FileNotFoundError, match="no file matches"):
        voc_batches(str(folder / "*.tfrecord"), 2)


# ---------------------------------------------------------------------------
# Parallelism survives op determinism
# ---------------------------------------------------------------------------

# Stateful ops that TensorFlow's MakeDeterministic rewrite accepts inside a
# dataset function (grappler/optimizers/data/make_deterministic.cc). Any other
# stateful op there (e.g. TensorDataset from Dataset.from_tensors) makes
# TensorFlow run every map and interleave serially, and drop prefetching, when
# op determinism is on, as prepare_tensorflow() turns it on in every notebook.
DETERMINISM_SAFE = {
    "TextLineDataset",
    "FixedLengthRecordDataset",
    "TFRecordDataset",
    "TensorSliceDataset",
    "RangeDataset",
    "SSTableDataset",
    "RecordIODataset",
    "Print",
    "Assert",
}


def stateful_ops_in_functions(dataset):
    from tensorflow.python.framework import op_def_registry

    graph = tf.compat.v1.GraphDef.FromString(
        dataset._as_serialized_graph().numpy()
    )  # private, but stable for years
    ops = {node.op for function in graph.library.function for node in function.node_def}
    return {
        op
        for op in ops
        if op_def_registry.get(op) is not None and op_def_registry.get(op).is_stateful
    }


@pytest.mark.parametrize("augment, shuffle_buffer", [(False, 4), (True, 4), (False, 0)])
def test_pipeline_functions_hold_no_stateful_op_that_serializes_it(
    raw_files, augment, shuffle_buffer
):
    dataset = voc_batches(
        raw_files, 2, crop=CROP, shuffle_buffer=shuffle_buffer, seed=1, augment=augment
    )
    found = stateful_ops_in_functions(dataset) - {"_Retval"}
    assert "TFRecordDataset" in found  # the check sees inside the interleave function
    assert found <= DETERMINISM_SAFE, f"serializing ops: {sorted(found - DETERMINISM_SAFE)}"


@pytest.mark.parametrize("augment", [False, True])
def test_random_numbers_are_drawn_only_when_augmenting(raw_files, augment):
    dataset = voc_batches(raw_files, 2, crop=CROP, shuffle_buffer=4, seed=1, augment=augment)
    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())
    ops = {node.op for node in graph.node}
    assert any(op.startswith("RandomDataset") for op in ops) == augment  # no zip, no stream


def test_autotuning_is_off_and_turning_it_on_changes_no_batch(raw_files):
    build = lambda: voc_batches(raw_files, 3, crop=CROP, shuffle_buffer=4, seed=2, augment=True)  # noqa: E731
    dataset = build()
    assert dataset.options().autotune.enabled is False  # bench_pipeline shows why
    options = tf.data.Options()
    options.autotune.enabled = True
    autotuned = build().with_options(options)  # a new pipeline: its first epoch, like dataset's
    assert autotuned.options().autotune.enabled is True
    want = collect(dataset)
    got = collect(autotuned)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_an_empty_encoded_image_is_reported_with_its_file_and_index(tmp_path, pairs):
    payloads = [serialize(pair, i, "encoded") for i, pair in enumerate(pairs[:3])]
    image, mask = pairs[2]
    payloads[2] = encoded_example(b"", png(mask), "empty.jpg", *mask.shape).SerializeToString()
    path = tmp_path / "empty_image.tfrecord"
    write_records(path, payloads)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"empty_image.tfrecord\] \[record\] \[2\] \[image/encoded is empty",
    ):
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=0))


def test_importing_the_module_imports_no_tensorflow():
    import subprocess
    import sys

    code = "import helpers.pipeline, sys; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("zero", ["height", "width"])
def test_a_later_record_of_zero_rows_or_columns_is_refused_naming_both_sizes(tmp_path, pairs, zero):
    payloads = [serialize(pair, i, "raw") for i, pair in enumerate(pairs[:3])]
    flat = raw_example(*pairs[1], "flat.jpg")
    for key, value in ((zero, 0), ("image_raw", b""), ("mask_raw", b"")):
        flat.features.feature[key].CopyFrom(feature(value))
    payloads[1] = flat.SerializeToString()
    path = tmp_path / "flat.tfrecord"
    write_records(path, payloads)
    sizes = dict(zip(("height", "width"), pairs[1][1].shape, strict=True)) | {zero: 0}
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"flat.tfrecord\] \[record\] \[1\] \[height, width \(missing\?\):\] "
        rf"\[{sizes['height']}\] \[{sizes['width']}\]",
    ):
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=0))


def test_a_one_pixel_pair_reads_padded_with_void(tmp_path):
    image = np.full((1, 1, 3), 7, np.uint8)
    mask = np.full((1, 1), 3, np.uint8)
    path = tmp_path / "dot.tfrecord"
    write_records(path, [raw_example(image, mask, "dot.jpg").SerializeToString()])
    images, masks = collect(voc_batches([path], 1, crop=(3, 3), shuffle_buffer=0))
    assert images[0, 1, 1].tolist() == [7, 7, 7] and images.sum() == 21
    assert masks[0, 1, 1, 0] == 3 and (masks == 255).sum() == 8


def test_an_empty_list_of_files_is_refused_as_such():
    with pytest.raises(ValueError, match="^files is empty: pass at least one TFRecord file$"):
        voc_batches([], 2)


def test_with_shuffling_the_files_are_read_in_turn_one_record_each(raw_files, pairs):
    # A buffer of one record shuffles nothing: the first two records are each file's first.
    images = first_images(voc_batches(raw_files, 1, crop=CROP, shuffle_buffer=1, seed=0).take(2))
    firsts = {expected_centre(*pairs[i])[0].tobytes() for i in (0, 1)}
    assert {image.tobytes() for image in images} == firsts


def test_an_encoded_image_and_mask_of_two_sizes_are_refused_naming_both(tmp_path, pairs):
    payloads = [serialize(pair, i, "encoded") for i, pair in enumerate(pairs[:3])]
    image, mask = pairs[1]
    height, width = mask.shape
    small = png(mask[:-1, :-2])
    payloads[1] = encoded_example(png(image), small, "sizes.jpg", height, width).SerializeToString()
    path = tmp_path / "sizes.tfrecord"
    write_records(path, payloads)
    message = (
        rf"sizes.tfrecord\] \[record\] \[1\] \[image size:\] \[{height} {width}\] "
        rf"\[differs from mask size:\] \[{height - 1} {width - 2}\]"
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=0))


def test_a_compressed_file_of_no_records_is_skipped_among_others(tmp_path, pairs):
    files = write_shards(tmp_path, pairs, num_shards=2, compression="GZIP")
    empty = tmp_path / "empty.tfrecord.gz"
    write_records(empty, [], compression="GZIP")
    assert empty.stat().st_size > 0  # a GZIP stream of nothing still has a header
    expected = collect(voc_batches(files, 3, crop=CROP, shuffle_buffer=0))[0]
    got = collect(voc_batches([empty, *files], 3, crop=CROP, shuffle_buffer=0))[0]
    np.testing.assert_array_equal(got, expected)


def test_record_0_that_is_no_example_or_has_a_bad_filename_is_refused_by_name(tmp_path, pairs):
    path = tmp_path / "junk.tfrecord"
    write_records(path, [b"\xff\xff\xff not protobuf"])
    with pytest.raises(
        ValueError, match=r"junk\.tfrecord: record 0 is not a tf\.train\.Example \("
    ):
        voc_batches([path], 2)
    twice = raw_example(*pairs[0], "a.jpg")
    twice.features.feature["filename"].bytes_list.value.append(b"b.jpg")
    write_records(path, [twice.SerializeToString()], overwrite=True)
    message = r"record 0 \(raw schema\): feature 'filename' holds 2 values, expected one value"
    with pytest.raises(ValueError, match=message):
        voc_batches([path], 2)
    empty = raw_example(*pairs[0], "a.jpg")
    empty.features.feature["height"].Clear()  # the key is there, its Feature holds no list
    write_records(path, [empty.SerializeToString()], overwrite=True)
    message = r"feature 'height' holds nothing, expected one value in a int64_list$"
    with pytest.raises(ValueError, match=message):
        voc_batches([path], 2)


def test_an_encoded_image_of_one_byte_is_undecodable_not_empty(tmp_path, pairs):
    payloads = [serialize(pair, i, "encoded") for i, pair in enumerate(pairs[:2])]
    image, mask = pairs[1]
    payloads[1] = encoded_example(b"\xff", png(mask), "byte.jpg", *mask.shape).SerializeToString()
    path = tmp_path / "byte.tfrecord"
    write_records(path, payloads)
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        collect(voc_batches([path], 2, crop=CROP, shuffle_buffer=0))
    assert "is empty" not in caught.value.message
