"""helpers.shuffle.global_shuffle_dataset feeds a real distributed client: Keras ``fit`` under
``tf.distribute.MultiWorkerMirroredStrategy``, two worker processes on localhost (CPU only,
tests/distributed_worker.py), each given its share of one epoch by the ``InputContext`` that
``distribute_datasets_from_function`` passes. The shares the training steps saw are disjoint,
equal, and together the epoch minus ``EpochOrder.dropped``; both workers run the same steps.

The checks hold whatever layout the shares have inside the epoch (a block per worker, or
whole batches dealt in turn): they compare sets and counts, never positions."""

import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers._tensorflow import QUIET_ENVIRONMENT
from helpers.records import write_records
from helpers.shuffle import EpochOrder

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "distributed_worker.py"
RECORD = struct.Struct("<qq")  # (record number, label), as distributed_worker.parse reads it
NUM_RECORDS = 133  # 8 global batches of 16, and 5 records no worker gets
GLOBAL_BATCH = 16
NUM_WORKERS = 2
SEED = 7
DEADLINE = 120  # seconds for the whole cluster; it takes about 15-30 s


def write_labelled(folder: Path) -> list[str]:
    """Records 0 .. NUM_RECORDS - 1 in 3 files, label-sorted (label = number * 10 // n)."""
    bounds = np.linspace(0, NUM_RECORDS, 4).astype(int)
    paths = []
    for f in range(3):
        paths.append(str(folder / f"labelled-{f}.tfrecord"))
        numbers = range(bounds[f], bounds[f + 1])
        write_records(paths[-1], (RECORD.pack(i, i * 10 // NUM_RECORDS) for i in numbers))
    return paths


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free a moment ago (bound together, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def tails(logs: list[Path]) -> str:
    """The end of each worker's stderr, for a failure message."""
    return "\n".join(
        f"--- worker {k} stderr:\n{log.read_text()[-3_000:]}" for k, log in enumerate(logs)
    )


def wait_for_all(processes: list[subprocess.Popen], logs: list[Path]) -> None:
    """Waits until every worker ended well. A worker that fails, or a cluster still running at
    the deadline, has every worker killed and fails the test with their stderr: a worker whose
    peer died would otherwise wait for it in a collective for ever."""
    deadline = time.monotonic() + DEADLINE
    while any(p.poll() is None for p in processes):
        failed = [k for k, p in enumerate(processes) if p.returncode not in (None, 0)]
        if failed or time.monotonic() > deadline:
            for p in processes:
                p.kill()
                p.wait()
            why = f"worker {failed[0]} failed" if failed else f"still running after {DEADLINE} s"
            pytest.fail(f"{why}\n{tails(logs)}")
        time.sleep(0.1)
    failed = [k for k, p in enumerate(processes) if p.returncode != 0]
    assert not failed, f"worker {failed} failed\n{tails(logs)}"


def run_cluster(folder: Path, files: list[str]) -> list[dict]:
    """Starts the workers, waits for them, and returns what each one wrote."""
    cluster = {"worker": [f"localhost:{port}" for port in free_ports(NUM_WORKERS)]}
    settings = ["--num-records", str(NUM_RECORDS), "--global-batch", str(GLOBAL_BATCH)]
    processes = []
    logs = []
    for index in range(NUM_WORKERS):
        config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        env = {**os.environ, **QUIET_ENVIRONMENT, "PYTHONPATH": str(ROOT)}
        env |= {"TF_CONFIG": json.dumps(config), "CUDA_VISIBLE_DEVICES": ""}
        out = folder / f"worker-{index}.json"
        command = [sys.executable, str(WORKER), str(out), *files, *settings, "--seed", str(SEED)]
        logs.append(folder / f"worker-{index}.stderr")
        with logs[-1].open("w") as log:  # the child keeps its own copy of the handle
            processes.append(subprocess.Popen(command, stdout=log, stderr=log, env=env, cwd=ROOT))
    wait_for_all(processes, logs)
    return [json.loads((folder / f"worker-{k}.json").read_text()) for k in range(NUM_WORKERS)]


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """What each worker's training saw, on its own share and on input pipeline 0's."""
    folder = tmp_path_factory.mktemp("distributed")
    return run_cluster(folder, write_labelled(folder))


def check_shares(seen: list[list[int]], num_records: int, dropped: int) -> None:
    """``seen[k][i]``: how often worker ``k``'s training steps got record ``i`` in one epoch.
    Each record at most once per worker, equal shares, no record on two workers, and all the
    epoch's records but ``dropped`` trained on."""
    counts = np.array(seen)
    assert counts.shape == (len(seen), num_records)
    assert counts.min() >= 0 and counts.max() <= 1, "a worker got a record twice in one epoch"
    sizes = counts.sum(axis=1).tolist()
    assert len(set(sizes)) == 1, f"shares of unequal sizes: {sizes}"
    shared = np.flatnonzero((counts > 0).sum(axis=0) > 1)
    assert shared.size == 0, f"shares not disjoint: {shared.size} records on several workers"
    assert counts.sum() == num_records - dropped, "the shares are not the epoch minus its dropped"


def test_each_worker_trains_on_its_own_share_of_the_epoch(workers):
    own = [worker["own"] for worker in workers]
    assert [w["input_pipeline_id"] for w in own] == list(range(NUM_WORKERS))
    assert {(w["num_input_pipelines"], w["num_replicas_in_sync"]) for w in own} == {(2, 2)}
    batch_size = GLOBAL_BATCH // NUM_WORKERS
    orders = [
        EpochOrder(NUM_RECORDS, SEED, 0, NUM_WORKERS, k, batch_size) for k in range(NUM_WORKERS)
    ]
    assert orders[0].dropped == NUM_RECORDS % GLOBAL_BATCH == 5
    check_shares([w["seen"] for w in own], NUM_RECORDS, orders[0].dropped)
    for worker, order in zip(own, orders, strict=True):  # the share its InputContext names
        assert np.flatnonzero(worker["seen"]).tolist() == sorted(order[:].tolist())


def test_both_workers_run_the_same_steps(workers):
    """Every step of each worker is one global batch: n // G steps, one epoch, on both."""
    steps = NUM_RECORDS // GLOBAL_BATCH
    for run in ("own", "same_share"):
        done = [(w[run]["steps"], w[run]["iterations"], w[run]["epochs"]) for w in workers]
        assert done == [(steps, steps, 1)] * NUM_WORKERS, run


def test_the_share_check_fails_when_both_workers_read_pipeline_0s_share(workers):
    """The broken client trains without an error, on equal shares: only the check sees it."""
    same = [worker["same_share"] for worker in workers]
    assert [w["input_pipeline_id"] for w in same] == list(range(NUM_WORKERS))  # as given
    assert same[0]["seen"] == same[1]["seen"]
    dropped = NUM_RECORDS % GLOBAL_BATCH
    with pytest.raises(AssertionError, match="shares not disjoint: 64 records"):
        check_shares([w["seen"] for w in same], NUM_RECORDS, dropped)


def test_the_share_check_fails_on_unequal_or_missing_shares():
    seen = np.zeros((2, 10), int)
    seen[0, :5] = 1
    seen[1, 5:9] = 1  # one record fewer on worker 1
    with pytest.raises(AssertionError, match="unequal sizes"):
        check_shares(seen.tolist(), 10, 1)
    seen[1, 9] = 1
    check_shares(seen.tolist(), 10, 0)  # a partition passes
    with pytest.raises(AssertionError, match="not the epoch minus"):
        check_shares(seen.tolist(), 10, 2)  # 2 dropped: 8 expected
    seen[0, 0] = 2
    with pytest.raises(AssertionError, match="twice in one epoch"):
        check_shares(seen.tolist(), 10, 0)
