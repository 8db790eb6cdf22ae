"""The command line (`python -m helpers ...`): exit codes, messages, refusal to overwrite, --help."""

import errno
import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from builders import example, sequence_example
from lock_imports import require

from helpers import cli
from helpers.cli import main
from helpers.records import iter_records, verify, write_records

tf = require("tensorflow")
CHECKOUT = Path(__file__).resolve().parents[1]


def child_env() -> dict[str, str]:
    """The environment for a child Python that imports this checkout's helpers (not a copy
    installed elsewhere), without TensorFlow's TF_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), env.get("PYTHONPATH")]))
    return env


def numbered(index: int) -> bytes:
    """An Example of an id and an image of 40 + ``index`` bytes."""
    return example({"id": index, "image": bytes(range(256))[: 40 + index]})


def day(steps: int) -> bytes:
    """A SequenceExample of a day and ``steps`` steps of two floats."""
    return sequence_example({"day": b"monday"}, {"t": [[float(s), s / 2] for s in range(steps)]})


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A folder with one intact file, its GZIP twin, and one damaged copy per kind of damage."""
    monkeypatch.chdir(tmp_path)
    write_records("good.tfrecord", [numbered(i) for i in range(4)])
    write_records("good.tfrecord.gz", [numbered(i) for i in range(4)], compression="GZIP")
    data = open("good.tfrecord", "rb").read()
    offsets = [offset for offset, _ in iter_records("good.tfrecord", offsets=True)]

    def damaged(name: str, content: bytes) -> None:
        with open(name, "wb") as file:
            file.write(content)

    flipped = bytearray(data)
    flipped[offsets[2] + 12 + 5] ^= 0x01  # inside the payload of record 2
    damaged("payload.tfrecord", bytes(flipped))
    header = bytearray(data)
    header[offsets[1] + 2] ^= 0x10  # inside the length of record 1
    damaged("header.tfrecord", bytes(header))
    damaged("truncated.tfrecord", data[:-7])  # record 3 loses its footer and 3 payload bytes
    damaged("short.tfrecord", data[: offsets[3] + 5])  # record 3 has only 5 header bytes
    damaged("text.tfrecord", b"name,label\ncat,1\n")
    damaged("gzip.tfrecord.gz", open("good.tfrecord.gz", "rb").read()[:-12])
    return offsets


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_verify_intact_plain_and_gzip_files(files, capsys):
    status, out, err = run(capsys, "verify", "good.tfrecord", "good.tfrecord.gz")
    assert status == 0 and err == ""
    assert out.splitlines() == [
        "good.tfrecord: ok, 4 records",
        "good.tfrecord.gz: ok, 4 records, GZIP",
        "2 of 2 files intact",
    ]


def test_verify_detects_gzip_by_content_not_name_and_accepts_an_empty_file(files, capsys):
    os.rename("good.tfrecord.gz", "renamed.tfrecord")
    open("empty.tfrecord", "wb").close()
    status, out, _ = run(capsys, "verify", "renamed.tfrecord", "empty.tfrecord")
    assert status == 0
    assert out.splitlines()[:2] == [
        "renamed.tfrecord: ok, 4 records, GZIP",
        "empty.tfrecord: ok, 0 records",
    ]


@pytest.mark.parametrize(
    "name, index, reason",
    [
        ("payload.tfrecord", 2, "payload CRC mismatch"),
        ("header.tfrecord", 1, "length CRC mismatch: the record header is damaged"),
        ("truncated.tfrecord", 3, "file ends inside the payload"),
        ("short.tfrecord", 3, "file ends inside a record header (5 of 12 bytes)"),
        ("text.tfrecord", 0, "length CRC mismatch: this is not a TFRecord file"),
    ],
)
def test_verify_names_record_offset_and_reason_of_each_kind_of_damage(
    files, capsys, name, index, reason
):
    status, out, err = run(capsys, "verify", name)
    assert status == 1 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"{name}: record {index} at byte {files[index]}: ")
    assert reason in err
    assert "Traceback" not in err


def test_verify_damaged_gzip_says_the_offset_is_uncompressed(files, capsys):
    status, _, err = run(capsys, "verify", "gzip.tfrecord.gz")
    assert status == 1
    where = f"gzip.tfrecord.gz: record 3 at byte {files[3]} of the uncompressed stream: "
    assert err.startswith(where) and err.endswith("(the compressed stream ends early)\n")


def test_verify_goes_on_after_a_problem_and_reports_every_file(files, capsys, tmp_path):
    status, out, err = run(
        capsys, "verify", "payload.tfrecord", "missing.tfrecord", str(tmp_path), "good.tfrecord"
    )
    assert status == 1
    assert out.splitlines() == ["good.tfrecord: ok, 4 records", "1 of 4 files intact"]
    problems = err.splitlines()
    assert [line.split(":")[0] for line in problems] == [
        "payload.tfrecord",
        "missing.tfrecord",
        str(tmp_path),
    ]
    assert problems[1] == "missing.tfrecord: No such file or directory"
    assert problems[2] == f"{tmp_path}: Is a directory"


UNREADABLE = ["missing.tfrecord", ".", "header.tfrecord", "short.tfrecord", "text.tfrecord"]


def test_verify_inspect_and_index_say_what_is_wrong_with_a_file_in_the_same_words(files, capsys):
    """One reporter for every command: the system's error as ``FILE: reason``, a damaged one
    naming the record and its byte offset; each file its own line, the others still done."""
    said = {
        command: run(capsys, command, *UNREADABLE, "good.tfrecord")
        for command in ("verify", "inspect", "index")
    }
    for status, _, _ in said.values():
        assert status == 1
    assert said["verify"][2].splitlines() == [
        "missing.tfrecord: No such file or directory",
        ".: Is a directory",
        f"header.tfrecord: record 1 at byte {files[1]}: length CRC mismatch: the record header "
        "is damaged",
        f"short.tfrecord: record 3 at byte {files[3]}: file ends inside a record header (5 of 12 "
        "bytes)",
        "text.tfrecord: record 0 at byte 0: length CRC mismatch: this is not a TFRecord file "
        "(or its first header is damaged)",
    ]
    assert said["inspect"][2] == said["verify"][2] == said["index"][2]
    assert said["index"][1] == "good.tfrecord: indexed, 4 records\n"  # the rest is still done
    assert not [name for name in os.listdir() if ".index" in name and "good" not in name]


def test_index_names_the_file_a_failed_write_was_for(files, capsys, monkeypatch):
    """An error of the system while writing the index: the shard, the file written if the error
    names one, the system's reason; no index and no temporary file left behind."""
    from helpers import _commit

    def read_only(path, data):  # as on a read-only mount, where os.access says yes
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    before = sorted(os.listdir())
    with monkeypatch.context() as patched:
        patched.setattr(_commit, "staged", read_only)
        status, out, err = run(capsys, "index", "good.tfrecord")
    assert (status, out) == (1, "")
    assert err == "good.tfrecord: good.tfrecord.index: Read-only file system\n"

    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    assert run(capsys, "index", "good.tfrecord") == (
        1,
        "",
        "good.tfrecord: No space left on device\n",
    )
    assert sorted(os.listdir()) == before


def test_verify_compression_option_overrides_detection(files, capsys):
    status, _, err = run(capsys, "verify", "--compression", "none", "good.tfrecord.gz")
    assert status == 1 and "the file starts like GZIP" in err
    status, out, _ = run(capsys, "verify", "--compression", "GZIP", "good.tfrecord.gz")
    assert status == 0 and out == "good.tfrecord.gz: ok, 4 records, GZIP\n"


def test_inspect_example_file_and_show_one_record(files, capsys):
    status, out, err = run(capsys, "inspect", "good.tfrecord.gz", "--show", "3")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "good.tfrecord.gz: 4 records of tf.train.Example"
    assert lines[3].split() == ["image", "bytes", "1", "40-43", "4", "of", "4"]
    assert lines[4] == "record 3: tf.train.Example with 2 features"
    assert lines[5].split(None, 2) == ["id", "int64", "[3]"]
    assert lines[6].split(None, 2) == ["image", "bytes", f"[<43 bytes {bytes(range(8)).hex()}...>]"]


def test_inspect_separates_the_summaries_of_several_files_by_one_empty_line(files, capsys):
    """One empty line between two files' tables, none before the first or after the last."""
    status, out, err = run(capsys, "inspect", "good.tfrecord", "good.tfrecord.gz")
    assert status == 0 and err == ""
    first, second = out.split("\n\n")
    assert first.splitlines()[0] == "good.tfrecord: 4 records of tf.train.Example"
    assert second.splitlines()[0] == "good.tfrecord.gz: 4 records of tf.train.Example"
    assert first.splitlines()[1:] == second.splitlines()[1:] and len(first.splitlines()) == 4


def test_inspect_sequence_example_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_records("seq.tfrecord", [day(3), day(6)])
    status, out, _ = run(capsys, "inspect", "seq.tfrecord")
    assert status == 0
    assert "seq.tfrecord: 2 records of tf.train.SequenceExample" in out
    assert ["t", "float", "3-6", "2", "-", "2", "of", "2"] in [
        line.split() for line in out.splitlines()
    ]


def test_inspect_reports_damage_and_payloads_that_are_not_examples(files, capsys):
    write_records("png.tfrecord", [numbered(0), b"\x89PNG\r\n\x1a\n" + bytes(30)])
    status, out, err = run(capsys, "inspect", "png.tfrecord", "payload.tfrecord", "good.tfrecord")
    assert status == 1
    problems = err.splitlines()
    assert problems[0].startswith(
        f"png.tfrecord: record 1 at byte {files[1]}: not a tf.train.Example"
    )
    assert "look like a PNG image" in problems[0]
    assert problems[1].startswith(
        f"payload.tfrecord: record 2 at byte {files[2]}: payload CRC mismatch"
    )
    assert "good.tfrecord: 4 records of tf.train.Example" in out


def test_inspect_show_out_of_range(files, capsys):
    status, _, err = run(capsys, "inspect", "good.tfrecord", "--show", "4")
    assert status == 1 and err == "good.tfrecord: --show 4: the file has only 4 records\n"
    write_records("one.tfrecord", [numbered(0)])
    status, _, err = run(capsys, "inspect", "one.tfrecord", "--show", "1")
    assert status == 1 and err == "one.tfrecord: --show 1: the file has only 1 record\n"


README = CHECKOUT / "README.md"
#: ```text blocks of the README that start with ``$ python -m helpers ... --help``
HELP_BLOCK = re.compile(r"```text\n\$ python -m helpers ([^\n]*--help)\n(.*?)```", re.DOTALL)


def test_the_readme_shows_the_help_of_every_command_as_printed(capsys, monkeypatch):
    """Every option, its metavar, default and help as the README documents them."""
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help to the terminal's width
    shown = dict(HELP_BLOCK.findall(README.read_text()))
    refused = run(capsys, "no-such-command")[2]  # the usage error lists every command
    listed = refused.split("choose from ")[1].rstrip().removesuffix(")")
    commands = [name.strip("'") for name in listed.split(", ")]  # quoted in some Pythons
    assert "index" in commands
    assert list(shown) == ["--help", *(f"{name} --help" for name in commands)]
    for command, text in shown.items():
        status, out, _ = run(capsys, *command.split())
        assert status == 0
        assert out == text, f"README.md's `{command}` block is out of date; it prints:\n{out}"


@pytest.mark.parametrize(
    "argv, says",
    [
        ([], "the following arguments are required: COMMAND"),
        (["verify"], "the following arguments are required: FILE"),
        (["inspect", "x", "--show", "-1"], "expected a record index"),
        (["verify", "--compression", "zip", "x"], "expected GZIP, ZLIB or NONE"),
        (
            ["convert-voc", "--split", "train", "--out", "x", "--num-shards", "0"],
            "expected a positive",
        ),
        (
            ["convert-voc", "--split", "train", "--out", "x", "--shards", "two"],
            "expected a positive",
        ),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_usage_exits_2_with_a_message(capsys, argv, says):
    status, _, err = run(capsys, *argv)
    assert status == 2 and says in err


def test_convert_voc_writes_shards_and_refuses_to_overwrite(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOC_ROOT", raising=False)
    argv = ["convert-voc", "--split", "train", "--out", "train", "--num-shards", "2", "--quiet"]
    status, out, err = run(capsys, *argv)
    assert status == 0 and err == ""
    shards = sorted(tmp_path.glob("train-*.tfrecord"))
    assert [p.name for p in shards] == [
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
    ]
    total = sum(p.stat().st_size for p in shards)
    from helpers import voc

    count = len(voc.read_split(voc.sample_root(), "train"))
    assert out == (
        f"wrote split 'train': {count:,} records in 2 files, {total:,} bytes: "
        "train-00000-of-00002.tfrecord ... train-00001-of-00002.tfrecord\n"
    )
    before = {p.name: p.read_bytes() for p in shards}

    status, out, err = run(capsys, *argv)
    assert (status, out) == (1, "")
    exist = "train-00000-of-00002.tfrecord, train-00001-of-00002.tfrecord already exist"
    assert err == f"convert-voc: {exist}; pass --overwrite to replace\n"
    assert {p.name: p.read_bytes() for p in shards} == before

    status, _, _ = run(capsys, *argv, "--overwrite", "--encoding", "encoded")
    assert status == 0
    assert {p.name: p.read_bytes() for p in shards} != before


def test_convert_voc_takes_the_smallest_numbers_and_shows_its_progress(
    tmp_path, capsys, monkeypatch
):
    """One shard and seed 0 are allowed; without --quiet a progress bar goes to stderr."""
    monkeypatch.chdir(tmp_path)
    argv = ["convert-voc", "--split", "train", "--out", "one", "--num-shards", "1"]
    status, out, err = run(capsys, *argv, "--shuffle-seed", "0")
    shard = tmp_path / "one-00000-of-00001.tfrecord"
    records, size = verify(shard), shard.stat().st_size
    assert status == 0 and "100%" in err
    assert (
        out == f"wrote split 'train': {records} records in 1 file, {size:,} bytes: {shard.name}\n"
    )


def test_convert_voc_names_the_first_and_last_of_three_shards(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["convert-voc", "--split", "val", "--out", "v", "--num-shards", "3", "--quiet"]
    status, out, _ = run(capsys, *argv)
    assert status == 0
    assert out.endswith(": v-00000-of-00003.tfrecord ... v-00002-of-00003.tfrecord\n")


def test_inspect_shows_record_0_and_counts_one_record_in_the_singular(tmp_path, capsys):
    path = tmp_path / "one.tfrecord"
    write_records(path, [numbered(0)])
    status, out, err = run(capsys, "inspect", str(path), "--show", "0")
    assert (status, err) == (0, "") and "record 0: tf.train.Example" in out
    assert run(capsys, "verify", str(path)) == (0, f"{path}: ok, 1 record\n", "")


def test_the_installed_command_names_itself_in_its_usage(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/env/bin/tfrecord-helpers"])
    status, out, _ = run(capsys, "--help")
    assert status == 0 and out.startswith("usage: tfrecord-helpers [-h] COMMAND ...")


def test_an_interrupt_is_one_word_and_exit_130(files, capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "verify", interrupted)
    assert run(capsys, "verify", "good.tfrecord") == (130, "", "interrupted\n")


def test_a_closed_pipe_ends_quietly_with_later_output_discarded(files, tmp_path, monkeypatch):
    """``... inspect big.tfrecord | head``: the reader went away; nothing more is written."""
    out = open(tmp_path / "stdout.txt", "w")  # a file of its own: the command redirects its fd

    def reader_gone(*args):
        print("before", file=out, flush=True)
        raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(cli, "verify", reader_gone)
    assert main(["verify", "good.tfrecord"]) == 1
    print("after", file=out, flush=True)  # goes to the null device now
    out.close()
    assert (tmp_path / "stdout.txt").read_text() == "before\n"


def test_verify_piped_into_head_stops_at_the_closed_pipe_quietly(files):
    """Not one "cannot read" per remaining file: the files are fine, the reader left."""
    argv = [sys.executable, "-m", "helpers", "verify", *["good.tfrecord"] * 3000]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    command = subprocess.Popen(argv, **pipes, text=True, env=child_env())
    assert command.stdout.readline() == "good.tfrecord: ok, 4 records\n"
    command.stdout.close()  # as head does after its line
    err = command.stderr.read()
    assert command.wait() == 1 and err == ""


def test_convert_voc_gzip_and_a_missing_root(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(
        capsys, "convert-voc", "--split", "val", "--out", "val", "--compression", "gzip", "--quiet"
    )
    assert status == 0 and "val-00000-of-00001.tfrecord.gz" in out
    assert gzip.decompress((tmp_path / "val-00000-of-00001.tfrecord.gz").read_bytes())
    status, _, err = run(
        capsys, "convert-voc", "--voc-root", "nowhere", "--split", "val", "--out", "x"
    )
    assert (
        status == 1 and len(err.splitlines()) == 1 and "nowhere" in err and "Traceback" not in err
    )


def test_convert_voc_index_writes_each_shards_offsets_for_random_access(tmp_path, capsys):
    from helpers.index import RecordView

    out = tmp_path / "out" / "v"
    argv = ["convert-voc", "--split", "val", "--out", str(out), "--num-shards", "2", "--quiet"]
    assert run(capsys, *argv, "--index")[0] == 0
    shards = sorted(tmp_path.glob("out/v-*.tfrecord"))
    indexes = [p.with_name(p.name + ".index") for p in shards]
    assert all(p.read_text().startswith("0 ") for p in indexes)
    with RecordView(shards) as view:
        assert view[list(range(len(view)))] == [r for p in shards for r in iter_records(p)]
    status, stdout, err = run(capsys, *argv, "--index", "--compression", "GZIP", "--overwrite")
    assert (status, stdout) == (2, "")
    assert err == "convert-voc: --index needs plain shards: compressed ones cannot be indexed\n"


def test_python_m_helpers_help_in_a_subprocess():
    done = subprocess.run(
        [sys.executable, "-m", "helpers", "--help"], capture_output=True, text=True, env=child_env()
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m helpers") and "convert-voc" in done.stdout


@pytest.mark.parametrize(
    "mode", [["--encoding", "raw"], ["--encoding", "encoded"], ["--task", "detection"]]
)
def test_convert_voc_imports_no_tensorflow_and_writes_the_bytes_tensorflow_writes(tmp_path, mode):
    """protobuf alone builds the records: TensorFlow is not imported, and the file is byte for
    byte the one ``tf.io.TFRecordWriter`` writes for the same Examples, as TensorFlow reads them
    back and serializes them (deterministically): the framing and each payload."""
    code = (
        "import sys\n"
        "from helpers.cli import main\n"
        f"status = main(['convert-voc', '--split', 'trainval', '--out', 'x', '--quiet', *{mode}])\n"
        "print(status, 'tensorflow' in sys.modules)\n"
    )
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, cwd=tmp_path, env=child_env(), capture_output=True, text=True)
    assert (done.stderr, done.stdout.splitlines()[-1]) == ("", "0 False")
    written = tmp_path / "x-00000-of-00001.tfrecord"
    records = [record.numpy() for record in tf.data.TFRecordDataset(str(written))]
    assert len(records) >= 9
    with tf.io.TFRecordWriter(str(tmp_path / "by_tensorflow.tfrecord")) as writer:
        for record in records:
            message = tf.train.Example.FromString(record)
            # an image without objects has empty lists, of the right kind, as TensorFlow's have
            assert all(f.WhichOneof("kind") for f in message.features.feature.values())
            writer.write(message.SerializeToString(deterministic=True))
    assert (tmp_path / "by_tensorflow.tfrecord").read_bytes() == written.read_bytes()


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_verify_and_inspect_files_written_by_tensorflow(tmp_path, capsys, monkeypatch, compression):
    monkeypatch.chdir(tmp_path)
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter("tf.tfrecord", options=options) as writer:
        for index in range(3):
            writer.write(numbered(index))
    status, out, err = run(capsys, "verify", "tf.tfrecord")
    kind = f", {compression}" if compression else ""
    assert (status, out, err) == (0, f"tf.tfrecord: ok, 3 records{kind}\n", "")
    status, out, _ = run(capsys, "inspect", "tf.tfrecord")
    assert status == 0 and out.startswith("tf.tfrecord: 3 records of tf.train.Example")


def test_convert_voc_accepts_the_old_shards_spelling_and_writes_zlib(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOC_ROOT", raising=False)
    argv = ["convert-voc", "--split", "val", "--out", "v", "--shards", "2", "--quiet"]
    status, out, err = run(capsys, *argv, "--compression", "zlib")
    assert (status, err) == (0, "")
    paths = sorted(tmp_path.glob("v-*"))
    assert [p.name for p in paths] == [f"v-0000{i}-of-00002.tfrecord.zz" for i in range(2)]
    dataset = tf.data.TFRecordDataset([str(p) for p in paths], compression_type="ZLIB")
    assert sum(1 for _ in dataset) == int(out.split("'val': ")[1].split()[0])


def copy_sample(tmp_path):
    """A writable copy of the embedded VOC sample."""
    import shutil

    from helpers import voc

    return Path(shutil.copytree(voc.sample_root(), tmp_path / "VOC2012"))


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_convert_voc_names_a_broken_jpeg_and_leaves_nothing(tmp_path, capsys, monkeypatch, damage):
    root = copy_sample(tmp_path)
    image_id = (root / "ImageSets" / "Segmentation" / "val.txt").read_text().split()[0]
    jpeg = root / "JPEGImages" / f"{image_id}.jpg"
    data = jpeg.read_bytes()
    jpeg.write_bytes(b"this is not a JPEG" if damage == "garbage" else data[: len(data) // 2])
    out_dir = tmp_path / "out"
    argv = ["convert-voc", "--voc-root", str(root), "--split", "val", "--out", str(out_dir / "v")]
    status, out, err = run(capsys, *argv, "--encoding", "encoded", "--quiet")
    assert status == 1 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert image_id in err and f"{image_id}.jpg" in err
    assert not out_dir.exists()  # nor the folder it would have made


def claim_size(jpeg: bytes, width: int, height: int) -> bytes:
    """The same JPEG with its frame header (SOF0 or SOF2) claiming another size."""
    start = next(i for i in range(len(jpeg) - 1) if jpeg[i] == 0xFF and jpeg[i + 1] in (0xC0, 0xC2))
    sizes = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return jpeg[: start + 5] + sizes + jpeg[start + 9 :]


@pytest.mark.parametrize(
    "mode", [["--encoding", "raw"], ["--encoding", "encoded"], ["--task", "detection"]]
)
def test_convert_voc_refuses_a_decompression_bomb_in_one_line(tmp_path, capsys, mode):
    """A small JPEG whose header claims 30000 x 30000 pixels: named, not decoded, exit 1."""
    root = copy_sample(tmp_path)
    split = "Main" if "detection" in mode else "Segmentation"
    image_id = (root / "ImageSets" / split / "val.txt").read_text().split()[0]
    jpeg = root / "JPEGImages" / f"{image_id}.jpg"
    jpeg.write_bytes(claim_size(jpeg.read_bytes(), 30000, 30000))
    out_dir = tmp_path / "out"
    argv = ["convert-voc", "--voc-root", str(root), "--split", "val", "--out", str(out_dir / "v")]
    status, out, err = run(capsys, *argv, *mode, "--quiet")
    assert status == 1 and out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and f"'{image_id}' is too large" in err, err
    assert f"{image_id}.jpg" in err and "900000000 pixels" in err
    assert not out_dir.exists()  # no shard, no temporary file, no folder


def written_filenames(paths) -> list[bytes]:
    """The ``filename`` feature of every record, shard by shard, in file order."""
    names = []
    for path in paths:
        for payload in iter_records(path):
            names.append(tf.train.Example.FromString(payload).features.feature["filename"])
    return [feature.bytes_list.value[0] for feature in names]


def test_convert_voc_shuffle_seed_writes_a_seeded_permutation(tmp_path, capsys, monkeypatch):
    from helpers import voc
    from helpers.shuffle import permutation

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOC_ROOT", raising=False)
    ids = voc.read_split(voc.sample_root(), "trainval")
    base = ["convert-voc", "--split", "trainval", "--quiet"]
    orders = {}
    for name, extra in [
        ("plain", []),
        ("seed7", ["--shuffle-seed", "7"]),
        ("seed8", ["--shuffle-seed", "8"]),
    ]:
        status, _, err = run(capsys, *base, "--out", name, *extra)
        assert status == 0 and err == ""
        orders[name] = written_filenames([f"{name}-00000-of-00001.tfrecord"])
    assert orders["plain"] == [f"{i}.jpg".encode() for i in ids]
    expected = [f"{ids[i]}.jpg".encode() for i in permutation(len(ids), 7)]
    assert orders["seed7"] == expected and orders["seed7"] != orders["plain"]
    assert sorted(orders["seed8"]) == sorted(orders["plain"]) and orders["seed8"] != orders["seed7"]

    # Two shards deal the same seeded order round-robin: shard k holds positions k, k+2, ...
    status, _, _ = run(capsys, *base, "--out", "two", "--shuffle-seed", "7", "--num-shards", "2")
    assert status == 0
    shards = [f"two-0000{k}-of-00002.tfrecord" for k in range(2)]
    assert [written_filenames([s]) for s in shards] == [expected[0::2], expected[1::2]]


BEAM_ONLY = "convert-voc: --beam-option and --verbose need --engine beam\n"


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--beam-option=--runner=FlinkRunner"], BEAM_ONLY),
        (["--verbose"], BEAM_ONLY),
        (["--shuffle-seed", "-1"], "non-negative"),
        (["--task", "boxes"], "invalid choice"),
    ],
)
def test_convert_voc_refuses_options_that_do_not_fit(tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "convert-voc", "--split", "train", "--out", "x", *argv)
    assert status == 2 and out == "" and says in err
    assert not list(tmp_path.iterdir())


def test_a_failure_of_beam_itself_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    from helpers import beam

    def fails(*args, **kwargs):
        raise RuntimeError("the runner went away")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(beam, "convert_with_beam", fails)
    status, out, err = run(
        capsys, "convert-voc", "--split", "train", "--out", "x", "--engine", "beam"
    )
    assert status == 1 and out == "" and len(err.splitlines()) == 1
    assert "the Beam pipeline failed: the runner went away" in err and "Traceback" not in err


def test_index_writes_both_forms_checks_them_and_names_what_is_wrong(tmp_path, capsys, monkeypatch):
    from helpers.index import RecordView

    monkeypatch.chdir(tmp_path)
    write_records("a.tfrecord", [numbered(i) for i in range(5)])
    write_records("b.tfrecord", [numbered(i) for i in range(3)])
    assert run(capsys, "index", "a.tfrecord", "b.tfrecord") == (
        0,
        "a.tfrecord: indexed, 5 records\nb.tfrecord: indexed, 3 records\n",
        "",  # no progress bar: stderr is not a terminal here
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}.tfrecord{end}" for name in "ab" for end in ("", ".index", ".index.npy")
    )
    with RecordView(["a.tfrecord", "b.tfrecord"]) as view:
        assert view.index_nbytes == 0 and len(view) == 8
    assert run(capsys, "index", "--check", "a.tfrecord") == (
        0,
        "a.tfrecord: index ok, 5 records\n",
        "",
    )
    os.remove("b.tfrecord.index.npy")
    lines = open("b.tfrecord.index").read().splitlines()
    first, second = (line.split() for line in lines[:2])
    swapped = [f"0 {second[1]}", f"{second[1]} {first[1]}", *lines[2:]]  # tiles, but wrong
    open("b.tfrecord.index", "w").write("\n".join(swapped) + "\n")
    status, out, err = run(capsys, "index", "--check", "b.tfrecord", "a.tfrecord")
    assert (status, out) == (1, "a.tfrecord: index ok, 5 records\n")
    assert err.startswith("b.tfrecord: record 0 at byte 0: no header of 71 payload bytes where")
    assert (
        err.endswith("rebuild it (python -m helpers index b.tfrecord)\n")
        and len(err.splitlines()) == 1
    )


def test_index_shows_no_traceback_for_any_file_it_cannot_index(files):
    """In a process of its own, as a user runs it: a missing file, a folder, a GZIP file and each
    kind of damage get one line each, and the intact file is still indexed."""
    names = ["missing.tfrecord", ".", "good.tfrecord.gz", "header.tfrecord", "truncated.tfrecord"]
    names += ["short.tfrecord", "text.tfrecord", "good.tfrecord"]
    argv = [sys.executable, "-m", "helpers", "index", *names]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=child_env())
    assert (done.returncode, done.stdout) == (1, "good.tfrecord: indexed, 4 records\n")
    lines = done.stderr.splitlines()
    assert [line.split(": ")[0] for line in lines] == names[:-1], done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p for p in os.listdir() if ".index" in p) == [
        "good.tfrecord.index",
        "good.tfrecord.index.npy",
    ]


def test_index_refuses_compressed_missing_and_unwritable_in_one_line_each(
    files, capsys, monkeypatch
):
    status, out, err = run(capsys, "index", "good.tfrecord.gz", "missing.tfrecord")
    assert (status, out) == (1, "") and "Traceback" not in err
    assert err.splitlines()[0].startswith(
        "good.tfrecord.gz: a GZIP-compressed TFRecord file cannot"
    )
    assert "missing.tfrecord" in err.splitlines()[1] and len(err.splitlines()) == 2
    status, out, err = run(capsys, "index", "--check", "good.tfrecord")
    assert status == 1 and err == "good.tfrecord: no index: write one (python -m helpers index)\n"
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as a read-only folder
    status, out, err = run(capsys, "index", "good.tfrecord")
    assert (status, out) == (1, "") and len(err.splitlines()) == 1
    assert "cannot write an index into this folder: copy the shards to a folder" in err
    assert not os.path.exists("good.tfrecord.index")
