"""helpers.beam: the Beam engine writes the local engine's bytes, atomically, and quietly.

Beam takes seconds to start, so four pipelines run in all: the command line on raw records
(seeded, 3 GZIP shards, default workers), the function on encoded records (split order, 1 shard,
one worker; both module-scoped fixtures), a split with a truncated JPEG, and more shards than
records with index files. Everything goes through the public API, but for the clean-up tests,
which put a stand-in where the pipeline's process runs.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from lock_imports import require

from helpers import beam, voc, voc_records
from helpers.cli import main as cli
from helpers.index import RecordView
from helpers.records import iter_records, write_records

tf = require("tensorflow")
require("apache_beam")


def shard_files(folder):
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def local_shards(folder, split, **options):
    """The reference: the same conversion on the local engine, in a folder of its own."""
    prefix = folder / "local" / "x"
    return voc_records.convert_split(voc.sample_root(), split, prefix, progress=False, **options)


def written_ids(paths, compression=None):
    """The image ids in write order: shard k holds positions k, k + n, k + 2n, ..."""
    shards = [[r for r in iter_records(p, compression)] for p in paths]
    order = [s[i] for i in range(max(map(len, shards))) for s in shards if i < len(s)]
    names = [tf.train.Example.FromString(r).features.feature["filename"] for r in order]
    return [n.bytes_list.value[0].decode().removesuffix(".jpg") for n in names]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`python -m helpers convert-voc --engine beam`: raw, seed 7, 3 GZIP shards."""
    folder = tmp_path_factory.mktemp("cli")
    env = {k: v for k, v in os.environ.items() if k != "VOC_ROOT"}
    argv = ["convert-voc", "--engine", "beam", "--split", "trainval", "--out", "beam/x"]
    argv += ["--num-shards", "3", "--shuffle-seed", "7", "--compression", "GZIP"]
    run = subprocess.run(
        [sys.executable, "-m", "helpers", *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return folder, run


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    """beam.convert_with_beam: encoded, the split file's order, 1 shard, one worker process."""
    folder = tmp_path_factory.mktemp("api")
    options = ["--direct_num_workers=1"]
    paths = beam.convert_with_beam(
        voc.sample_root(), "train", folder / "beam" / "x", encoding="encoded", beam_options=options
    )
    return folder, paths


def test_command_line_writes_the_local_engines_bytes_quietly(cli_run, capsys):
    folder, run = cli_run
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # no Beam, worker or TensorFlow logging
    assert run.stdout.startswith("wrote split 'trainval': 9 records in 3 files")
    beam_paths = shard_files(folder / "beam")
    assert [p.name for p in beam_paths] == [f"x-0000{i}-of-00003.tfrecord.gz" for i in range(3)]
    local = local_shards(folder, "trainval", num_shards=3, shuffle_seed=7, compression="GZIP")
    assert [p.read_bytes() for p in beam_paths] == [p.read_bytes() for p in local]
    assert cli(["verify", *map(str, beam_paths)]) == 0
    assert "3 of 3 files intact" in capsys.readouterr().out


def test_a_seed_writes_a_permutation_of_the_split_fixed_by_the_seed(cli_run):
    folder, _ = cli_run
    ids = voc.read_split(voc.sample_root(), "trainval")
    written = written_ids(shard_files(folder / "beam"), "GZIP")
    assert sorted(written) == sorted(ids) and written != ids
    assert written == voc_records.split_order(voc.sample_root(), "trainval", shuffle_seed=7)
    other = voc_records.split_order(voc.sample_root(), "trainval", shuffle_seed=8)
    assert sorted(other) == sorted(ids) and other != written


def test_function_writes_encoded_records_in_split_order_like_the_local_engine(api_run):
    folder, paths = api_run
    assert paths == [folder / "beam" / "x-00000-of-00001.tfrecord"]
    assert shard_files(folder / "beam") == paths  # no temporary file left
    local = local_shards(folder, "train", encoding="encoded")
    assert paths[0].read_bytes() == local[0].read_bytes()
    names = [
        tf.train.Example.FromString(r).features.feature["image/filename"]
        for r in iter_records(paths[0])
    ]
    ids = voc.read_split(voc.sample_root(), "train")
    assert [n.bytes_list.value[0].decode() for n in names] == [f"{i}.jpg" for i in ids]


def test_a_truncated_jpeg_names_the_id_and_file_and_leaves_nothing(tmp_path):
    root = tmp_path / "VOC2012"
    shutil.copytree(voc.sample_root(), root)
    photo = root / "JPEGImages" / "cat_chelsea.jpg"
    photo.write_bytes(photo.read_bytes()[:3000])
    out = tmp_path / "out"
    with pytest.raises(voc.VOCError, match=r"'cat_chelsea' cannot be decoded: .*cat_chelsea.jpg"):
        beam.convert_with_beam(
            root, "trainval", out / "x", num_shards=2, beam_options=["--direct_num_workers=1"]
        )
    assert not out.exists()  # neither shards nor hidden temporary files, nor the folder


def test_existing_shards_are_kept_and_refused_before_beam_starts(tmp_path):
    (tmp_path / "x-00001-of-00002.tfrecord").write_bytes(b"mine")
    with pytest.raises(FileExistsError, match="x-00001-of-00002.tfrecord already exists"):
        beam.convert_with_beam(voc.sample_root(), "train", tmp_path / "x", num_shards=2)
    assert [p.name for p in tmp_path.iterdir()] == ["x-00001-of-00002.tfrecord"]
    assert (tmp_path / "x-00001-of-00002.tfrecord").read_bytes() == b"mine"


@pytest.mark.parametrize(
    "change, error, says",
    [
        ({"encoding": "png"}, ValueError, "encoding must be 'raw' or 'encoded'"),
        ({"task": "boxes"}, ValueError, "task must be"),
        ({"num_shards": 0}, ValueError, "num_shards must be at least 1"),
        ({"compression": "gzip"}, ValueError, "compression must be"),
        ({"shuffle_seed": -1}, ValueError, "seed must be at least 0"),
        ({"beam_options": "--runner=FlinkRunner"}, TypeError, "list of strings"),
        ({"progress": False}, TypeError, "progress"),  # convert_split's, not Beam's
        ({"split": "nosuch"}, voc.VOCError, "no split 'nosuch'"),
    ],
)
def test_bad_arguments_are_refused_before_beam_starts(tmp_path, change, error, says):
    arguments = {"voc_root": voc.sample_root(), "split": "train", "out_prefix": tmp_path / "x"}
    with pytest.raises(error, match=says):
        beam.convert_with_beam(**{**arguments, **change})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option, says",
    [
        ("--no_such_option=3", "unknown Beam option(s) ['no_such_option']"),
        ("--direct_num_workers=two", "argument --direct_num_workers: invalid int value: 'two'"),
    ],
)
def test_the_command_line_passes_beam_options_and_names_a_bad_one(tmp_path, capsys, option, says):
    argv = ["convert-voc", "--engine", "beam", "--split", "val", "--out", str(tmp_path / "x")]
    assert cli([*argv, f"--beam-option={option}"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("convert-voc: ") and says in err
    assert err.count("\n") == 1  # one clean line, no traceback
    assert list(tmp_path.iterdir()) == []


def test_empty_shards_and_index_files_are_the_local_engines(tmp_path):
    """More shards than ids: the shards without records are valid empty files, and every
    shard's .index and .index.npy are committed with it, as on the local engine."""
    options = {"num_shards": 5, "shuffle_seed": 1, "index": True}
    paths = beam.convert_with_beam(
        voc.sample_root(), "val", tmp_path / "x", beam_options=["--direct_num_workers=1"], **options
    )
    local = local_shards(tmp_path, "val", **options)
    indexes = [p.with_name(p.name + ".index") for p in paths]
    local_indexes = [p.with_name(p.name + ".index") for p in local]
    assert [p.read_bytes() for p in paths + indexes] == [
        p.read_bytes() for p in local + local_indexes
    ]
    assert [sum(1 for _ in iter_records(p)) for p in paths] == [1, 1, 1, 0, 0]
    binaries = [p.with_name(p.name + ".index.npy") for p in paths]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in paths + indexes + binaries] + ["local"]
    )
    for path, binary in zip(paths, binaries, strict=True):  # made for the shard as committed
        stat = path.stat()
        assert np.load(binary)[:2].tolist() == [stat.st_size, stat.st_mtime_ns]
    with RecordView(paths) as view:  # mapped, not walked
        assert view.index_nbytes == 0 and len(view) == 3
    with pytest.raises(ValueError, match="index=True needs plain files: a GZIP file"):
        beam.convert_with_beam(
            voc.sample_root(), "val", tmp_path / "z", compression="GZIP", index=True
        )
    assert not list(tmp_path.glob("z*"))


def test_importing_helpers_beam_imports_neither_beam_nor_tensorflow():
    code = "import helpers.beam, sys; print({'apache_beam', 'tensorflow'} & set(sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.strip() == "set()", run.stderr


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a killed one may linger as a zombie until reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_a_pipeline_over_its_time_limit_is_stopped_with_its_workers(tmp_path, monkeypatch):
    """The pipeline's process (here a stand-in for Python that starts a worker and sleeps) and
    its worker are both gone after the limit, and nothing is left in the output folder.

    A loaded machine may not start both processes within a limit of 1 s: then 4 s, then 16."""
    pid_file = tmp_path / "worker.pid"
    child = tmp_path / "child.py"
    child.write_text(
        "import os, subprocess, sys, time\n"
        "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r} + '.tmp', 'w').write(str(worker.pid))\n"
        f"os.replace({str(pid_file)!r} + '.tmp', {str(pid_file)!r})\n"
        "time.sleep(60)\n"
    )
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {child}\n")
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))  # what beam starts its pipeline with
    for limit in (1, 4, 16):
        stopped = rf"the Beam pipeline did not finish within {limit} s"
        with pytest.raises(TimeoutError, match=stopped):
            beam.convert_with_beam(voc.sample_root(), "val", tmp_path / "out" / "x", timeout=limit)
        assert not (tmp_path / "out").exists()
        if pid_file.exists():
            break
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while running(worker) and time.monotonic() < deadline:  # SIGKILL lands asynchronously
        time.sleep(0.05)
    assert not running(worker)


def stand_in_pipeline(fails: bool):
    """Instead of Beam's process: each shard's temporary file written as a worker writes it
    (write_records), and beside the first the temporary file of a worker killed during its
    write; then a failure, or the end."""

    def run(job: dict, verbose: bool, timeout: float | None) -> None:
        temps = [Path(temp) for temp in job["temps"]]
        for temp in temps:
            write_records(temp, [temp.name.encode()], job["compression"])
        temps[0].with_name(f".{temps[0].name}.4194304-0123abcd.tmp").write_bytes(b"half")
        if fails:
            raise RuntimeError("a worker failed")

    return run


def test_a_failed_pipeline_leaves_no_temporary_file_whatever_the_prefix_holds(
    tmp_path, monkeypatch
):
    """A ``[`` in the prefix is no pattern: the shards' temporary files and a killed worker's
    are removed, and the folder made for them."""
    monkeypatch.setattr(beam, "_run_in_child", stand_in_pipeline(fails=True))
    out = tmp_path / "out[1]"
    with pytest.raises(RuntimeError, match="a worker failed"):
        beam.convert_with_beam(voc.sample_root(), "val", out / "x[ab]*", num_shards=2)
    assert not out.exists()


def test_a_committed_pipeline_leaves_only_its_shards_and_indexes(tmp_path, monkeypatch):
    monkeypatch.setattr(beam, "_run_in_child", stand_in_pipeline(fails=False))
    prefix = tmp_path / "x[ab]?"
    paths = beam.convert_with_beam(voc.sample_root(), "val", prefix, num_shards=2, index=True)
    assert [p.name for p in paths] == [
        "x[ab]?-00000-of-00002.tfrecord",
        "x[ab]?-00001-of-00002.tfrecord",
    ]
    with RecordView(paths) as view:
        assert len(view) == 2 and view[1].startswith(b".x[ab]?-00001-of-00002.tfrecord.")
    names = [p.name + end for p in paths for end in ("", ".index", ".index.npy")]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
