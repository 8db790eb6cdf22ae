"""A uniform global shuffle of TFRecord files: a seeded permutation, read by random access.

``dataset.shuffle(buffer_size)`` mixes only what sits in its buffer, so on sorted files a small
buffer keeps much of the input order. Notebook 04 measures that bias and builds the fix: shuffle
record *numbers*, then load each record through :class:`helpers.index.RecordView`.
:func:`permutation` is the one seeded permutation (notebooks 04, 05, 07), and
:func:`global_shuffle_dataset` the same as a ``tf.data.Dataset`` (TensorFlow is imported then).
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
    """A uniformly random permutation of ``0 .. num_records - 1`` as int64 (notebook 04).

    The same ``(seed, epoch)`` gives the same permutation, any other pair an independent one
    (``default_rng([seed, epoch])``): pass a new ``epoch`` for each pass over the data.
    TypeError for an argument that is not an int (``None`` included; NumPy ints are fine),
    ValueError for a negative one.
    """
    num_records = check_int(num_records, "num_records", minimum=0)
    seed = check_seed(seed)
    epoch = check_int(epoch, "epoch", minimum=0)
    order = np.random.default_rng([seed, epoch]).permutation(num_records)
    return order.astype(np.int64, copy=False)


def global_shuffle_dataset(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    seed: int,
    read_batch: int = 1024,
    reshuffle_each_iteration: bool = True,
    parallel_reads: int | None = None,
    batch_size: int | None = None,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of every record of ``files``, in a uniformly random order.

    Pass ``k`` over the dataset yields every record once, in the order of ``permutation(n, seed,
    epoch=k)`` (``epoch=0`` always without reshuffling), as scalar ``tf.string`` tensors like
    ``tf.data.TFRecordDataset``'s. Slices of ``read_batch`` numbers are read with
    :class:`~helpers.index.RecordView` in ``tf.numpy_function`` (``parallel_reads`` at a time,
    ``None``: AUTOTUNE; order kept), as in notebook 04. Memory: 16 bytes per record (index and
    permutation), never the data. The cardinality is known, so Keras shows a total per epoch. With
    ``batch_size``, elements are vectors of that many records (the last may be shorter; slices are
    whole batches), ready for ``tf.io.parse_example``. ``benchmarks/bench_shuffle.py`` measures it.

    Raises:
        TypeError: for a ``seed``, ``read_batch``, ``parallel_reads`` or ``batch_size`` not an int.
        ValueError: for a negative seed, a ``read_batch``, ``parallel_reads`` or ``batch_size``
            below 1, or a GZIP/ZLIB file (it cannot be indexed).
        RecordError: while indexing, for a damaged header (file, record, byte offset).
        tf.errors.InvalidArgumentError: while iterating, for a damaged record (the
            message holds the RecordError's: file, record index, byte offset).
    """
    import tensorflow as tf

    seed = check_seed(seed)
    read_batch = check_int(read_batch, "read_batch", minimum=1)
    if batch_size is not None:  # whole batches per call: a call into Python costs 0.2 ms
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        read_batch = max(read_batch // batch_size, 1) * batch_size
    if parallel_reads is not None:
        parallel_reads = check_int(parallel_reads, "parallel_reads", minimum=1)
    parallel = parallel_reads or tf.data.AUTOTUNE
    view = RecordView(files)
    passes = itertools.count() if reshuffle_each_iteration else itertools.repeat(0)
    width = batch_size or read_batch  # records per vector a read hands on
    whole = len(view) - len(view) % read_batch if batch_size else len(view)  # then a batch a read

    @functools.lru_cache(maxsize=1)  # the permutation of the pass being read: 8 bytes a record
    def order(epoch: int) -> np.ndarray:
        return permutation(len(view), seed, epoch)

    def read(epoch: np.ndarray, start: np.ndarray, stop: np.ndarray) -> list[np.ndarray]:
        records = np.array(view[order(int(epoch))[start:stop]], dtype=object)
        return np.split(records, range(width, len(records), width))

    def part(epoch: tf.Tensor, first: int, last: int, step: int) -> tf.data.Dataset:
        def read_op(start: tf.Tensor) -> list[tf.Tensor]:  # records [start, stop) as vectors
            stop, types = tf.minimum(start + step, last), [tf.string] * (step // width)
            vectors = tf.numpy_function(read, [epoch, start, stop], types, stateful=False)
            return [tf.ensure_shape(vector, [None]) for vector in vectors]

        reads = tf.data.Dataset.range(first, last, step).map(read_op, parallel, deterministic=True)
        one, join = tf.data.Dataset.from_tensors, tf.data.Dataset.concatenate  # unbatch would copy
        return reads.flat_map(lambda *vectors: functools.reduce(join, map(one, vectors)))

    def reads(epoch: tf.Tensor) -> tf.data.Dataset:  # Python runs once a pass, tf.data per slice
        return part(epoch, 0, whole, read_batch).concatenate(part(epoch, whole, len(view), width))

    spec = tf.TensorSpec(shape=[], dtype=tf.int64)
    epochs = tf.data.Dataset.from_generator(lambda: [next(passes)], output_signature=spec)
    records = epochs.flat_map(reads) if batch_size else epochs.flat_map(reads).unbatch()
    count = -(-len(view) // (batch_size or 1))  # elements per pass
    return records.apply(tf.data.experimental.assert_cardinality(count))
