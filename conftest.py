"""pytest set-up for `make test` (tests/ and notebooks/ together).

1. The same results for every user: environment variables that change what the helpers
   read or how figures are drawn are removed for everything the suite runs (notebook
   kernels and subprocesses inherit the environment).
2. Each notebook is executed once as committed (by nbval) and once as its student copy;
   after nbval's cells, four checks join the notebook's own group of tests and reuse those
   two runs (tests/notebook_checks.py says what each checks).
3. Notebook kernels are forked from a process that has imported TensorFlow
   (tests/forked_kernels.py).
4. The heaviest groups start first, so that neither of the two workers waits at the end.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# VOC_ROOT points the helpers at another dataset; the others change how TensorFlow
# allocates or how matplotlib draws. (ONEDNN_MAX_CPU_ISA stays: `make stability` sets it.)
RESULT_CHANGING = ("VOC_ROOT", "TF_CPU_ALLOCATOR_USE_BFC", "MPLBACKEND", "MATPLOTLIBRC")
for _name in RESULT_CHANGING:
    os.environ.pop(_name, None)
# The environment's own commands first (nbgrader runs `alembic` for its gradebook).
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

sys.path.insert(0, str(Path(__file__).parent / "tests"))
import forked_kernels  # noqa: E402  (tests/forked_kernels.py)

# Heaviest first (seconds per group, as `python -m benchmarks suite` lists them): the groups
# of tests are handed to the two workers in this order, then everything else in file order.
HEAVIEST_FIRST = [
    "notebooks/07_train_from_tfrecords.ipynb",
    "notebooks/10_shuffle_globally_at_speed.ipynb",
    "notebooks/03_read_shuffled_batches.ipynb",
    "notebooks/04_measure_shuffle_bias.ipynb",
    "notebooks/08_convert_at_scale_with_beam.ipynb",
    "tests/test_docs_site.py",
    "tests/test_pipeline.py",
    "notebooks/05_read_consecutive_frames.ipynb",
    "tests/test_documented_commands.py",
    "tests/test_beam.py",
    "notebooks/02_write_read_voc_tfrecords.ipynb",
    "notebooks/09_write_read_variable_length_features.ipynb",
    "notebooks/01_roundtrip_raw_bytes.ipynb",
    "notebooks/06_inspect_tfrecord_files.ipynb",
]


def pytest_configure(config):
    # Kernels start with TensorFlow imported (see there why). Executing notebooks, the first
    # pytest process starts the zygote now: it imports TensorFlow while the workers collect.
    notebooks = config.getoption("nbval", False) or config.getoption("nbval_lax", False)
    forked_kernels.install(start_now=notebooks and "PYTEST_XDIST_WORKER" not in os.environ)


def _group(item) -> str:
    return item.nodeid.split("::", 1)[0]


class NotebookCheck(pytest.Item):
    """One check of a notebook that reuses its runs (tests/notebook_checks.py)."""

    def __init__(self, *, check, **kwargs):
        super().__init__(**kwargs)
        self.check = check

    def runtest(self):
        self.check(self.parent)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.name}"


def pytest_collection_modifyitems(session, config, items):
    notebooks = {}
    for item in items:
        if item.path.suffix == ".ipynb" and hasattr(item, "cell"):  # an nbval cell (or --nbval-lax)
            notebooks.setdefault(item.parent, []).append(item)
    if notebooks:
        sys.path.insert(0, str(Path(__file__).parent / "tests"))
        import notebook_checks as nc  # tests/notebook_checks.py

        lax = config.getoption("nbval_lax", False)  # outputs not compared: figures neither
        checks = [(name, check) for name, check, compares in nc.CHECKS if not (lax and compares)]
        for notebook, cells in notebooks.items():
            extra = [NotebookCheck.from_parent(notebook, name=n, check=c) for n, c in checks]
            if Path(notebook.path).stem in nc.PROBES and not lax:
                what = nc.PROBES[Path(notebook.path).stem].what
                name = f"the figure check notices {what}"
                extra.append(NotebookCheck.from_parent(notebook, name=name, check=nc.check_probe))
            position = items.index(cells[-1]) + 1
            items[position:position] = extra
    rank = {group: k for k, group in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(_group(item), len(rank)))  # stable: file order kept
