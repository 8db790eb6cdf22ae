"""A uniform global shuffle of TFRecord files: shuffle record *numbers*, then read each record
by random access (notebook 08 builds this fix for the bias of a small shuffle buffer)."""

from __future__ import annotations

import atexit
import ctypes
import functools
import gc
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from helpers._checks import check_int, check_seed
from helpers.index import RecordView

if TYPE_CHECKING:  # TensorFlow is imported only when a dataset is made
    import tensorflow as tf


#: Orders of at most this many positions keep what they compute (8 bytes each), in blocks.
_KEPT_ORDER = 2**20
_KEPT_BLOCK = 2**14


class EpochOrder(Sequence):
    """The record numbers (int64) shard ``shard_index`` of ``num_shards`` reads in ``epoch``, per
    position (``order[i]``, ``order[a:b]``, ``order[array]``; notebook 18, "Compute the order one
    position at a time" and "Share one epoch among workers"): a seeded bijection of ``[0, n)``
    like Grain's ``index_shuffle``, at every size. Feistel rounds (16 under 2**20 records, else
    8) on ``[0, a) x [0, b)``, ``a = ceil(sqrt(n))``, add SplitMix64 keyed by ``default_rng``
    ``([seed, epoch])`` modulo a or b; 0 and 1 swap half the time (odd permutations too); the few
    past the end step on. Elastic shares: of each global batch of ``num_shards * batch_size``
    positions of the epoch, shard ``k`` reads the ``k``-th ``batch_size``, so global batch ``j``
    holds the same records whatever the number of shards; ``order.dropped`` (< one global batch,
    new each epoch) go to none. An order of at most 2**20 positions keeps what it has computed,
    2**14 positions at a time (8 MiB at most), because 256 positions cost about as much to
    compute as their records cost to read; a larger order keeps nothing. Bad
    arguments: TypeError, ValueError; a position out of range: IndexError."""

    def __init__(
        self,
        num_records: int,
        seed: int,
        epoch: int = 0,
        num_shards: int = 1,
        shard_index: int = 0,
        batch_size: int = 1,
    ) -> None:
        self.num_records = check_int(num_records, "num_records", minimum=0)
        self.seed = check_seed(seed)
        self.epoch = check_int(epoch, "epoch", minimum=0)
        self.num_shards = check_int(num_shards, "num_shards", minimum=1)
        self.shard_index = check_int(shard_index, "shard_index", minimum=0)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        if self.shard_index >= self.num_shards:
            raise ValueError(f"shard_index must be below {num_shards}, got {shard_index}")
        per = self.batch_size if self.num_shards > 1 else 1  # records per share's unit
        self._share = self.num_records // (self.num_shards * per) * per
        self.dropped = self.num_records - self.num_shards * self._share
        rng = np.random.default_rng([self.seed, self.epoch])
        rounds = 16 if self.num_records < 2**20 else 8  # NIST wants FF1 domains over 10**6
        self._keys = rng.integers(2**64, size=rounds + 1, dtype=np.uint64)  # and a parity bit
        a = max(2, math.isqrt(max(self.num_records - 1, 0)) + 1)  # a * b >= n, under a more
        self._sides = np.array([a, max(1, -(-self.num_records // a))] * (rounds // 2), np.uint64)
        self._make_room()

    def _make_room(self) -> None:
        """Room for the positions a small order keeps (np.empty: pages are touched only when
        written), made before any thread reads, and which blocks of it are computed."""
        small = len(self) <= _KEPT_ORDER
        self._kept = np.empty(len(self), np.int64) if small else None
        self._blocks_kept = np.zeros(-(-len(self) // _KEPT_BLOCK), bool) if small else None

    def __getstate__(self) -> dict:  # a pickled order stays small: what it keeps is computed again
        return {**self.__dict__, "_kept": None, "_blocks_kept": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_room()

    def __len__(self) -> int:
        return self._share

    def __getitem__(self, key: int | slice | np.ndarray) -> int | np.ndarray:
        places = np.arange(*key.indices(len(self))) if isinstance(key, slice) else np.asarray(key)
        if places.size == 0 and not isinstance(key, np.ndarray):  # [] is float to NumPy
            places = places.astype(np.int64)
        if places.dtype.kind not in "iu":  # not bools either
            raise TypeError(f"a position, a slice or an array of positions, not {key!r}")
        if places.size and not -len(self) <= places.min() <= places.max() < len(self):
            raise IndexError(f"position out of range: the order holds {len(self)} records")
        mine = places.reshape(-1) % max(len(self), 1)  # this shard's positions, from 0
        out = self._kept_order(mine) if len(self) <= _KEPT_ORDER else self._computed(mine)
        return int(out[0]) if places.ndim == 0 else out.reshape(places.shape)

    def _kept_order(self, mine: np.ndarray) -> np.ndarray:
        """The record numbers at positions ``mine``, from the blocks computed so far (the
        missing ones computed first). Threads that fill one block at once write the same values,
        and a block counts as kept only once it is written."""
        blocks = np.unique(mine // _KEPT_BLOCK)
        for block in blocks[~self._blocks_kept[blocks]].tolist():
            start = block * _KEPT_BLOCK
            positions = np.arange(start, min(start + _KEPT_BLOCK, len(self)))
            self._kept[positions] = self._computed(positions)
            self._blocks_kept[block] = True
        return self._kept[mine]

    def _computed(self, mine: np.ndarray) -> np.ndarray:
        """The record numbers at this shard's positions ``mine``, computed (int64)."""
        out = self._step(self._in_epoch(mine).astype(np.uint64))
        walking = np.flatnonzero(out >= self.num_records)  # stepped on until inside: rare
        while walking.size:
            out[walking] = self._step(out[walking])
            walking = walking[out[walking] >= self.num_records]
        return out.astype(np.int64)

    def _in_epoch(self, mine: np.ndarray) -> np.ndarray:
        """The epoch's positions of this shard's: its part of each global batch, in turn."""
        if self.num_shards == 1:
            return mine
        batch = self.batch_size
        return mine // batch * (batch * self.num_shards) + self.shard_index * batch + mine % batch

    def _step(self, x: np.ndarray) -> np.ndarray:  # one bijection of [0, a * b)
        a, b = self._sides[:2]  # then a, b, a, b...: the modulus of each round
        left = x // b  # in [0, a)
        right = x % b  # in [0, b); a round swaps the two
        for key, modulus in zip(self._keys[:-1], self._sides, strict=True):  # uint64 wraps
            mixed = right ^ key  # then SplitMix64's finalizer
            mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            shifted = (left + (mixed ^ (mixed >> np.uint64(31))) % modulus) % modulus
            left = right
            right = shifted
        out = left * b + right
        return np.where(out < 2, out ^ (self._keys[-1] & np.uint64(1)), out)  # maybe swap 0, 1


def permutation(num_records: int, seed: int, epoch: int = 0) -> np.ndarray:
    """``EpochOrder(num_records, seed, epoch)[:]``: every record number once (notebook 08), the
    same for the same ``(seed, epoch)``, a new order for each ``epoch``."""
    return EpochOrder(num_records, seed, epoch)[:]


def _keep_iterators() -> None:
    """At exit, give every tf.data iterator still alive one more reference, never released: the
    process ends with them instead of destroying them.

    Python's exit stops each other thread the next time it takes Python's lock, and a read is
    then often in flight (NumPy and ``pread`` let go of the lock many times a read): that
    ``numpy_function`` call never returns. An iterator destroyed later in the exit, as its
    module's globals are cleared, would wait for it for ever in its ``ParallelMapDataset``'s
    destructor. Dropping one before the exit is safe: the destructor lets go of the lock."""
    import tensorflow as tf

    kinds = set()
    more = [tf.data.Iterator]
    while more:  # its subclasses, theirs, ...: one set lookup per object is all it costs
        kind = more.pop()
        kinds.add(kind)
        more.extend(kind.__subclasses__())
    for thing in gc.get_objects():
        if type(thing) in kinds:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(thing))


@functools.cache
def _keep_iterators_at_exit() -> None:
    """Registers :func:`_keep_iterators` once, when the process makes its first dataset."""
    atexit.register(_keep_iterators)


def _reader(view: RecordView, first: EpochOrder, batch_size: int | None) -> Callable:
    """``read(epoch, start, stop)``: the records at positions ``start`` to ``stop`` of ``epoch``'s
    order (``first``'s, for another epoch), as whole batches (a matrix with a batch per row) if
    ``batch_size``, else a vector: the Python of a read."""
    orders = {}  # the last epochs' orders, so that what a small one keeps serves every read

    def order_of(epoch: int) -> EpochOrder:
        order = orders.get(epoch)
        if order is None:  # two threads may both make it: the same order
            shards = (first.num_shards, first.shard_index, first.batch_size)
            order = EpochOrder(len(view), first.seed, epoch, *shards)  # about 10 µs
            orders[epoch] = order
            for old in sorted(orders)[:-2]:  # reads of two epochs may be in flight at once
                orders.pop(old, None)
        return order

    def read(epoch: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
        records = np.array(view[order_of(int(epoch))[start:stop]], dtype=object)
        if batch_size is None:
            return records
        return records.reshape(-1, batch_size if len(records) % batch_size == 0 else len(records))

    return read


def _shard(num_shards: int, shard_index: int, context: object) -> tuple[int, int]:
    """``(num_shards, shard_index)``, or those of ``context`` (a ``tf.distribute.InputContext``)."""
    if context is None:
        return num_shards, shard_index
    if (num_shards, shard_index) != (1, 0):
        raise ValueError("give input_context or num_shards and shard_index, not both")
    return context.num_input_pipelines, context.input_pipeline_id


def _whole_batches(view: RecordView, read_batch: int, batch_size: int) -> int:
    """``read_batch`` cut down to whole batches of about 1 MiB at most (at least one batch): a
    call into Python costs about 0.2 ms."""
    per_mib = 2**20 * len(view) // max(sum(map(os.path.getsize, view.paths)), 1)
    return max(min(read_batch, per_mib) // batch_size, 1) * batch_size


def _start(first: EpochOrder, position: int, epochs: int | None) -> int:
    """This shard's first position: ``position`` counts the epoch's records that every shard
    together has read, so it is a multiple of the global batch when there are several shards
    (``first`` is the first epoch's order)."""
    position = check_int(position, "position", minimum=0)
    shards = first.num_shards
    together = shards * len(first)  # what all shards read of an epoch
    if position > together:
        raise ValueError(f"position must be at most {together} (all shards' share), got {position}")
    if shards > 1 and position % (shards * first.batch_size):
        raise ValueError(
            f"position must be a multiple of the global batch {shards * first.batch_size} "
            f"(num_shards x batch_size) when there are {shards} shards, got {position}"
        )
    if epochs is None and together == 0:
        raise ValueError("an endless stream needs records: this shard's share is 0")
    return position // shards


def _count(first: EpochOrder, position: int, epochs: int | None) -> int:
    """The elements of the stream: the first epoch's from ``position``, then whole epochs."""
    import tensorflow as tf

    if epochs is None:
        return tf.data.INFINITE_CARDINALITY
    share = len(first)
    width = first.batch_size  # records per element
    return -(-(share - position) // width) + (epochs - 1) * -(-share // width)


def _epoch_reader(
    view: RecordView,
    first: EpochOrder,
    position: int,
    read_batch: int,
    batch_size: int | None,
    parallel: int,
    deterministic: bool,
) -> Callable:
    """``one_epoch(epoch)``: the records of ``epoch`` in its order (``first`` is the first
    epoch's, read from ``position``), ``read_batch`` at a time by ``parallel`` calls. With
    ``batch_size``, each call reads whole batches, and an epoch's last, shorter batch alone."""
    import tensorflow as tf

    read = _reader(view, first, batch_size)
    shape = [None] if batch_size is None else [None, None]

    def read_op(epoch: tf.Tensor, start: tf.Tensor, stop: tf.Tensor) -> tf.Tensor:
        records = tf.numpy_function(read, [epoch, start, stop], tf.string, False)
        return tf.ensure_shape(records, shape)

    def one_epoch(epoch: tf.Tensor) -> tf.data.Dataset:
        start = tf.where(epoch == first.epoch, tf.constant(position, tf.int64), 0)
        slices = _slices(start, len(first), read_batch, batch_size or 1)
        reads = slices.map(lambda start, stop: read_op(epoch, start, stop), parallel, deterministic)
        return reads.unbatch()  # a call's batches one by one (records, unbatched)

    return one_epoch


def _slices(start: tf.Tensor, share: int, read_batch: int, batch_size: int) -> tf.data.Dataset:
    """``(start, stop)`` of each read: ``read_batch`` positions at a time from ``start`` to where
    the whole batches end, then the shorter batch after them, if any (int64)."""
    import tensorflow as tf

    share = tf.constant(share, tf.int64)
    whole = start + (share - start) // batch_size * batch_size  # where the whole batches end
    starts = tf.data.Dataset.range(start, whole, read_batch)
    reads = starts.map(lambda at: (at, tf.minimum(at + read_batch, whole)))
    rest = tf.data.Dataset.from_tensors((whole, share)).filter(lambda at, stop: at < stop)
    return reads.concatenate(rest)


def global_shuffle_dataset(
    files: str | os.PathLike | Sequence[str | os.PathLike],
    seed: int,
    read_batch: int = 1024,
    parallel_reads: int | None = None,
    batch_size: int | None = None,
    *,
    epoch: int = 0,
    position: int = 0,
    epochs: int | None = 1,
    num_shards: int = 1,
    shard_index: int = 0,
    input_context: tf.distribute.InputContext | None = None,
    deterministic: bool = True,
) -> tf.data.Dataset:
    """This shard's records as a ``tf.data.Dataset`` (``tf.string``; with ``batch_size``, vectors,
    an epoch's last maybe shorter), epochs ``epoch`` to ``epoch + epochs - 1`` (``None``: on, for
    Keras ``steps_per_epoch``) in :class:`EpochOrder`'s order, the first from ``position`` (of
    the epoch, all shards together: resume at any number of shards with the same global batch;
    notebook 18, "Resume after preemption");
    ``input_context`` (``tf.distribute``) gives the shards. ``parallel_reads`` calls (``None``:
    AUTOTUNE) read ``read_batch`` records, or whole batches to 1 MiB. Finite: cardinality known.
    A ``tf.train.Checkpoint`` of an iterator holds positions (< 4 KB), resumes exactly; with
    ``deterministic=False`` reads finish out of order: it saves those in flight, resumes with the
    same records in another order. A script may end, or drop an iterator, with reads in flight.
    Raises TypeError, ValueError (GZIP/ZLIB too), RecordError; tf.errors.InvalidArgumentError
    names a damaged record while iterating."""
    import tensorflow as tf

    read_batch = check_int(read_batch, "read_batch", minimum=1)
    if parallel_reads is not None:
        parallel_reads = check_int(parallel_reads, "parallel_reads", minimum=1)
    if epochs is not None:
        epochs = check_int(epochs, "epochs", minimum=1)
    num_shards, shard_index = _shard(num_shards, shard_index, input_context)
    view = RecordView(files)
    _keep_iterators_at_exit()
    width = 1 if batch_size is None else batch_size  # records per element, checked by EpochOrder
    first = EpochOrder(len(view), seed, epoch, num_shards, shard_index, width)  # checks them
    position = _start(first, position, epochs)
    if batch_size:
        read_batch = _whole_batches(view, read_batch, batch_size)
    parallel = parallel_reads or tf.data.AUTOTUNE
    one_epoch = _epoch_reader(
        view, first, position, read_batch, batch_size, parallel, deterministic
    )
    last = np.iinfo(np.int64).max if epochs is None else first.epoch + epochs
    records = tf.data.Dataset.range(first.epoch, last).flat_map(one_epoch)
    count = _count(first, position, epochs)
    options = tf.data.Options()
    options.experimental_symbolic_checkpoint = deterministic  # positions only, no records
    return records.apply(tf.data.experimental.assert_cardinality(count)).with_options(options)
