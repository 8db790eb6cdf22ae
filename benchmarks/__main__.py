"""Run the benchmarks: `python -m benchmarks [NAME ...]` (default: all).

Each `benchmarks/bench_<name>.py` has a `main()` that prints one line per
comparison: the candidate's speed as a ratio of its baseline's, measured
alternately in the same process on the same data.
"""

import importlib
import pkgutil
import sys
from pathlib import Path

from helpers.notebook import prepare_tensorflow


def main(argv: list[str]) -> int:
    available = sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    chosen = argv or available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {available}")
        return 2
    prepare_tensorflow()
    for name in chosen:
        print(f"== {name}", flush=True)
        importlib.import_module(f"benchmarks.bench_{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
