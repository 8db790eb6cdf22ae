"""helpers.shuffle.global_shuffle_dataset never hangs a process that drops its iterators with
reads in flight: mid-epoch, or by ending with them alive (the interpreter's exit ends threads
that are inside Python; see shuffle._ExitGate)."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from helpers._tensorflow import QUIET_ENVIRONMENT
from helpers.records import write_records

ROOT = Path(__file__).resolve().parents[1]

DROPS = """
import sys
from helpers.shuffle import global_shuffle_dataset
files = sys.argv[1:]
datasets = [
    global_shuffle_dataset(files, 3, batch_size=64),
    global_shuffle_dataset(files, 4, batch_size=64, deterministic=False, epochs=None),
    global_shuffle_dataset(files, 5, read_batch=4_096, parallel_reads=4),
]
for k in range(30):  # dropped mid-epoch, reads in flight
    iterator = iter(datasets[k % 3])
    next(iterator)
    del iterator
alive = [iter(dataset) for dataset in datasets * 3]  # still reading when the script ends
for iterator in alive:
    next(iterator)
print("ended")
"""


def test_processes_that_drop_iterators_with_reads_in_flight_end(tmp_path):
    """Before the gate such a script hung nearly always, waiting for ever in the destructor of
    a ParallelMapDataset iterator for a read that Python's exit had ended. Three of them run at
    once (10 s each here) and must all end within two minutes."""
    files = []
    for k in range(2):
        files.append(str(tmp_path / f"shard-{k}.tfrecord"))
        write_records(files[-1], (i.to_bytes(8, "little") + bytes(92) for i in range(20_000)))
    env = {**os.environ, **QUIET_ENVIRONMENT, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", textwrap.dedent(DROPS), *files]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(3)
    ]
    hung = []
    deadline = time.monotonic() + 120  # for all three
    for process in processes:
        try:
            out, err = process.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            hung.append(process.pid)
            continue
        assert process.returncode == 0, err.decode()[-3_000:]
        assert out.decode().split() == ["ended"]
    assert not hung, f"{len(hung)} of 3 processes hung (py-spy dump --native shows where)"
