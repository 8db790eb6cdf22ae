"""helpers.memory measures how far one block raises resident memory: the block's own rise, and
also memory that the block allocates and frees again before it ends."""

import gc
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.memory import track_peak_memory


@pytest.fixture(autouse=True)
def nothing_else_frees_memory():
    """The tests measure the process's resident memory: garbage left by earlier tests in this
    worker (a RecordView's memory maps hold tens of MiB of file pages) must not be collected
    while a block runs, or its release hides the block's rise."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def resident(mib: int) -> np.ndarray:
    """An array of ``mib`` MiB with every page written, so all of it is resident."""
    return np.ones(mib * 2**20, dtype=np.uint8)


def test_peak_includes_a_temporary_allocation_freed_before_the_end():
    with track_peak_memory() as peak:
        block = resident(200)
        time.sleep(0.2)  # 40 sampling intervals while it is held (no time is measured)
        del block  # resident memory falls back before the block ends
    assert peak.peak_increase_mib > 150, peak.peak_increase_mib


def test_peak_is_the_rise_of_the_block_not_the_memory_of_the_process():
    ballast = resident(100)  # held by the process before the block: not the block's rise
    with track_peak_memory() as peak:
        kept = resident(40)
    assert 30 < peak.peak_increase_mib < 60, peak.peak_increase_mib
    del kept, ballast


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="Linux /proc only")
def test_on_linux_memory_is_read_from_proc_without_psutil(monkeypatch):
    """psutil is no dependency: where /proc exists, measuring must not need it."""
    monkeypatch.setitem(sys.modules, "psutil", None)  # any ``import psutil`` now fails
    with track_peak_memory() as peak:
        kept = resident(40)
    assert 30 < peak.peak_increase_mib < 60, peak.peak_increase_mib
    del kept


def test_importing_memory_imports_no_tensorflow():
    code = "import helpers.memory, sys; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
