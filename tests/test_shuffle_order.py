"""helpers.shuffle.EpochOrder: a computed order that is a permutation, as uniform as an exact one
by the measures of notebooks 07 and 17, read by position, split into equal shards."""

import itertools
import multiprocessing
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from helpers.shuffle import EpochOrder, permutation


def exact(n, seed):
    """The reference: NumPy's exact uniform permutation."""
    return np.random.default_rng(seed).permutation(n)


def rotation(n, seed):
    """A bad shuffle with uniform marginals: every record moves by the same random offset."""
    return (np.arange(n) + np.random.default_rng(seed).integers(n)) % n


# --- It is a bijection, computed per position ------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 10, 16, 17, 100, 1_000, 65_536, 70_000])
def test_every_record_exactly_once_at_every_size(n):
    for seed, epoch in [(0, 0), (1, 0), (1, 5), (2**40, 3)]:
        order = EpochOrder(n, seed, epoch)[:]
        assert order.dtype == np.int64
        assert sorted(order.tolist()) == list(range(n))


def test_huge_orders_are_computed_without_an_array_of_their_size():
    for n in [2**31 + 5, 10**12, 2**63 - 1]:
        order = EpochOrder(n, 7)
        some = order[np.arange(0, 10_000)]
        assert len(order) == n and len(set(some.tolist())) == 10_000
        assert ((0 <= some) & (some < n)).all()
        assert order[-1] == order[n - 1] and 0 <= order[-1] < n


def test_slices_arrays_and_negative_positions_agree_with_the_whole_order():
    order, whole = EpochOrder(1_000, 3, 2), permutation(1_000, 3, 2)
    assert len(order) == 1_000
    assert order[0] == whole[0] and isinstance(order[0], int)
    assert order[-1] == whole[-1] and order[np.int64(-1000)] == whole[0]
    for key in [slice(10, 20), slice(None, None, -3), slice(990, 2_000), slice(5, 5)]:
        assert order[key].tolist() == whole[key].tolist()
    positions = np.array([[-1, 0], [-3, 999]])
    kept = positions.copy()
    assert order[positions].tolist() == whole[positions].tolist()
    assert np.array_equal(positions, kept)  # the caller's array is not rewritten
    assert order[np.array([], dtype=np.int64)].shape == (0,)
    assert order[np.array([5], dtype=np.uint32)].tolist() == [whole[5]]
    assert list(order)[:5] == whole[:5].tolist()  # a Sequence: iteration works
    assert np.array_equal(permutation(1_000, 3, 2), whole)  # the same every time


@pytest.mark.parametrize("n, num_shards", [(70_000, 1), (2**14 + 3, 1), (40_000, 3), (100, 1)])
def test_a_small_order_keeps_what_it_computed_and_gives_the_same_numbers(
    monkeypatch, n, num_shards
):
    """Orders up to 2**20 positions keep their computed blocks; the numbers are those computed
    position by position (the path of larger orders), in any order of access."""
    from helpers import shuffle

    order = EpochOrder(n, 5, 1, num_shards, num_shards - 1, 64)
    rng = np.random.default_rng(0)
    keys = [slice(0, 256), rng.integers(len(order), size=500), slice(len(order) - 300, None)]
    keys += [slice(2**14 - 10, 2**14 + 10), slice(None)]
    got = [order[key] for key in keys]  # blocks kept as these are read
    assert order._blocks_kept.all()  # the last key read everything
    monkeypatch.setattr(shuffle, "_KEPT_ORDER", 0)  # every order is computed afresh now
    fresh = EpochOrder(n, 5, 1, num_shards, num_shards - 1, 64)
    assert fresh._kept is None
    for key, kept in zip(keys, got, strict=True):
        assert np.array_equal(kept, fresh[key]), key
    assert sorted(got[-1].tolist()) == sorted(set(got[-1].tolist()))


def test_a_large_order_keeps_nothing_and_a_pickled_order_stays_small():
    import pickle

    large = EpochOrder(2**20 + 1, 1)
    large[0:1_000]
    assert large._kept is None and large._blocks_kept is None
    small = EpochOrder(70_000, 1)
    before = len(pickle.dumps(small))
    whole = small[:]
    assert len(pickle.dumps(small)) == before < 1_000  # what it keeps is not pickled
    copy = pickle.loads(pickle.dumps(small))
    assert not copy._blocks_kept.any() and np.array_equal(copy[:], whole)


@pytest.mark.parametrize("key", [[], (), range(0), [[]]])
def test_no_positions_give_no_record_numbers(key):
    """NumPy makes an empty list float: it is still an empty list of positions."""
    for order in [EpochOrder(10, 1), EpochOrder(0, 1)]:
        got = order[key]
        assert got.dtype == np.int64 and got.shape == np.shape(key)


def test_an_empty_array_of_another_kind_is_still_refused():
    with pytest.raises(TypeError, match="a position, a slice or an array of positions"):
        EpochOrder(10, 1)[np.array([], dtype=float)]


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (10, IndexError, "position out of range: the order holds 10 records"),
        (-11, IndexError, "position out of range"),
        (np.array([0, 10]), IndexError, "position out of range"),
        (1.0, TypeError, "a position, a slice or an array of positions"),
        (True, TypeError, "a position, a slice or an array of positions"),
        (np.array([0.5]), TypeError, "a position, a slice or an array of positions"),
        ("1", TypeError, "a position, a slice or an array of positions"),
    ],
)
def test_bad_positions_are_refused(key, error, message):
    with pytest.raises(error, match=message):
        EpochOrder(10, 1)[key]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((10, None), TypeError, "seed must be an int"),
        ((10, -1), ValueError, "seed must be at least 0"),
        ((10.0, 1), TypeError, "num_records must be an int"),
        ((-1, 1), ValueError, "num_records must be at least 0"),
        ((10, 1, -1), ValueError, "epoch must be at least 0"),
        ((10, 1, 0, 0), ValueError, "num_shards must be at least 1"),
        ((10, 1, 0, 2, -1), ValueError, "shard_index must be at least 0"),
        ((10, 1, 0, 2, 2), ValueError, "shard_index must be below 2, got 2"),
        ((10, 1, 0, 2, 0, 0), ValueError, "batch_size must be at least 1"),
        ((10, 1, 0, 2, 0, None), TypeError, "batch_size must be an int"),
        ((10, 1, 0, True), TypeError, "num_shards must be an int"),
    ],
)
def test_bad_arguments_are_refused(args, error, message):
    with pytest.raises(error, match=message):
        EpochOrder(*args)


# --- Shards -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "num_shards", "batch_size", "share", "dropped"),
    [
        (1_000, 1, 32, 1_000, 0),  # one shard: nothing dropped, whatever the batch
        (1_000, 2, 32, 480, 40),  # 15 batches each
        (1_000, 3, 1, 333, 1),
        (1_000, 8, 32, 96, 232),  # at most 8 * 32 - 1
        (1_000, 8, 125, 125, 0),
        (10, 3, 4, 0, 10),  # too few for one batch each: all dropped
    ],
)
def test_shards_split_the_epoch_into_equal_whole_batches(n, num_shards, batch_size, share, dropped):
    shards = [EpochOrder(n, 4, 1, num_shards, k, batch_size) for k in range(num_shards)]
    assert [len(s) for s in shards] == [share] * num_shards
    assert all(s.dropped == dropped for s in shards) and dropped < num_shards * batch_size
    whole = permutation(n, 4, 1)
    width = num_shards * batch_size  # a global batch: each shard's batch, shard 0 first
    for j in range(0, share, batch_size):
        together = np.concatenate([s[j : j + batch_size] for s in shards])
        first = j // batch_size * width
        assert together.tolist() == whole[first : first + width].tolist()


@pytest.mark.parametrize("n", [1_000, 4_099])
def test_global_batches_hold_the_same_records_for_1_2_4_and_8_shards(n):
    """Elastic shares: at a fixed global batch, the number of shards changes nothing in it."""
    global_batch = 64
    batches = {}
    for num_shards in (1, 2, 4, 8):
        size = global_batch // num_shards
        shards = [EpochOrder(n, 7, 3, num_shards, k, size) for k in range(num_shards)]
        steps = -(-len(shards[0]) // size)  # one shard: a last, shorter batch
        batches[num_shards] = [
            np.concatenate([s[j * size : (j + 1) * size] for s in shards]).tolist()
            for j in range(steps)
        ]
    full = n // global_batch
    assert [len(b) for b in batches.values()] == [-(-n // global_batch), full, full, full]
    for num_shards in (2, 4, 8):
        assert batches[num_shards] == batches[1][:full]


def test_the_shards_layout_check_fails_on_contiguous_blocks():
    """The global-batch check above is not vacuous: contiguous blocks per shard fail it."""
    n, num_shards, size = 1_000, 4, 16
    whole = permutation(n, 7, 3)
    share = n // (num_shards * size) * size
    blocks = [whole[k * share : (k + 1) * share] for k in range(num_shards)]
    first_global = np.concatenate([b[:size] for b in blocks])
    assert first_global.tolist() != whole[: num_shards * size].tolist()


def test_the_dropped_records_change_every_epoch():
    dropped = [set(permutation(1_000, 4, epoch)[-40:].tolist()) for epoch in range(3)]
    for epoch in range(3):
        shards = [EpochOrder(1_000, 4, epoch, 2, k, 32)[:] for k in range(2)]
        assert set(range(1_000)) - set(np.concatenate(shards).tolist()) == dropped[epoch]
    assert dropped[0] != dropped[1] != dropped[2]


def read_share(args):
    """A worker process: the record numbers its shard reads, in batches."""
    n, seed, epoch, num_shards, shard_index, batch_size = args
    order = EpochOrder(n, seed, epoch, num_shards, shard_index, batch_size)
    return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]


@pytest.mark.parametrize("num_shards", [2, 3, 8])
def test_worker_processes_read_disjoint_equal_shares_of_the_epoch(num_shards):
    n, batch_size = 10_007, 16
    jobs = [(n, 9, 2, num_shards, k, batch_size) for k in range(num_shards)]
    with multiprocessing.get_context("spawn").Pool(min(num_shards, 4)) as pool:
        shares = pool.map(read_share, jobs)
    assert len({len(batches) for batches in shares}) == 1  # the same number of steps
    assert all(len(b) == batch_size for batches in shares for b in batches)
    read = [number for batches in shares for batch in batches for number in batch]
    assert len(read) == len(set(read))  # disjoint
    remainder = n - num_shards * (n // (num_shards * batch_size)) * batch_size
    assert len(read) == n - remainder and remainder < num_shards * batch_size
    assert set(permutation(n, 9, 2)[: len(read)].tolist()) == set(read)


# --- As uniform as an exact permutation ---------------------------------------------------


def uniformity_p(orders, n):
    """Chi-square p of the counts of every order of n items against equal counts."""
    counts = Counter(tuple(int(x) for x in order) for order in orders)
    return stats.chisquare([counts.get(p, 0) for p in itertools.permutations(range(n))]).pvalue


@pytest.mark.parametrize(("n", "each"), [(2, 100), (3, 100), (4, 100), (5, 100), (6, 20)])
def test_every_order_of_a_few_records_is_equally_likely(n, each):
    """Each of the n! orders about ``each`` times, over seeds and over epochs (with 8 Feistel
    rounds instead of 16, 5 and 6 records fail: p 3e-26 and 0)."""
    count = each * len(list(itertools.permutations(range(n))))
    assert uniformity_p([EpochOrder(n, seed)[:] for seed in range(count)], n) > 1e-3
    assert uniformity_p([EpochOrder(n, 5, epoch)[:] for epoch in range(count)], n) > 1e-3
    if n > 2:  # the check can fail: of n! orders a rotation makes n
        assert uniformity_p([rotation(n, seed) for seed in range(count)], n) < 1e-6


def position_p(make, n, seeds=3_000):
    """Chi-square p of how often each record lands at each position (n x n counts)."""
    counts = np.zeros((n, n))
    for seed in range(seeds):
        counts[np.arange(n), make(n, seed)] += 1
    return stats.chisquare(counts.ravel()).pvalue


def pair_p(make, n, seeds=3_000):
    """Chi-square p of the (first, second) pairs of records: n * (n - 1) equally likely."""
    counts = np.zeros((n, n))
    for seed in range(seeds):
        first, second = make(n, seed)[:2]
        counts[first, second] += 1
    return stats.chisquare(counts[~np.eye(n, dtype=bool)]).pvalue


def computed(n, seed):
    return EpochOrder(n, seed)[:]


@pytest.mark.parametrize("n", [10, 100])
def test_each_record_lands_anywhere_and_pairs_are_independent(n):
    assert position_p(computed, n) > 1e-3 and position_p(exact, n) > 1e-3
    assert pair_p(computed, n) > 1e-3 and pair_p(exact, n) > 1e-3
    assert pair_p(rotation, n) < 1e-6  # its marginals are uniform, its pairs are not


def parity(order):
    """0 for an even permutation, 1 for an odd one (from its cycles)."""
    seen, swaps = np.zeros(len(order), bool), 0
    for start in range(len(order)):
        length, at = 0, start
        while not seen[at]:
            seen[at], at, length = True, order[at], length + 1
        swaps += max(length - 1, 0)
    return swaps % 2


@pytest.mark.parametrize("n", [16, 64])
def test_odd_and_even_permutations_are_equally_likely(n):
    """A Feistel network over 4 or 6 bits alone makes only even permutations of 16 or 64."""
    odd = sum(parity(EpochOrder(n, seed)[:]) for seed in range(1_000))
    assert stats.binomtest(odd, 1_000).pvalue > 1e-3


def label_p(labels, classes, first):
    """Notebook 07's finite-population chi-square p of the label counts among the first outputs."""
    counts = np.bincount(labels[:first], minlength=classes)
    factor = (len(labels) - first) / (len(labels) - 1)  # drawn without replacement
    return stats.chi2.sf(stats.chisquare(counts).statistic / factor, df=classes - 1)


@pytest.mark.parametrize(("n", "seeds"), [(1_000, 400), (70_000, 200)])
def test_label_counts_of_sorted_records_pass_the_ks_check_over_seeds(n, seeds):
    """Records label-sorted into 10 classes: over seeds, the corrected chi-square p-values of the
    first 5/7 are uniform for the computed order as for the exact one (notebook 07's check)."""
    first, size = n * 5 // 7, n // 10
    for make in (computed, exact):
        p_values = [label_p(make(n, seed) // size, 10, first) for seed in range(seeds)]
        assert stats.kstest(p_values, "uniform").pvalue >= 0.01, make.__name__
    biased = [label_p(rotation(n, s) // size, 10, first) for s in range(seeds)]
    assert stats.kstest(biased, "uniform").pvalue < 0.01


def labels_per_batch(labels, batch=32):
    batches = np.sort(labels[: len(labels) // batch * batch].reshape(-1, batch), axis=1)
    return 1 + (np.diff(batches, axis=1) != 0).sum(axis=1).mean()


def test_no_order_left_and_every_batch_mixes_the_labels():
    """Notebook 17's measures on 70,000 label-sorted records: rank correlation about 0, about
    9.66 of 10 labels in a batch of 32 (10 * (1 - 0.9 ** 32) drawing with replacement)."""
    n = 70_000
    for seed in range(3):
        order = EpochOrder(n, seed)[:]
        assert abs(stats.spearmanr(np.arange(n), order).statistic) < 4 / np.sqrt(n)
        fair = labels_per_batch(exact(n, seed) // 7_000)
        assert abs(labels_per_batch(order // 7_000) - fair) < 0.06
        assert abs(fair - 10 * (1 - 0.9**32)) < 0.06
    assert labels_per_batch(rotation(n, 0) // 7_000) < 1.1  # the check can fail


def test_epochs_and_seeds_give_unrelated_orders():
    orders = [EpochOrder(10_000, s, e)[:] for s, e in [(0, 0), (0, 1), (1, 0), (2**40, 0)]]
    for a, b in itertools.combinations(orders, 2):
        assert abs(stats.spearmanr(a, b).statistic) < 4 / np.sqrt(10_000)


def test_quality_matches_tensorflows_index_shuffle():
    """tf.random.experimental.index_shuffle, the reference for Grain's shuffle, passes the pair
    test with random seeds as the computed order does with seeds 0, 1, 2... (quality, not
    equality: the functions differ); with seeds [s, 0] for s = 0, 1, 2... it fails it."""
    import tensorflow as tf

    def tensorflow(n, seed, fresh=True):
        key = np.random.default_rng(seed).integers(2**31, size=2) if fresh else [seed, 0]
        return tf.random.experimental.index_shuffle(tf.range(n, dtype=tf.int64), key, n - 1)

    assert sorted(tensorflow(100, 1).numpy().tolist()) == list(range(100))
    assert pair_p(lambda n, seed: tensorflow(n, seed).numpy(), 10) > 1e-3
    assert pair_p(computed, 10) > 1e-3
    assert pair_p(lambda n, seed: tensorflow(n, seed, fresh=False).numpy(), 10) < 1e-6
