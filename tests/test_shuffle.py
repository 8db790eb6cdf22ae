"""helpers.shuffle: the permutation is uniform and seeded, the dataset follows it exactly."""

import itertools
import struct
import subprocess
import sys
import threading
import time
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from helpers import shuffle
from helpers.index import RecordView
from helpers.records import write_records
from helpers.shuffle import EpochOrder, global_shuffle_dataset, permutation

RECORD = struct.Struct("<qq")  # (input index, label): the smallest payload that carries both


def write_sorted(folder, num_records, num_classes=10, num_files=3):
    """Label-sorted records in contiguous files, as in notebook 07."""
    labels = np.repeat(np.arange(num_classes), num_records // num_classes)
    bounds = np.linspace(0, num_records, num_files + 1).astype(int)
    paths = []
    for f, (start, stop) in enumerate(itertools.pairwise(bounds)):
        paths.append(folder / f"sorted-{f}.tfrecord")
        write_records(paths[-1], (RECORD.pack(i, int(labels[i])) for i in range(start, stop)))
    return paths


def indices_of(dataset):
    return np.array([RECORD.unpack(x)[0] for x in dataset.as_numpy_iterator()], dtype=np.int64)


def buffer_shuffle(n, buffer_size, seed):
    """tf.data's buffer algorithm in NumPy: fill the buffer, output a random element, refill."""
    rng, buffer, out = np.random.default_rng(seed), [], []
    for i in range(n):
        buffer.append(i)
        if len(buffer) == buffer_size:
            j = rng.integers(len(buffer))
            buffer[j], buffer[-1] = buffer[-1], buffer[j]
            out.append(buffer.pop())
    rng.shuffle(buffer)
    return out + buffer


def uniformity_p(orders):
    """Chi-square p of the counts of every order of 4 items against equal counts."""
    counts = Counter(tuple(int(x) for x in order) for order in orders)
    return stats.chisquare([counts.get(p, 0) for p in itertools.permutations(range(4))]).pvalue


def test_every_order_of_four_records_is_equally_likely():
    """2,400 seeds over 4 records: each of the 24 orders should come out about 100 times."""
    orders = [permutation(4, seed) for seed in range(2_400)]
    assert len({tuple(o.tolist()) for o in orders}) == 24
    assert uniformity_p(orders) > 1e-3
    epochs = [permutation(4, 0, epoch) for epoch in range(2_400)]
    assert uniformity_p(epochs) > 1e-3


def test_the_uniformity_check_rejects_a_small_buffer():
    """The same check fails for a buffer of 2 over 4 records (so the test above can fail)."""
    assert uniformity_p(buffer_shuffle(4, 2, seed) for seed in range(2_400)) < 1e-6


def test_permutation_is_seeded_int64_and_independent_per_epoch():
    first = permutation(1_000, 3)
    assert first.dtype == np.int64 and sorted(first.tolist()) == list(range(1_000))
    assert np.array_equal(permutation(1_000, 3), first)
    assert np.array_equal(permutation(1_000, 3, epoch=0), first)
    assert not np.array_equal(permutation(1_000, 3, epoch=1), first)
    assert not np.array_equal(permutation(1_000, 4), first)
    assert abs(stats.spearmanr(first, permutation(1_000, 3, epoch=1)).statistic) < 0.15
    assert permutation(0, 1).shape == (0,)


def test_permutation_accepts_numpy_integers():
    expected = permutation(10, 3, 2)
    assert np.array_equal(permutation(np.int64(10), np.uint32(3), np.int8(2)), expected)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            (10, None),
            TypeError,
            r"^seed must be an int \(for example seed=0\), got None: every shuffle here is reproducible$",
        ),
        ((10, 1.0), TypeError, "seed must be an int"),
        ((10, -1), ValueError, "seed must be at least 0"),
        ((10.0, 1), TypeError, "num_records must be an int"),
        ((-1, 1), ValueError, "num_records must be at least 0"),
        ((10, 1, -1), ValueError, "epoch must be at least 0"),
        ((10, 1, None), TypeError, "epoch must be an int"),
    ],
)
def test_permutation_refuses_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        permutation(*args)


def test_dataset_follows_the_permutation_of_the_epochs_it_is_given(tmp_path):
    import tensorflow as tf

    files = write_sorted(tmp_path, 2_000)
    dataset = global_shuffle_dataset(files, seed=5, read_batch=256)
    assert dataset.element_spec == tf.TensorSpec([], tf.string)
    assert int(dataset.cardinality()) == 2_000  # known: Keras shows a total
    assert int(dataset.batch(256).cardinality()) == 8
    first, again = indices_of(dataset), indices_of(dataset)
    assert first.tolist() == again.tolist() == permutation(2_000, 5).tolist()  # not a pass count
    later = global_shuffle_dataset(files, seed=5, read_batch=256, epoch=1, epochs=2)
    assert int(later.cardinality()) == 4_000
    expected = np.concatenate([permutation(2_000, 5, epoch=1), permutation(2_000, 5, epoch=2)])
    assert indices_of(later).tolist() == expected.tolist()
    assert not np.array_equal(expected[:2_000], first)


def test_batches_of_records_come_in_the_same_order_with_their_count_known(tmp_path):
    files = write_sorted(tmp_path, 1_000)
    # read_batch: records per call into Python, rounded down to whole batches (at least one)
    for read_batch in [1, 255, 256, 300, 512, 1_000, 1_024, 5_000]:
        dataset = global_shuffle_dataset(files, seed=2, read_batch=read_batch, batch_size=256)
        assert int(dataset.cardinality()) == 4
        batches = [[RECORD.unpack(x)[0] for x in batch] for batch in dataset.as_numpy_iterator()]
        assert [len(b) for b in batches] == [256, 256, 256, 232]
        assert sum(batches, []) == permutation(1_000, 2).tolist()
    ones = global_shuffle_dataset(files, seed=2, batch_size=1)  # the smallest batch there is
    assert [len(batch) for batch in ones.take(3).as_numpy_iterator()] == [1, 1, 1]
    assert int(ones.cardinality()) == 1_000


def test_the_last_read_hands_on_exactly_the_batches_it_holds(tmp_path):
    # One read of 1,024 numbers makes four vectors: 768 records fill three (the fourth is
    # empty and must not become an empty batch); 769 leave one record for a fourth.
    for count in [768, 769]:
        (folder := tmp_path / str(count)).mkdir()
        files = write_sorted(folder, count, num_classes=1)
        dataset = global_shuffle_dataset(files, seed=4, read_batch=1_024, batch_size=256)
        batches = [[RECORD.unpack(x)[0] for x in b] for b in dataset.as_numpy_iterator()]
        assert [len(b) for b in batches] == [256, 256, 256] + [1] * (count - 768)
        assert sum(batches, []) == permutation(count, 4).tolist()
        assert int(dataset.cardinality()) == len(batches)


def test_batches_of_large_records_are_read_a_mebibyte_at_a_time(tmp_path, monkeypatch):
    records = [RECORD.pack(i, 0) + bytes(300_000) for i in range(11)]  # 3 records per MiB
    path = tmp_path / "large.tfrecord"
    write_records(path, records)
    slices = []
    monkeypatch.setattr(shuffle, "RecordView", lambda files: Spy(RecordView(files), slices))
    dataset = global_shuffle_dataset(path, seed=3, read_batch=1_024, batch_size=2)
    batches = [[RECORD.unpack(x[:16])[0] for x in b] for b in dataset.as_numpy_iterator()]
    assert [len(b) for b in batches] == [2, 2, 2, 2, 2, 1]
    assert sum(batches, []) == permutation(11, 3).tolist()
    assert sorted(slices) == [1, 2, 2, 2, 2, 2]  # whole batches; over 1 MiB only if one batch is
    records = [RECORD.pack(i, 0) + bytes(100_000) for i in range(23)]  # 10 records per MiB
    write_records(path := tmp_path / "smaller.tfrecord", records)
    slices.clear()
    dataset = global_shuffle_dataset(path, seed=3, read_batch=1_024, batch_size=2)
    assert sum(map(len, dataset.as_numpy_iterator())) == 23
    assert sorted(slices) == [1, 2, 10, 10]  # five whole batches a read; the last two alone


class Spy:
    """A RecordView that notes how many records each batched read asks for."""

    def __init__(self, view, sizes):
        self.view, self.sizes, self.paths = view, sizes, view.paths

    def __len__(self):
        return len(self.view)

    def __getitem__(self, ids):
        self.sizes.append(len(ids))
        return self.view[ids]


def test_read_batch_and_parallel_reads_do_not_change_the_order(tmp_path):
    files = write_sorted(tmp_path, 1_000)
    expected = permutation(1_000, 1).tolist()
    for read_batch, parallel_reads in [(7, None), (1_000, 1), (np.int64(64), np.int32(3))]:
        dataset = global_shuffle_dataset(files, 1, read_batch, parallel_reads=parallel_reads)
        assert indices_of(dataset).tolist() == expected


def test_dataset_of_sorted_records_has_no_order_left_and_balanced_labels(tmp_path):
    files = write_sorted(tmp_path, 7_000)
    pairs = [RECORD.unpack(x) for x in global_shuffle_dataset(files, seed=7).as_numpy_iterator()]
    indices, labels = np.array(pairs).T
    assert Counter(indices.tolist()) == Counter(range(7_000))  # every record exactly once
    assert abs(stats.spearmanr(np.arange(7_000), indices).statistic) < 4 / np.sqrt(7_000)
    assert stats.chisquare(np.bincount(labels[:5_000], minlength=10)).pvalue > 1e-3


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"seed": None}, TypeError, "seed must be an int"),
        ({"seed": 1, "read_batch": 0}, ValueError, "read_batch must be at least 1"),
        ({"seed": 1, "parallel_reads": 0}, ValueError, "parallel_reads must be at least 1"),
        ({"seed": 1, "batch_size": 0}, ValueError, "batch_size must be at least 1"),
        ({"seed": 1, "batch_size": "8"}, TypeError, "batch_size must be an int"),
        ({"seed": 1, "epoch": -1}, ValueError, "epoch must be at least 0"),
        ({"seed": 1, "epochs": 0}, ValueError, "epochs must be at least 1"),
        ({"seed": 1, "epochs": 1.5}, TypeError, "epochs must be an int"),
        ({"seed": 1, "position": -1}, ValueError, "position must be at least 0"),
        ({"seed": 1, "position": 11}, ValueError, "position must be at most 10"),
        ({"seed": 1, "num_shards": 3, "position": 12}, ValueError, "position must be at most 9"),
        (
            {"seed": 1, "num_shards": 2, "position": 5},
            ValueError,
            "a multiple of the global batch 2",
        ),
        (
            {"seed": 1, "num_shards": 2, "batch_size": 2, "position": 2},
            ValueError,
            r"multiple of the global batch 4 \(num_shards x batch_size\)",
        ),
        ({"seed": 1, "num_shards": 0}, ValueError, "num_shards must be at least 1"),
        ({"seed": 1, "num_shards": 2, "shard_index": 2}, ValueError, "shard_index must be below 2"),
        ({"seed": 1, "num_shards": 11, "epochs": None}, ValueError, "an endless stream needs"),
        ({"seed": 1, "input_context": "x", "num_shards": 2}, ValueError, "input_context or"),
    ],
)
def test_dataset_refuses_bad_arguments(tmp_path, kwargs, error, message):
    files = write_sorted(tmp_path, 10, num_files=1)
    with pytest.raises(error, match=message):
        global_shuffle_dataset(files, **kwargs)


@pytest.mark.parametrize(("compression", "suffix"), [("GZIP", ".gz"), ("ZLIB", ".zz")])
def test_compressed_files_are_refused_naming_the_file(tmp_path, compression, suffix):
    path = tmp_path / f"data.tfrecord{suffix}"
    write_records(path, [b"x"] * 3, compression=compression)
    with pytest.raises(ValueError, match=rf"data\.tfrecord\{suffix}: a {compression}-compressed"):
        global_shuffle_dataset(path, seed=0)


def test_dataset_reports_a_damaged_record(tmp_path):
    import tensorflow as tf

    path = tmp_path / "data.tfrecord"
    write_records(path, [b"abc"] * 10)
    data = bytearray(path.read_bytes())
    data[5 * 19 + 12] ^= 1  # first payload byte of record 5 (records are 12 + 3 + 4 bytes)
    path.write_bytes(bytes(data))  # before the view opens: a write under it is named as one
    dataset = global_shuffle_dataset(path, seed=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"record 5 at byte 95: payload CRC"):
        list(dataset)


def test_import_does_not_import_tensorflow():
    code = "import sys, helpers.shuffle; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


class NumberReader:
    """Stands in for RecordView: record i is b"<i>"; reading the slice that holds ``slow``
    takes 0.3 s, so a map that did not keep the order would hand out later slices first."""

    def __init__(self, size, slow=None):
        self.size, self.slow, self.sizes = size, slow, []

    def __call__(self, files):
        return self

    def __len__(self):
        return self.size

    def __getitem__(self, ids):
        self.sizes.append(len(ids))
        if self.slow is not None and self.slow in ids:
            time.sleep(0.3)
        return [str(i).encode() for i in ids]


def test_parallel_reads_keep_the_order_when_an_earlier_slice_is_slower(monkeypatch):
    """Even in a pipeline whose options allow any order (deterministic=False)."""
    import tensorflow as tf

    expected = permutation(8, 4).tolist()
    monkeypatch.setattr(shuffle, "RecordView", NumberReader(8, slow=expected[0]))
    options = tf.data.Options()
    options.deterministic = False
    for unordered in [False, True]:
        dataset = global_shuffle_dataset("unused.tfrecord", 4, read_batch=1, parallel_reads=4)
        dataset = dataset.with_options(options) if unordered else dataset
        assert [int(r) for r in dataset.as_numpy_iterator()] == expected


class MeetingReader(NumberReader):
    """Each read waits until another read has started too: it fails if reads run one by one."""

    def __init__(self, size):
        super().__init__(size)
        self.meeting = threading.Barrier(2, timeout=10)

    def __getitem__(self, ids):
        self.meeting.wait()  # threading.BrokenBarrierError after 10 s alone
        return super().__getitem__(ids)


class OneAtATimeReader(NumberReader):
    """Fails a read that starts while another one runs."""

    def __init__(self, size):
        super().__init__(size)
        self.busy = threading.Lock()

    def __getitem__(self, ids):
        if not self.busy.acquire(blocking=False):
            raise RuntimeError("two reads at once")
        try:
            time.sleep(0.05)  # time for a second read to start, were one allowed
            return super().__getitem__(ids)
        finally:
            self.busy.release()


def test_parallel_reads_sets_how_many_slices_are_read_at_once(monkeypatch):
    """1: one read at a time (tf.data would otherwise parallelize the map), 2: two at once."""
    for parallel_reads, reader in [(1, OneAtATimeReader(8)), (2, MeetingReader(8))]:
        monkeypatch.setattr(shuffle, "RecordView", reader)
        dataset = global_shuffle_dataset("unused.tfrecord", 4, 1, parallel_reads=parallel_reads)
        assert [int(r) for r in dataset.as_numpy_iterator()] == permutation(8, 4).tolist()


def test_by_default_a_read_takes_1024_record_numbers(monkeypatch):
    monkeypatch.setattr(shuffle, "RecordView", reader := NumberReader(1_025))
    dataset = global_shuffle_dataset("unused.tfrecord", 0)
    assert [int(r) for r in dataset.as_numpy_iterator()] == permutation(1_025, 0).tolist()
    assert sorted(reader.sizes) == [1, 1_024]  # the two reads may run in either order


def test_epoch_numbers_beyond_float32_precision_reach_the_order_exactly(monkeypatch):
    """Epochs 2**24 + 1 and 2**24 + 2 are not exact in float32: the epoch must stay int64."""
    monkeypatch.setattr(shuffle, "RecordView", NumberReader(50))
    dataset = global_shuffle_dataset("unused.tfrecord", 0, epoch=2**24 + 1, epochs=2)
    expected = [*permutation(50, 0, 2**24 + 1), *permutation(50, 0, 2**24 + 2)]
    assert [int(r) for r in dataset.as_numpy_iterator()] == expected
    assert permutation(50, 0, 2**24 + 1).tolist() != permutation(50, 0, 2**24).tolist()


def test_record_numbers_beyond_float32_precision_reach_the_reader_exactly(monkeypatch):
    """Numbers over 2**24 are not exact in float32: the id pipeline must stay int64."""
    n = 2**40 + 7
    monkeypatch.setattr(shuffle, "RecordView", NumberReader(n))
    dataset = global_shuffle_dataset("unused.tfrecord", 0, read_batch=3)
    got = [int(r) for r in dataset.take(9).as_numpy_iterator()]
    expected = EpochOrder(n, 0)[:9].tolist()
    assert got == expected and min(expected) > 2**24  # each of them inexact in float32
