"""How much memory a block of code holds at its peak: notebooks 03 and 05 measure with it.

``resource.getrusage`` knows only the peak of the whole process so far, which a notebook has
usually passed long before; this samples the resident set size in a thread instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace


def _rss_bytes() -> int:
    """Resident memory of this process now (Linux ``/proc``; elsewhere psutil, if installed)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except FileNotFoundError:
        import psutil  # macOS and Windows have no /proc

        return psutil.Process().memory_info().rss


@contextmanager
def track_peak_memory(interval_s: float = 0.005) -> Iterator[SimpleNamespace]:
    """Sample resident memory while the ``with`` block runs (notebooks 03, 05); yield the result.

    After the block, ``result.peak_increase_mib`` is how far resident memory rose above its
    level at the start; a spike shorter than ``interval_s`` can be missed. Raises ImportError
    on a system without ``/proc`` unless psutil is installed."""
    peak, done = [start := _rss_bytes()], threading.Event()

    def sample() -> None:
        while not done.wait(interval_s):
            peak[0] = max(peak[0], _rss_bytes())

    (thread := threading.Thread(target=sample, daemon=True)).start()
    result = SimpleNamespace(peak_increase_mib=0.0)
    try:
        yield result
    finally:
        done.set()
        thread.join()
        result.peak_increase_mib = max(0, max(peak[0], _rss_bytes()) - start) / 2**20
