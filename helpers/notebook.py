"""Set-up shared by every notebook: quiet, deterministic TensorFlow and a work folder.

Notebook 01's Setup cell makes its work folder with :func:`work_dir`; from notebook
02 on, every Setup cell calls :func:`prepare_tensorflow` before importing TensorFlow.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from helpers._checks import check_seed

_WORK_ROOT = Path("_work")  # relative to the notebook's own folder


def prepare_tensorflow(seed: int = 0, deterministic_ops: bool = True) -> None:
    """Make TensorFlow quiet and repeatable, then import it (every Setup cell from notebook 02).

    TensorFlow's C++ logging and oneDNN notice obey environment variables read at its first
    import, so call this before ``import tensorflow`` (again later: harmless, no C++ effect).
    ``seed`` seeds Python's, NumPy's and TensorFlow's global generators; ``deterministic_ops``
    turns on ``enable_op_determinism``. Raises TypeError or ValueError for a ``seed`` that is not
    a non-negative int (``None`` included), ImportError without TensorFlow."""
    seed = check_seed(seed)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # C++ INFO, WARNING and ERROR lines
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # the oneDNN notice ignores the log level
    # A pooling allocator (a value you set wins): by default every freed batch buffer goes back
    # to the system and is page-faulted in again, a quarter of notebook 03's CPU (bench_pipeline)
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

    import absl.logging
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.keras.utils.set_random_seed(seed)
    if deterministic_ops:
        tf.config.experimental.enable_op_determinism()


def work_dir(name: str, root: Path | str = _WORK_ROOT) -> Path:
    """Return an empty folder ``<root>/<name>`` for a notebook's files (notebook 01's Setup).

    What a previous run left there is removed first, so every run starts alike; the path is
    relative (``_work/<name>``), so it prints the same on every machine. Raises ValueError if
    ``name`` is not a plain folder name."""
    if not name or Path(name).name != name or name in {".", ".."}:
        raise ValueError(f"work folder name must be a plain name, got {name!r}")
    path = Path(root) / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
