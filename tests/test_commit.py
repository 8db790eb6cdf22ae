"""helpers._commit: a commit is all or nothing, on disk, whatever kills the writer and when.

Faults are injected in a child process that writes a new set of files over an old one and
dies (``os._exit``, no clean-up) at its k-th file-system operation: each rename, fsync,
unlink and staged (small, synced) file write of the commit, for every k. After the next write
into the folder every set holds the old files or the new ones, complete, and nothing else is
left. A journal that is empty or cut short (a power cut before its data reached the disk) is
dropped, not a reason for every later write to fail.
"""

import errno
import json
import os
import re
import subprocess
import sys
import warnings

import pytest

from helpers import _commit
from helpers._commit import (
    commit,
    committing,
    prepare,
    shard_paths,
    staged,
    temp_path,
    temporaries,
)
from helpers.index import RecordView
from helpers.records import iter_records, write_records, write_sharded

_DIE_AT_OPERATION = """
import os, sys
from helpers import _commit
from helpers.records import write_records, write_sharded

count, die_at = 0, int(sys.argv[2])

def counted(real):
    def operation(*args, **kwargs):
        global count
        count += 1
        if count == die_at:
            os._exit(86)  # a kill: no finally, no clean-up
        return real(*args, **kwargs)
    return operation

for name in ("replace", "fsync", "unlink"):
    setattr(os, name, counted(getattr(os, name)))
_commit.staged = counted(_commit.staged)
if sys.argv[3] == "sharded":
    write_sharded(sys.argv[1], [b"new set"] * 3, 3, overwrite=True, index=True)
else:
    write_records(sys.argv[1], [b"new set"], overwrite=True)
print(count)
"""


def write_in_child(target, die_at, kind):
    """Run the new write with a kill at operation ``die_at`` (0: none); (status, operations)."""
    argv = [sys.executable, "-c", _DIE_AT_OPERATION, str(target), str(die_at), kind]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 86), done.stderr
    return done.returncode, int(done.stdout) if done.returncode == 0 else None


def indexes_fit(paths):
    """Whether each shard's ``.index`` describes it (old and new records differ in length)."""
    expected = [f"0 {16 + len(next(iter_records(path)))}\n" for path in paths]
    found = [path.with_name(path.name + ".index").read_text() for path in paths]
    with RecordView(paths) as view:  # and a view reads them
        assert [view[i] for i in range(len(view))] == [r for p in paths for r in iter_records(p)]
    return found == expected


def next_write_then_check(folder, paths, others):
    """Any write into the folder, then: old or new, complete; nothing left once rewritten."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_records(folder / "other.tfrecord", [b"x"], overwrite=True)
        found = [list(iter_records(path)) for path in paths]
        assert found in ([[b"old"]] * len(paths), [[b"new set"]] * len(paths)), found
        assert not list(folder.glob(".*.commit"))
        if paths[0].name.endswith("-of-00003.tfrecord"):
            assert indexes_fit(paths)
            write_sharded(paths[0].parent / "train", [b"again"] * 3, 3, overwrite=True, index=True)
        else:
            write_records(paths[0], [b"again"], overwrite=True)
    assert sorted(p.name for p in folder.iterdir()) == sorted(others)
    return found[0][0]


@pytest.mark.parametrize("kind", ["sharded", "one file"])
def test_a_kill_at_any_operation_of_a_write_leaves_the_old_or_the_new_set(tmp_path, kind):
    def fresh(k):
        folder = tmp_path / f"kill-{k}"
        folder.mkdir()
        if kind == "sharded":
            paths = write_sharded(folder / "train", [b"old"] * 3, 3, index=True)
            return (
                folder,
                paths,
                folder / "train",
                [p.name + end for p in paths for end in ("", ".index", ".index.npy")],
            )
        path = folder / "one.tfrecord"
        write_records(path, [b"old"])
        return folder, [path], path, [path.name]

    folder, paths, target, names = fresh(0)
    status, operations = write_in_child(target, 0, kind)
    assert status == 0 and [list(iter_records(p)) for p in paths] == [[b"new set"]] * len(paths)
    assert operations >= (14 if kind == "sharded" else 3)  # the fsyncs, renames and unlinks
    outcomes = set()
    for k in range(1, operations + 1):
        folder, paths, target, names = fresh(k)
        status, _ = write_in_child(target, k, kind)
        assert status == 86, f"operation {k} of {operations} did not die"
        outcomes.add(next_write_then_check(folder, paths, names + ["other.tfrecord"]))
    assert outcomes == {b"old", b"new set"}, "early kills leave the old set, later ones the new"


def dead_pid():
    code = "import os; print(os.getpid())"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize("journal_text", ["", '[[".train-00000-of-00002.tfrecord.1', "{}", "[1]"])
def test_an_empty_or_torn_journal_is_dropped_and_the_old_set_stays(tmp_path, journal_text):
    paths = write_sharded(tmp_path / "train", [b"old 0", b"old 1"], 2)
    pid = dead_pid()
    temps = [tmp_path / f".{path.name}.{pid}-0123abcd.tmp" for path in paths]
    for temp in temps:  # what a writer that died before its journal was whole left
        write_records(temp, [b"new"])
    journal = tmp_path / f".{paths[0].name}.{pid}.commit"
    journal.write_text(journal_text)
    with pytest.warns(UserWarning, match=f"dropped the journal {journal.name}, not whole"):
        write_records(tmp_path / "other.tfrecord", [b"x"])
    assert not journal.exists()
    assert [list(iter_records(p)) for p in paths] == [[b"old 0"], [b"old 1"]]
    with pytest.warns(UserWarning, match="removed 2 temporary file"):
        write_sharded(tmp_path / "train", [b"a", b"b"], 2, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in paths] + ["other.tfrecord"]
    )


def test_a_whole_journal_is_finished_by_the_next_prepare(tmp_path):
    paths = shard_paths(tmp_path / "train", 2)
    pairs = [staged(path, f"new {i}".encode()) for i, path in enumerate(paths)]
    journal = tmp_path / f".{paths[0].name}.{dead_pid()}.commit"
    journal.write_text(json.dumps([[str(t), str(p)] for t, p in pairs]))
    with pytest.warns(UserWarning, match="finished an interrupted write in .*: train-00000"):
        prepare([tmp_path / "other"], overwrite=False)
    assert [p.read_bytes() for p in paths] == [b"new 0", b"new 1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]


def logged_commit(pairs, monkeypatch) -> list[str]:
    """The fsyncs and renames, in order, of ``commit(pairs, overwrite=False)``."""
    log = []
    real_fsync = _commit.os.fsync
    real_replace = _commit.os.replace

    def fsync(fd):
        log.append("fsync")
        real_fsync(fd)

    def replace(source, target):
        log.append(f"rename to {target.name if hasattr(target, 'name') else target}")
        real_replace(source, target)

    monkeypatch.setattr(_commit.os, "fsync", fsync)
    monkeypatch.setattr(_commit.os, "replace", replace)
    commit(pairs, overwrite=False)
    return log


def test_the_journal_is_synced_before_it_is_named(tmp_path, monkeypatch):
    """The order of a commit of two files: journal data synced, named, folder synced; renames;
    folder synced; journal removed; folder synced."""
    paths = shard_paths(tmp_path / "x", 2)
    pairs = [staged(path, b"data") for path in paths]
    log = logged_commit(pairs, monkeypatch)
    journal = f".{paths[0].name}.{_commit.os.getpid()}.commit"
    assert log == [
        "fsync",  # the journal's data
        f"rename to {journal}",
        "fsync",  # the folder: the journal has its name
        f"rename to {paths[0].name}",
        f"rename to {paths[1].name}",
        "fsync",
        "fsync",  # the journal is gone
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]


def test_one_file_is_committed_by_one_rename_without_a_journal(tmp_path, monkeypatch):
    """A rename is atomic by itself: the journal is for sets of files."""
    path = tmp_path / "a.tfrecord"
    log = logged_commit([staged(path, b"data")], monkeypatch)
    assert log == ["rename to a.tfrecord", "fsync", "fsync"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.tfrecord"]


def test_files_that_appeared_before_the_commit_are_all_named_and_kept(tmp_path):
    paths = shard_paths(tmp_path / "x", 2)
    pairs = [staged(path, b"new") for path in paths]
    for path in paths:
        path.write_bytes(b"another writer's")
    with pytest.raises(FileExistsError) as caught:
        commit(pairs, overwrite=False)
    assert str(caught.value) == f"{paths[0]}, {paths[1]} appeared while this write ran"
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]
    assert all(path.read_bytes() == b"another writer's" for path in paths)


def test_temp_path_names_the_file_and_this_process(tmp_path):
    temp = temp_path(tmp_path / "a.tfrecord", "beam")
    assert temp.parent == tmp_path
    assert temp.name.startswith(f".a.tfrecord.{_commit.os.getpid()}-beam")
    assert temp.name.endswith(".tmp") and temp != temp_path(tmp_path / "a.tfrecord", "beam")


def test_temp_path_without_a_tag_is_name_pid_and_8_hex_digits(tmp_path):
    """``.NAME.PID-HEX.tmp``: 4 random bytes, as the docstring says."""
    pid = _commit.os.getpid()
    name = temp_path(tmp_path / "a.tfrecord").name
    assert re.fullmatch(rf"\.a\.tfrecord\.{pid}-[0-9a-f]{{8}}\.tmp", name), name


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ, reason="make mutation's trampolines add stack frames"
)
def test_the_warning_about_a_killed_writers_files_points_at_the_callers_line(tmp_path):
    (tmp_path / ".a.tfrecord.old.tmp").write_bytes(b"half a record")  # no process id: stale
    with pytest.warns(UserWarning, match="removed 1 temporary file") as caught:
        write_records(tmp_path / "a.tfrecord", [b"x"])
    assert [warning.filename for warning in caught] == [__file__]


def test_a_stale_temporary_file_removed_meanwhile_is_no_error(tmp_path, monkeypatch):
    """Another process (``make clean``) may remove it between the listing and the removal."""
    temp = tmp_path / ".a.tfrecord.1-0123abcd.tmp"
    temp.write_bytes(b"half a record")

    def dead_and_cleaned_up(pid, signal):
        temp.unlink()
        raise ProcessLookupError(pid)

    monkeypatch.setattr(_commit.os, "kill", dead_and_cleaned_up)
    with pytest.warns(UserWarning, match="removed 1 temporary file"):
        prepare([tmp_path / "a.tfrecord"], overwrite=False)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_removes_the_journal_and_the_temporary_files(tmp_path):
    paths = shard_paths(tmp_path / "x", 2)
    pairs = [staged(path, b"data") for path in paths]
    paths[1].mkdir()
    with pytest.raises(IsADirectoryError):
        commit(pairs, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]
    write_records(tmp_path / "next.tfrecord", [b"x"])  # no journal to finish: no warning


def test_a_failed_rename_of_one_file_raises_its_own_error(tmp_path):
    """No journal to remove: the rename's error is raised, not the clean-up's."""
    path = tmp_path / "a.tfrecord"
    pair = staged(path, b"data")
    path.mkdir()
    with pytest.raises(IsADirectoryError):
        commit([pair], overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["a.tfrecord"]


def test_a_live_writer_of_another_user_keeps_its_temporary_file(tmp_path, monkeypatch):
    """Probing another user's process (signal 0) is refused: it is alive, its file stays."""
    calls = []

    def kill(pid, signal):
        calls.append((pid, signal))
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(_commit.os, "kill", kill)
    temp = tmp_path / ".a.tfrecord.1-0123abcd.tmp"
    temp.write_bytes(b"half a record")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "removed ... temporary file(s)"
        prepare([tmp_path / "a.tfrecord"], overwrite=False)
    assert temp.read_bytes() == b"half a record"
    assert calls == [(1, 0)]


def test_a_staged_file_that_cannot_be_created_raises_its_own_error(tmp_path, monkeypatch):
    """A full disk at creation is the error raised, not the clean-up's of a file never made."""

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_commit, "open", full_disk, raising=False)
    with pytest.raises(OSError, match="No space left on device"):
        staged(tmp_path / "a.tfrecord", b"data")
    assert list(tmp_path.iterdir()) == []


def test_temporaries_are_found_by_name_not_by_pattern(tmp_path):
    """``[1]`` in a name is those three characters; a glob would take it for the class of 1."""
    mine = tmp_path / ".a[1].tfrecord.12-0123abcd.tmp"
    others = [".a1.tfrecord.12-0123abcd.tmp", ".b.tfrecord.12-0123abcd.tmp", "a[1].tfrecord"]
    for name in [mine.name, *others]:
        (tmp_path / name).write_bytes(b"")
    assert temporaries([tmp_path / "a[1].tfrecord"]) == [mine]
    assert temporaries([]) == []


def test_a_failed_block_leaves_no_temporary_file_nor_one_written_into_it(tmp_path):
    path = tmp_path / "a[1].tfrecord"
    with pytest.raises(OSError, match="pretend"), committing([path], overwrite=False) as pairs:
        pairs.append(staged(path, b"data"))
        temp = pairs[0][0]
        temp.with_name(f".{temp.name}.12-0123abcd.tmp").write_bytes(b"a killed writer's")
        raise OSError("No space left on device (pretend)")
    assert list(tmp_path.iterdir()) == []


def test_a_block_that_ends_well_commits_every_pair_it_added(tmp_path):
    paths = shard_paths(tmp_path / "a[1]", 2)
    with committing(paths, overwrite=False) as pairs:
        pairs += [staged(path, f"shard {i}".encode()) for i, path in enumerate(paths)]
        assert not any(path.exists() for path in paths)  # nothing is in place before the end
        temp = pairs[1][0]
        temp.with_name(f".{temp.name}.12-0123abcd.tmp").write_bytes(b"a killed writer's")
    assert [path.read_bytes() for path in paths] == [b"shard 0", b"shard 1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]
