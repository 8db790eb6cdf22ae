"""Run the benchmarks: `python -m benchmarks [--reference] [--against REV] [NAME ...]` (default:
all).

Each `benchmarks/bench_<name>.py` has a `main()` that prints one line per
comparison: the candidate's speed as a ratio of its baseline's (median and range),
measured alternately in the same process on the same data. The results of each
benchmark are also written as JSON to `benchmarks/results/<name>-<time>.json`
(git-ignored), with the commit, the machine and the package versions, so that two
runs can be compared. With ``--reference`` the same JSON also replaces the committed
reference result `benchmarks/reference/<name>.json`, the one the README quotes
(``benchmarks/reference.py`` prints its table; tests/test_benchmark_reference.py checks it).
The benchmarks in OPT_IN run only when named (`make bench-scale` is `python -m benchmarks
scale`: hours and 22 GB of disk). ``--against REV`` names the older commit whose read paths
`bench_reads` compares with the working tree's (default e9f0c4a).
"""

import importlib
import json
import os
import pkgutil
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from benchmarks import _common
from helpers.notebook import prepare_tensorflow

HERE = Path(__file__).resolve().parent
PACKAGES = [
    "tensorflow-cpu",
    "tensorflow",
    "numpy",
    "protobuf",
    "google-crc32c",
    "pillow",
    "apache-beam",
    "grain",
    "array-record",
    "psutil",
]
#: Benchmarks run only when named: the scale run writes 22 GB and reads it from a cold cache.
OPT_IN = {"scale"}


def environment() -> dict:
    """What the numbers depend on: the code, the machine and the package versions."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=HERE, capture_output=True, text=True
    )
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {
        "commit": commit.stdout.strip() or None,
        "uncommitted_changes": bool(dirty.stdout.strip()),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
        "python": platform.python_version(),
        "packages": versions,
    }


def save(name: str, started: float, reference: bool = False) -> Path:
    folder = HERE / "results"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(started))}.json"
    record = {
        "benchmark": name,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        **environment(),
        "comparisons": [c.as_dict() for c in _common.RESULTS],
        **_common.EXTRA,
    }
    path.write_text(json.dumps(record, indent=2) + "\n")
    if reference:
        (HERE / "reference").mkdir(exist_ok=True)
        (HERE / "reference" / f"{name}.json").write_text(path.read_text())
    return path


def main(argv: list[str]) -> int:
    reference = "--reference" in argv
    argv = [a for a in argv if a != "--reference"]
    options = {}  # keyword arguments of the benchmarks that take them
    if "--against" in argv:
        at = argv.index("--against")
        if at + 1 == len(argv):
            print("--against needs a commit (REV)")
            return 2
        options["reads"] = {"against": argv[at + 1]}
        del argv[at : at + 2]
    available = sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules([str(HERE)])
        if m.name.startswith("bench_")
    )
    chosen = argv or [name for name in available if name not in OPT_IN]
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {available}")
        return 2
    prepare_tensorflow()
    for name in chosen:
        print(f"== {name}", flush=True)
        _common.RESULTS.clear()
        _common.EXTRA.clear()
        started = time.time()
        importlib.import_module(f"benchmarks.bench_{name}").main(**options.get(name, {}))
        print(f"results: {save(name, started, reference).relative_to(HERE.parent)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
