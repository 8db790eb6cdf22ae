"""Peak memory of one block of code, not of the whole process (notebooks 06 and 10)."""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

_INTERVAL_S = 0.005  # how often resident memory is sampled: 5 ms


def _rss_bytes() -> int:
    """Resident memory of this process now (Linux ``/proc``; elsewhere psutil, if installed)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except FileNotFoundError:
        import psutil  # macOS and Windows have no /proc

        return psutil.Process().memory_info().rss


@contextmanager
def track_peak_memory() -> Iterator[SimpleNamespace]:
    """Yield a result whose ``peak_increase_mib`` is, after the block, how far resident memory
    rose, sampled every 5 ms (a shorter spike may be missed). ImportError without /proc, psutil."""
    start = peak = _rss_bytes()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(_INTERVAL_S):
            peak = max(peak, _rss_bytes())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    result = SimpleNamespace(peak_increase_mib=0.0)
    try:
        yield result
    finally:
        done.set()
        thread.join()
        result.peak_increase_mib = (max(peak, _rss_bytes()) - start) / 2**20
