"""A uniform global shuffle of TFRecord files: shuffle record *numbers*, then read each record
by random access (notebook 04 measures the bias of a small shuffle buffer and builds this fix).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from helpers._checks import check_int, check_seed
from helpers.index import RecordView

if TYPE_CHECKING:  # TensorFlow is imported only when a dataset is made
    import tensorflow as tf


def permutation(num_records: int, seed: int, epoch: int = 0) -> np.ndarray:
    """A uniformly random permutation of ``0 .. num_records - 1`` as int64 (notebook 04), the
    same for the same ``(seed, epoch)`` (``default_rng([seed, epoch])``): a new ``epoch`` per
    pass. TypeError for an argument not an int (``None`` too), ValueError for a negative one."""
    num_records = check_int(num_records, "num_records", minimum=0)
    rng = np.random.default_rng([check_seed(seed), check_int(epoch, "epoch", minimum=0)])
    return rng.permutation(num_records).astype(np.int64, copy=False)


def global_shuffle_dataset(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    seed: int,
    read_batch: int = 1024,
    reshuffle_each_iteration: bool = True,
    parallel_reads: int | None = None,
    batch_size: int | None = None,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of every record of ``files`` (scalar ``tf.string``), pass ``k`` in
    the order of ``permutation(n, seed, epoch=k)`` (``epoch=0`` without reshuffling).

    Slices of ``read_batch`` numbers are read by :class:`~helpers.index.RecordView` in
    ``tf.numpy_function``, ``parallel_reads`` at a time (``None``: AUTOTUNE). Memory: 16 bytes
    per record. The cardinality is known. With ``batch_size``, elements are vectors of that many
    records (the last may be shorter) and a slice is whole batches, at most 1 MiB unless one
    batch is more. TypeError or ValueError for an argument not an int or below 1 (a seed below
    0) or a GZIP/ZLIB file; RecordError for a damaged header; tf.errors.InvalidArgumentError
    while iterating for a damaged record (with the RecordError's file, record and offset).
    """
    import tensorflow as tf

    seed = check_seed(seed)
    read_batch = check_int(read_batch, "read_batch", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if parallel_reads is not None:
        parallel_reads = check_int(parallel_reads, "parallel_reads", minimum=1)
    parallel = parallel_reads or tf.data.AUTOTUNE
    view = RecordView(files)
    if batch_size:  # whole batches per call, up to 1 MiB of records: a call costs about 0.2 ms
        per_mib = 2**20 * len(view) // max(sum(map(os.path.getsize, view.paths)), 1)
        read_batch = max(min(read_batch, per_mib) // batch_size, 1) * batch_size
    passes = itertools.count() if reshuffle_each_iteration else itertools.repeat(0)
    width = batch_size or read_batch  # records per vector a read hands on

    @functools.lru_cache(maxsize=1)  # the permutation of the pass being read: 8 bytes a record
    def order(epoch: int) -> np.ndarray:
        return permutation(len(view), seed, epoch)

    def read(epoch: np.ndarray, start: np.ndarray) -> list[np.ndarray]:  # the last ones may be []
        records = np.array(view[order(int(epoch))[start : start + read_batch]], dtype=object)
        return np.split(records, range(width, read_batch, width))

    def read_op(epoch: tf.Tensor, start: tf.Tensor) -> tuple[tf.Tensor, ...] | tf.Tensor:
        types = [tf.string] * (read_batch // width)
        vectors = tf.numpy_function(read, [epoch, start], types, stateful=False)
        vectors = [tf.ensure_shape(vector, [None]) for vector in vectors]
        return (start, *vectors) if len(vectors) > 1 else vectors[0]

    def slices(epoch: tf.Tensor) -> tf.data.Dataset:  # Python runs once a pass, tf.data per slice
        return tf.data.Dataset.range(0, len(view), read_batch).map(lambda start: (epoch, start))

    def one_by_one(start: tf.Tensor, *vectors: tf.Tensor) -> tf.data.Dataset:  # unbatch copies
        datasets = map(tf.data.Dataset.from_tensors, vectors)  # filtering the empty: 1.6x slower
        full = (tf.minimum(len(view) - start, read_batch) + width - 1) // width  # the rest are []
        return functools.reduce(tf.data.Dataset.concatenate, datasets).take(full)

    spec = tf.TensorSpec(shape=[], dtype=tf.int64)
    epochs = tf.data.Dataset.from_generator(lambda: [next(passes)], output_signature=spec)
    reads = epochs.flat_map(slices).map(read_op, parallel, deterministic=True)
    records = reads.flat_map(one_by_one) if read_batch > width else reads  # k vectors, or one
    records = records if batch_size else records.unbatch()  # moves what it alone holds: no copy
    count = -(-len(view) // (batch_size or 1))  # elements per pass
    return records.apply(tf.data.experimental.assert_cardinality(count))
