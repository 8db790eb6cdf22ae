"""Set-up shared by every notebook: quiet, deterministic TensorFlow and a work folder."""

import logging
import os
import shutil
from pathlib import Path

from helpers._checks import check_seed

_WORK_ROOT = Path("_work")  # relative to the notebook's own folder


def prepare_tensorflow(seed: int = 0, deterministic_ops: bool = True) -> None:
    """Make TensorFlow quiet, seeded and deterministic, then import it; call it before ``import
    tensorflow`` (every Setup cell from notebook 02). TypeError or ValueError for a ``seed`` that
    is not a non-negative int; ImportError without TensorFlow."""
    seed = check_seed(seed)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # C++ INFO, WARNING and ERROR lines
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # the oneDNN notice ignores the log level
    # Pool freed buffers (unless set): faulting them in again was 1/4 of notebook 03's CPU time
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

    import absl.logging
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.keras.utils.set_random_seed(seed)
    if deterministic_ops:
        tf.config.experimental.enable_op_determinism()


def work_dir(name: str, root: Path | str = _WORK_ROOT) -> Path:
    """An emptied folder ``<root>/<name>`` for a notebook's files (notebook 01's Setup).
    ValueError if ``name`` is not a plain folder name."""
    if not name or Path(name).name != name or name in {".", ".."}:
        raise ValueError(f"work folder name must be a plain name, got {name!r}")
    path = Path(root) / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
