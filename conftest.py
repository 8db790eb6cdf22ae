"""pytest set-up for the whole suite (tests/ and notebooks/; the options: pyproject.toml).

1. The same results for every user: environment variables that change what the helpers
   read or how figures are drawn are removed for everything the suite runs (notebook
   kernels and subprocesses inherit the environment), and TensorFlow is kept quiet
   (``helpers._tensorflow.QUIET_ENVIRONMENT``, as every notebook's Setup cell does).
2. Each notebook is executed once as committed (by nbval) and once as its student copy,
   each in a new kernel, as JupyterLab starts them; after nbval's cells, the notebook
   checks join the notebook's own group of tests and reuse those two runs
   (tests/notebook_checks.py says what each checks).
3. pytest-xdist hands out whole test files and notebooks (``--dist loadscope``), so a
   notebook's checks run on the worker that ran its cells; the biggest groups go first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from helpers._tensorflow import QUIET_ENVIRONMENT

# VOC_ROOT points the helpers at another dataset; the others change how TensorFlow
# allocates or how matplotlib draws. (ONEDNN_MAX_CPU_ISA stays: `make stability` sets it.)
RESULT_CHANGING = ("VOC_ROOT", "TF_CPU_ALLOCATOR_USE_BFC", "MPLBACKEND", "MATPLOTLIBRC")
for _name in RESULT_CHANGING:
    os.environ.pop(_name, None)
os.environ.update(QUIET_ENVIRONMENT)
# The environment's own commands first (nbgrader runs `alembic` for its gradebook).
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
# tests/notebook_checks.py, also when only notebooks are collected
sys.path.insert(0, str(Path(__file__).parent / "tests"))


def pytest_configure(config):
    # pyproject.toml names nbval's sanitizer file from the project's root, where pytest runs;
    # nbval opens it from the working folder: from elsewhere, find it under the root.
    sanitize = config.getoption("nbval_sanitize_with", None)
    if sanitize and not Path(sanitize).exists():
        config.option.nbval_sanitize_with = str(config.rootpath / sanitize)


class NotebookCheck(pytest.Function):
    """One check of a notebook that reuses its runs (tests/notebook_checks.py): a test function
    of the notebook's collector, called with it and pytest's ``tmp_path_factory``."""

    @classmethod
    def from_parent(cls, parent, *, name, check):
        def run(tmp_path_factory):
            check(parent, tmp_path_factory)

        return super().from_parent(parent, name=name, callobj=run)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.name}"


def pytest_collection_modifyitems(session, config, items):
    notebooks = {}
    for item in items:
        if item.path.suffix == ".ipynb" and hasattr(item, "cell"):  # an nbval cell (or --nbval-lax)
            notebooks.setdefault(item.parent, []).append(item)
    if not notebooks:
        return
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
