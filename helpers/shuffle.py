"""A uniform global shuffle of TFRecord files: a seeded permutation, read by random access.

``dataset.shuffle(buffer_size)`` only mixes the records that sit in its buffer at the
same time, so on sorted files a buffer smaller than the data keeps much of the input
order. Notebook 04 (``04_measure_shuffle_bias.ipynb``) measures that bias and builds
the fix step by step: shuffle record *numbers* instead of records, then load each
record by its byte offset with :class:`helpers.index.RecordView`. This module keeps
the two pieces later notebooks use again:

* :func:`permutation`: the one seeded permutation of record numbers (notebooks 04,
  05 and 07);
* :func:`global_shuffle_dataset`: the same thing as a ``tf.data.Dataset`` that draws
  a new permutation for every pass.

No TensorFlow is imported here until :func:`global_shuffle_dataset` is called.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from helpers._checks import check_int, check_seed
from helpers.index import RecordView

if TYPE_CHECKING:  # TensorFlow is imported only when a dataset is made
    import tensorflow as tf


def permutation(num_records: int, seed: int, epoch: int = 0) -> np.ndarray:
    """Return a uniformly random permutation of ``0 .. num_records - 1`` as int64.

    The same ``(seed, epoch)`` always gives the same permutation; any other pair gives
    an independent one (NumPy's ``default_rng`` seeded with both numbers). Pass a new
    ``epoch`` for each pass over the data. Shown in notebook 04, section "Shuffle
    globally by random access".

    Raises:
        TypeError: if an argument is not an int (``seed=None`` included; NumPy
            integers are accepted).
        ValueError: if an argument is negative.
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
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of every record of ``files``, in a uniformly random order.

    Each pass over the dataset (each epoch of ``.repeat()``, each new ``for`` loop)
    yields every record once, in the order of ``permutation(n, seed, epoch=k)`` for
    pass ``k`` (always ``epoch=0`` with ``reshuffle_each_iteration=False``). Elements
    are scalar ``tf.string`` tensors, like those of ``tf.data.TFRecordDataset``.
    Memory: the offset index (8 bytes per record), the permutation (8 bytes per
    record) and a few slices of ``read_batch`` records being read; never the data.

    This is notebook 04's "Shuffle ids with a full buffer, then load the records"
    with the ``tf.data`` buffer of ids replaced by :func:`permutation`: the record
    numbers go through the pipeline in slices of ``read_batch``, a ``map`` reads each
    slice with :class:`~helpers.index.RecordView` (``view[ids]``) inside
    ``tf.numpy_function`` (``parallel_reads`` slices at a time, ``None`` meaning
    ``tf.data.AUTOTUNE``, order kept), and ``unbatch`` splits the slices into records.
    The files are indexed once, here, and stay open while the dataset exists. The
    dataset knows its cardinality (``len``), so Keras shows a total for each epoch.
    ``benchmarks/bench_shuffle.py`` compares it with sequential reading.

    Raises:
        TypeError: for a ``seed``, ``read_batch`` or ``parallel_reads`` that is not an int.
        ValueError: for a negative seed, ``read_batch`` or ``parallel_reads`` below 1,
            or a GZIP/ZLIB file (it cannot be indexed).
        RecordError: while indexing, for a damaged header (file, record, byte offset).
        tf.errors.InvalidArgumentError: while iterating, for a damaged record (the
            message holds the RecordError's: file, record index, byte offset).
    """
    import tensorflow as tf

    seed = check_seed(seed)
    read_batch = check_int(read_batch, "read_batch", minimum=1)
    if parallel_reads is None:
        parallel_reads = tf.data.AUTOTUNE
    else:
        parallel_reads = check_int(parallel_reads, "parallel_reads", minimum=1)
    view = RecordView(files)
    passes = itertools.count()

    def id_slices() -> Iterator[np.ndarray]:
        epoch = next(passes) if reshuffle_each_iteration else 0
        order = permutation(len(view), seed, epoch)
        for start in range(0, len(order), read_batch):
            yield order[start : start + read_batch]

    def read(ids: np.ndarray) -> np.ndarray:
        return np.array(view[ids], dtype=object).reshape(-1)

    def read_op(ids: tf.Tensor) -> tf.Tensor:
        records = tf.numpy_function(read, [ids], tf.string, stateful=False)
        records.set_shape([None])
        return records

    spec = tf.TensorSpec(shape=[None], dtype=tf.int64)
    ids = tf.data.Dataset.from_generator(id_slices, output_signature=spec)
    records = ids.map(read_op, num_parallel_calls=parallel_reads, deterministic=True).unbatch()
    return records.apply(tf.data.experimental.assert_cardinality(len(view)))
