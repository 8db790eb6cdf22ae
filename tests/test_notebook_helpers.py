"""helpers.notebook: work folders and TensorFlow preparation."""

import os
import subprocess
import sys

import pytest

from helpers.notebook import work_dir


def test_work_dir_starts_empty_and_is_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default root is relative to the current folder
    first = work_dir("demo", root=tmp_path)
    (first / "leftover.bin").write_bytes(b"x")
    again = work_dir("demo", root=tmp_path)
    assert again == first and list(again.iterdir()) == []
    assert not work_dir("x").is_absolute()


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "../up"])
def test_work_dir_rejects_names_that_are_not_plain(tmp_path, bad):
    with pytest.raises(ValueError, match="plain name"):
        work_dir(bad, root=tmp_path)


def _run_fresh(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter whose environment has no TF_ variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_prepare_tensorflow_is_quiet_deterministic_pooling_and_keeps_your_allocator():
    """One fresh interpreter (importing TensorFlow is most of the cost): the defaults, then an
    allocator chosen before a second call, which must be left as it is."""
    code = (
        "import os\n"
        "from helpers.notebook import prepare_tensorflow\n"
        "prepare_tensorflow(seed=3)\n"
        "import tensorflow as tf\n"
        "a = tf.random.uniform([3]).numpy().tolist()\n"
        "prepare_tensorflow(seed=3)\n"
        "b = tf.random.uniform([3]).numpy().tolist()\n"
        "assert a == b, (a, b)\n"
        "from tensorflow.python.framework import config\n"
        "print(config.is_op_determinism_enabled(), os.environ['TF_CPU_ALLOCATOR_USE_BFC'])\n"
        "os.environ['TF_CPU_ALLOCATOR_USE_BFC'] = 'false'  # a value you set wins\n"
        "prepare_tensorflow()\n"
        "print(os.environ['TF_CPU_ALLOCATOR_USE_BFC'])\n"
    )
    done = _run_fresh(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True true\nfalse\n"
    assert done.stderr == "", f"TensorFlow wrote to stderr: {done.stderr!r}"


@pytest.mark.parametrize("seed", [None, -1, 1.5])
def test_prepare_tensorflow_refuses_a_seed_that_is_not_an_int(seed):
    from helpers.notebook import prepare_tensorflow

    with pytest.raises((TypeError, ValueError), match="seed must"):
        prepare_tensorflow(seed=seed)
