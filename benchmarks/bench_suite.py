"""How long the pytest phase of `make test` takes, and where its time goes.

`python -m benchmarks suite` runs the pytest phase of `make test` (plain pytest: its options
are those of pyproject.toml, which it records with the result; lint and the install step left
out) three times in this checkout (``BENCH_SUITE_ROUNDS`` to change that), one run after
another, and prints:

* the wall time of each run, their median and range, against the goal of the issue "CI
  that holds on any machine": at most 150 s on the 2-core machine;
* the seconds of each group of tests (a notebook with the checks that reuse its runs, or
  a test file), as the two workers receive them, in the last run;
* the 15 slowest tests of the last run;
* then one execution of every notebook, one after another, each in a fresh kernel, as
  `make notebooks` runs them (``scripts/run_notebooks.py --no-save``: nothing written), and
  the median run against it; goal of the issue "Helpers a learner can read": at most 1.8x.

Timing belongs here, never in a test: the machines are noisy. Run it on an otherwise idle
machine; the load average before each run is printed with it.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
import tomllib
from collections import defaultdict
from pathlib import Path

from benchmarks import _common

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 150
GOAL_NOTEBOOK_RATIO = 1.8  # the pytest phase against one sequential execution of every notebook
COMMAND = [sys.executable, "-m", "pytest", "-q", "--durations=0"]  # and pyproject.toml's options


def pytest_options() -> dict:
    """The suite's options as pytest reads them: [tool.pytest.ini_options] of pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["pytest"]["ini_options"]


DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*)$")


def one_run() -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:  # still timed, but say so: a red suite's time means little
        failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        print(f"the suite FAILED ({len(failed)} tests):", *failed[:10], sep="\n  ")
    return seconds, done.stdout


def notebooks_once() -> float:
    """Seconds to execute every notebook once, in turn, in fresh kernels, writing nothing."""
    paths = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    start = time.perf_counter()
    script = [sys.executable, "scripts/run_notebooks.py", "--no-save", *paths]
    subprocess.run(script, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def durations(output: str) -> list[tuple[float, str, str]]:
    """(seconds, phase, test id) of every test phase pytest listed."""
    return [(float(m[1]), m[2], m[3]) for m in map(DURATION.match, output.splitlines()) if m]


def main() -> None:
    rounds = int(os.environ.get("BENCH_SUITE_ROUNDS", "3"))
    times = []
    for number in range(1, rounds + 1):
        load = os.getloadavg()[0]
        seconds, output = one_run()
        times.append(seconds)
        print(f"run {number}: {seconds:6.1f} s (load average before it: {load:.2f})", flush=True)
    median = statistics.median(times)
    verdict = "met" if median <= GOAL_SECONDS else "NOT MET"
    print(
        f"pytest phase of make test: median {median:.1f} s ({min(times):.1f} to "
        f"{max(times):.1f}) over {rounds} runs; goal <= {GOAL_SECONDS} s: {verdict}"
    )

    phases = durations(output)
    groups: dict[str, float] = defaultdict(float)
    for seconds, _, test in phases:
        groups[test.split("::", 1)[0]] += seconds
    print("seconds per group of tests in the last run (what one worker spends on it):")
    for group, seconds in sorted(groups.items(), key=lambda g: -g[1])[:15]:
        print(f"  {seconds:6.1f}  {group}")
    print(f"  {sum(groups.values()):6.1f}  in all, on 2 workers")
    print("the 15 slowest test phases of the last run:")
    for seconds, phase, test in sorted(phases, reverse=True)[:15]:
        print(f"  {seconds:6.1f}  {phase:8} {test}")
    notebooks = notebooks_once()
    ratio = median / notebooks
    verdict = "met" if ratio <= GOAL_NOTEBOOK_RATIO else "NOT MET"
    print(f"one sequential execution of every notebook: {notebooks:.1f} s")
    print(f"the median run is {ratio:.2f}x that; goal <= {GOAL_NOTEBOOK_RATIO}x: {verdict}")
    _common.EXTRA.update(
        notebook_seconds=notebooks,
        notebook_ratio=ratio,
        goal_notebook_ratio=GOAL_NOTEBOOK_RATIO,
        pytest_command=COMMAND[1:],
        pytest_options=pytest_options(),
        suite_seconds=times,
        goal_seconds=GOAL_SECONDS,
        group_seconds=dict(sorted(groups.items(), key=lambda g: -g[1])),
    )
