"""helpers.memory sees memory that a block allocates and then frees."""

import subprocess
import sys

import numpy as np

from helpers.memory import track_peak_memory


def test_peak_includes_a_temporary_allocation_freed_before_the_end():
    with track_peak_memory() as peak:
        block = np.ones(200 * 2**20, dtype=np.uint8)  # 200 MiB, touched
        block.sum()
        del block
    assert peak.peak_increase_mib > 150


def test_peak_stays_small_for_a_small_block():
    with track_peak_memory() as peak:
        np.ones(1000).sum()
    assert peak.peak_increase_mib < 50


def test_importing_memory_imports_no_tensorflow():
    code = "import helpers.memory, sys; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
