"""Shared timing helpers: run a baseline and a candidate alternately, report ratios."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

WORK = Path(__file__).resolve().parent / "_work"
#: Every comparison made in this process, in order (written as JSON by ``python -m benchmarks``).
RESULTS: list[Comparison] = []
#: Other figures a benchmark reports (bench_suite's run times), written to the JSON as well.
EXTRA: dict[str, object] = {}


@dataclass
class Comparison:
    """Seconds of a baseline and a candidate, measured alternately on the same work."""

    name: str
    baseline_times: list[float]
    candidate_times: list[float]
    goal: float | None = None  # minimum median speed ratio an issue asks for
    worst_goal: float | None = None  # minimum speed ratio of the worst pair it asks for

    @property
    def baseline(self) -> float:
        return statistics.median(self.baseline_times)

    @property
    def candidate(self) -> float:
        return statistics.median(self.candidate_times)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "speed_ratio_median": self.speed_ratio,
            "speed_ratio_range": [min(self.ratios), max(self.ratios)],
            "baseline_seconds": self.baseline_times,
            "candidate_seconds": self.candidate_times,
            "goal": self.goal,
            "worst_goal": self.worst_goal,
            "goal_met": self.goal_met,
        }

    @property
    def ratios(self) -> list[float]:
        """Speed ratio of each alternating pair of runs (>1: the candidate is faster)."""
        return [b / c for b, c in zip(self.baseline_times, self.candidate_times, strict=True)]

    @property
    def speed_ratio(self) -> float:
        """Median of the pairwise speed ratios."""
        return statistics.median(self.ratios)

    @property
    def goal_met(self) -> bool | None:
        """Whether the median meets ``goal`` and the worst pair ``worst_goal`` (None: no goal)."""
        if self.goal is None and self.worst_goal is None:
            return None
        median_met = self.goal is None or self.speed_ratio >= self.goal
        return median_met and (self.worst_goal is None or min(self.ratios) >= self.worst_goal)

    def line(self) -> str:
        goal = ""
        if self.goal_met is not None:
            asked = [f"median >= {self.goal:.2f}x"] if self.goal is not None else []
            if self.worst_goal is not None:
                asked.append(f"worst >= {self.worst_goal:.2f}x")
            goal = f"   goal {' and '.join(asked)}: {'met' if self.goal_met else 'NOT MET'}"
        spread = f"{min(self.ratios):.2f}-{max(self.ratios):.2f}"
        return (
            f"{self.name:<62} {self.speed_ratio:6.2f}x (range {spread} over {len(self.ratios)} runs)"
            f"   (baseline {self.baseline * 1e3:8.1f} ms, candidate {self.candidate * 1e3:8.1f} ms){goal}"
        )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a run is timed, as ``timeit`` does. With
    TensorFlow imported, one full collection took 140-180 ms on the CI machine (``gc.collect()``
    with nothing to free), added to whichever run happened to trigger it; it runs after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def wall_and_cpu(function: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (all threads of this process) of one call of ``function``."""
    with collector_paused():
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        return time.perf_counter() - start, time.process_time() - start_cpu


def seconds(function: Callable[[], object]) -> float:
    return wall_and_cpu(function)[0]


def compare(
    name: str,
    baseline: Callable[[], object],
    candidate: Callable[[], object],
    repeats: int = 5,
    goal: float | None = None,
    setup: Callable[[], object] | None = None,
    worst_goal: float | None = None,
) -> Comparison:
    """Time ``baseline`` and ``candidate`` alternately ``repeats`` times (after one warm-up
    run of each), ``setup`` run untimed before each; print the median ratio, its range, and
    whether the median met ``goal`` and the worst pair ``worst_goal``."""
    setup = setup or (lambda: None)
    setup(), baseline(), setup(), candidate()
    base_times, cand_times = [], []
    for _ in range(repeats):
        setup()
        base_times.append(seconds(baseline))
        setup()
        cand_times.append(seconds(candidate))
    result = Comparison(name, base_times, cand_times, goal, worst_goal)
    print(result.line(), flush=True)
    RESULTS.append(result)
    return result


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def work_dir(name: str) -> Path:
    """A folder under benchmarks/_work for one benchmark's files (kept between runs)."""
    path = WORK / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def drop_page_cache(paths: Iterable[Path | str]) -> None:
    """Ask the kernel to drop the cached pages of each file (``posix_fadvise(DONTNEED)``, no root
    needed), after writing back its dirty ones (``fsync``: DONTNEED keeps dirty pages, so a file
    just written would stay cached). Pages a process still maps are kept: close views first.
    The host of a virtual machine may still cache the disk below it."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cached_mib() -> float:
    """The kernel's page cache (``Cached`` of /proc/meminfo), in MiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def private_mib(pid: int | None = None) -> dict[str, float]:
    """Private memory of a process in MiB: ``uss`` (psutil, if installed) and the
    ``Private_Clean``, ``Private_Dirty``, ``Anonymous``, ``Rss`` and ``Pss`` lines of
    /proc/PID/smaps_rollup. Clean private pages of a file map (the index) are page cache
    that only this process maps now; dirty and anonymous pages are its own copies."""
    rollup = Path(f"/proc/{pid or 'self'}/smaps_rollup").read_text().splitlines()
    fields = {}
    for line in rollup[1:]:
        key, value, *_ = line.split()
        if key.rstrip(":") in {"Rss", "Pss", "Private_Clean", "Private_Dirty", "Anonymous"}:
            fields[key.rstrip(":")] = int(value) / 1024
    try:
        import psutil
    except ImportError:  # USS is Private_Clean + Private_Dirty
        fields["uss"] = fields["Private_Clean"] + fields["Private_Dirty"]
    else:
        fields["uss"] = psutil.Process(pid).memory_full_info().uss / 2**20
    return fields
