"""Set-up shared by every notebook: quiet, deterministic TensorFlow and a work folder."""

import logging
import os
import shutil
from pathlib import Path

from helpers._checks import check_seed
from helpers._tensorflow import QUIET_ENVIRONMENT

_WORK_ROOT = Path("_work")  # relative to the notebook's own folder


def prepare_tensorflow(seed: int = 0, deterministic_ops: bool = True) -> None:
    """Quiet TensorFlow (:data:`QUIET_ENVIRONMENT`, its loggers), let it pool freed CPU buffers,
    import it, seed Python, NumPy and TensorFlow and, if ``deterministic_ops``, make its ops
    deterministic. Every notebook's Setup calls it before ``import tensorflow``, as the environment
    counts only then. TypeError or ValueError for a bad ``seed``; ImportError without TensorFlow."""
    seed = check_seed(seed)
    os.environ.update(QUIET_ENVIRONMENT)
    # Pool freed buffers (unless set): faulting them in again was 1/4 of notebook 05's CPU time
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

    import absl.logging
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.keras.utils.set_random_seed(seed)
    if deterministic_ops:
        tf.config.experimental.enable_op_determinism()


def work_dir(name: str, root: Path | str = _WORK_ROOT) -> Path:
    """The folder ``<root>/<name>`` for a notebook's files, made empty (what was in it is deleted).
    ``root`` defaults to ``_work`` in the current folder: the notebook's own, when Jupyter runs
    it. Every notebook's Setup cell calls it. ValueError if ``name`` is not a plain folder name."""
    if not name or Path(name).name != name or name in {".", ".."}:
        raise ValueError(f"work folder name must be a plain name, got {name!r}")
    path = Path(root) / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
