"""helpers.shuffle.global_shuffle_dataset resumes exactly in a new process (from epoch= and
position=, and from a tf.train.Checkpoint of its iterator), splits epochs into shards read by
separate processes, and runs on across epochs, each in EpochOrder's order."""

import json
import os
import struct
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from helpers._tensorflow import QUIET_ENVIRONMENT
from helpers.records import write_records
from helpers.shuffle import EpochOrder, global_shuffle_dataset

ROOT = Path(__file__).resolve().parents[1]
RECORD = struct.Struct("<q")  # the record's number, then padding to the record size


def write_numbered(folder, num_records, size=8, num_files=3):
    """Records 0 .. n - 1 in ``num_files`` files, each its number padded to ``size`` bytes."""
    bounds = np.linspace(0, num_records, num_files + 1).astype(int)
    paths = []
    for f in range(num_files):
        paths.append(folder / f"numbered-{f}.tfrecord")
        numbers = range(bounds[f], bounds[f + 1])
        write_records(paths[-1], (RECORD.pack(i) + bytes(size - 8) for i in numbers))
    return [str(p) for p in paths]


def numbers(element):
    """The record numbers in a dataset element (one record or a batch of them)."""
    records = [element] if isinstance(element, bytes) else list(element)  # not NumPy's S type
    return [RECORD.unpack(r[:8])[0] for r in records]


def in_new_process(code, **values):
    """Run ``code`` in a fresh Python with TensorFlow quiet; ``values`` are its globals (JSON);
    it prints its answer as JSON on its last line."""
    setup = "import json, sys\nglobals().update(json.loads(sys.argv[1]))\n"
    env = {**os.environ, **QUIET_ENVIRONMENT, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", setup + textwrap.dedent(code), json.dumps(values)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3_000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


DATASET = """
import struct
from helpers.shuffle import global_shuffle_dataset
dataset = global_shuffle_dataset(files, seed, **kwargs)
def numbers(element):
    return [struct.unpack("<q", r[:8])[0] for r in ([element] if isinstance(element, bytes) else element)]
"""
READ = DATASET + "batches = [numbers(b) for b in dataset.as_numpy_iterator()]\n"


def expected_batches(n, seed, epochs, batch_size, first_epoch=0, position=0, **shards):
    """The batches EpochOrder says: each epoch's order cut into batches, the first from position."""
    batches = []
    for epoch in range(first_epoch, first_epoch + epochs):
        order = EpochOrder(n, seed, epoch, batch_size=batch_size, **shards)[:]
        order = order[position:] if epoch == first_epoch else order
        batches += [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    return batches


def test_resume_from_epoch_and_position_in_a_new_process_equals_the_whole_stream(tmp_path):
    files = write_numbered(tmp_path, 1_000)
    whole = expected_batches(1_000, 3, 3, 32)
    kwargs = {"batch_size": 32, "read_batch": 100, "epochs": 3}
    assert (
        in_new_process(READ + "print(json.dumps(batches))", files=files, seed=3, kwargs=kwargs)
        == whole
    )
    # Stopped after 40 batches: 31 of epoch 0 (1,000 records make 32 batches), 9 of epoch 1.
    kwargs = {"batch_size": 32, "read_batch": 100, "epoch": 1, "position": 9 * 32, "epochs": 2}
    rest = in_new_process(READ + "print(json.dumps(batches))", files=files, seed=3, kwargs=kwargs)
    assert rest == whole[32 + 9 :]
    unbatched = {"epoch": 2, "position": 999}  # the last record of epoch 2
    last = in_new_process(
        READ + "print(json.dumps(batches))", files=files, seed=3, kwargs=unbatched
    )
    assert last == [[whole[-1][-1]]]


SAVE = (
    DATASET
    + """
import tensorflow as tf
iterator = iter(dataset)
for _ in range(steps):
    next(iterator)
path = tf.train.Checkpoint(iterator=iterator).save(prefix)
print(json.dumps(path))
"""
)

RESTORE = (
    DATASET
    + """
import tensorflow as tf
iterator = iter(dataset)
tf.train.Checkpoint(iterator=iterator).restore(path)
import itertools
rest = [numbers(b.numpy()) for b in itertools.islice(iterator, limit)]
print(json.dumps(rest))
"""
)


@pytest.mark.parametrize(
    ("n", "size", "kwargs", "steps"),
    [
        (1_000, 8, {}, 333),  # records one by one, stopped inside a read of 1,024
        (1_000, 8, {"batch_size": 1, "epochs": 2}, 1_500),  # in the second epoch
        (3_000, 10_000, {"batch_size": 32, "epochs": None}, 130),  # endless, 10 KB records
    ],
)
def test_a_checkpoint_of_the_iterator_resumes_exactly_in_a_new_process(
    tmp_path, n, size, kwargs, steps
):
    files = write_numbered(tmp_path, n, size)
    epochs = kwargs.get("epochs", 1) or 5  # endless: five epochs are more than it reads
    whole = expected_batches(n, 11, epochs, kwargs.get("batch_size", 1))  # unbatched: [record]
    prefix = str(tmp_path / "checkpoints" / "ckpt")
    path = in_new_process(SAVE, files=files, seed=11, kwargs=kwargs, steps=steps, prefix=prefix)
    saved = sum(p.stat().st_size for p in (tmp_path / "checkpoints").iterdir())
    assert saved <= 4_096, f"{saved} bytes of checkpoint"
    limit = 200
    rest = in_new_process(RESTORE, files=files, seed=11, kwargs=kwargs, path=path, limit=limit)
    assert rest == whole[steps : steps + limit]


SHARE = (
    READ
    + """
print(json.dumps(batches))
"""
)


@pytest.mark.parametrize("num_shards", [2, 3])
def test_processes_read_disjoint_equal_shares_through_tf_data(tmp_path, num_shards):
    n, batch_size = 1_000, 16
    files = write_numbered(tmp_path, n)
    commands = []
    for k in range(num_shards):  # started together: separate processes at once
        kwargs = {"batch_size": batch_size, "num_shards": num_shards, "shard_index": k}
        setup = "import json, sys\nglobals().update(json.loads(sys.argv[1]))\n"
        values = json.dumps({"files": files, "seed": 2, "kwargs": kwargs})
        env = {**os.environ, **QUIET_ENVIRONMENT, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-c", setup + textwrap.dedent(SHARE), values]
        commands.append(subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=ROOT))
    shares = []
    for process in commands:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        shares.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert len({len(batches) for batches in shares}) == 1  # the same number of steps
    assert {len(b) for batches in shares for b in batches} == {batch_size}
    read = [x for batches in shares for batch in batches for x in batch]
    share = n // (num_shards * batch_size) * batch_size
    assert len(read) == len(set(read)) == num_shards * share  # disjoint
    dropped = n - num_shards * share
    assert (
        dropped == EpochOrder(n, 2, 0, num_shards, 0, batch_size).dropped < num_shards * batch_size
    )
    global_batches = [sum((share[j] for share in shares), []) for j in range(len(shares[0]))]
    whole = EpochOrder(n, 2)[: num_shards * share].tolist()  # the epoch's order: global batches
    assert sum(global_batches, []) == whole


def test_an_input_context_gives_the_shard(tmp_path):
    import tensorflow as tf

    files = write_numbered(tmp_path, 500)
    context = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=1)
    dataset = global_shuffle_dataset(files, 4, batch_size=8, input_context=context)
    assert int(dataset.cardinality()) == 500 // 24
    got = [numbers(b) for b in dataset.as_numpy_iterator()]
    assert got == expected_batches(500, 4, 1, 8, num_shards=3, shard_index=1)


def test_an_endless_stream_gives_each_epoch_its_own_order(tmp_path):
    import tensorflow as tf

    files = write_numbered(tmp_path, 100)
    dataset = global_shuffle_dataset(files, 6, batch_size=30, epochs=None, epoch=2)
    assert int(dataset.cardinality()) == tf.data.INFINITE_CARDINALITY
    got = [numbers(b) for b in dataset.take(4 * 4).as_numpy_iterator()]  # 4 batches an epoch
    assert [len(b) for b in got] == [30, 30, 30, 10] * 4  # batches end with their epoch
    assert got == expected_batches(100, 6, 4, 30, first_epoch=2)
    epochs = [sum(got[4 * k : 4 * k + 4], []) for k in range(4)]
    assert all(sorted(e) == list(range(100)) for e in epochs)
    assert len({tuple(e) for e in epochs}) == 4  # a new permutation each epoch


def test_speed_mode_reads_every_record_and_resumes_with_the_same_records(tmp_path):
    """deterministic=False: the epoch holds every record once; a checkpoint holds the reads in
    flight, and the restored iterator reads the rest of the same records (the order may differ)."""
    import tensorflow as tf

    files = write_numbered(tmp_path, 2_000)
    make = lambda: global_shuffle_dataset(  # noqa: E731
        files, 8, read_batch=16, parallel_reads=4, deterministic=False, epochs=2
    )
    everything = [numbers(r)[0] for r in make().as_numpy_iterator()]
    assert Counter(everything) == Counter(list(range(2_000)) * 2)
    iterator = iter(make())
    head = [numbers(next(iterator).numpy())[0] for _ in range(777)]
    path = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(path)
    rest = [numbers(r.numpy())[0] for r in restored]
    assert Counter(head + rest) == Counter(list(range(2_000)) * 2)


def global_batches(files, seed, num_shards, global_batch, position=0, steps=None):
    """Global batch after global batch: each shard's batch in turn, shard 0 first, read by
    ``global_shuffle_dataset`` with ``num_shards`` shards from the epoch's ``position``."""
    size = global_batch // num_shards
    shards = [
        global_shuffle_dataset(
            files, seed, batch_size=size, position=position, num_shards=num_shards, shard_index=k
        )
        for k in range(num_shards)
    ]
    streams = [
        [numbers(b) for b in shard.take(steps or -1).as_numpy_iterator()] for shard in shards
    ]
    return [sum(parts, []) for parts in zip(*streams, strict=True)]


def test_a_job_preempted_at_8_shards_resumes_at_4_or_1_record_for_record(tmp_path):
    """Elastic shares: the same global batches at 1, 2, 4 and 8 shards, and a resume from
    ``(seed, epoch, position)`` at another number of shards continues the same epoch."""
    n, global_batch, done = 1_000, 64, 5  # preempted after 5 global batches
    files = write_numbered(tmp_path, n)
    whole = [order.tolist() for order in np.split(EpochOrder(n, 6)[: n // 64 * 64], n // 64)]
    for num_shards in (2, 4, 8):
        assert global_batches(files, 6, num_shards, global_batch) == whole
    first = global_batches(files, 6, 8, global_batch, steps=done)
    for num_shards in (4, 1):
        rest = global_batches(files, 6, num_shards, global_batch, position=done * global_batch)
        assert first + rest[: len(whole) - done] == whole
