"""Output files: their names, and a commit that puts them in place whole and all together
(notebook 04, "Make the writer sturdy" shows what a writer without one leaves behind). Each file is
synced under a hidden temporary name; :func:`commit` renames them under the folder's lock,
after a journal of the renames that the next write into the folder redoes if a kill cut them
short. Every writer goes through :func:`committing`.
"""

import contextlib
import fcntl
import json
import os
import re
import secrets
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from helpers._checks import PathLike, check_compression, check_int

SUFFIX = {None: ".tfrecord", "GZIP": ".tfrecord.gz", "ZLIB": ".tfrecord.zz"}


def shard_paths(
    prefix: PathLike, num_shards: int, compression: str | None = None, index: bool = False
) -> list[Path]:
    """``<prefix>-00000-of-00004.tfrecord`` (``.tfrecord.gz`` for GZIP, ``.zz`` for ZLIB);
    TypeError or ValueError for a bad ``num_shards`` or ``compression``, or with ``index``."""
    num_shards = check_int(num_shards, "num_shards", minimum=1)
    prefix = Path(prefix)
    suffix = SUFFIX[check_compression(compression)]
    if index and compression:
        raise ValueError(f"index=True needs plain files: a {compression} file cannot be indexed")
    names = (f"{prefix.name}-{i:05d}-of-{num_shards:05d}{suffix}" for i in range(num_shards))
    return [prefix.with_name(name) for name in names]


def temp_path(path: Path, tag: str = "") -> Path:
    """A hidden name next to ``path`` that carries this process's id: ``.NAME.PID-TAGHEX.tmp``."""
    return path.parent / f".{path.name}.{os.getpid()}-{tag}{secrets.token_hex(4)}.tmp"


def staged(path: Path, data: bytes | Iterable[bytes | memoryview]) -> tuple[Path, Path]:
    """Write ``data`` (or its pieces, one after the other) to a synced temporary file next to
    ``path``: the pair to :func:`commit`."""
    temp = temp_path(path)
    try:
        with open(temp, "xb") as file:
            file.writelines([data] if isinstance(data, bytes) else data)
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp, path


_INSIDE = (os.path.dirname(__file__) + os.sep, contextlib.__file__)  # helpers' frames, contextlib's


def _warn(message: str) -> None:
    """A UserWarning that points at the line of the write, the first caller outside helpers
    (Python 3.12's ``skip_file_prefixes``; the project supports 3.11)."""
    frame = sys._getframe(1)
    level = 2  # that frame's
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, stacklevel=level)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[int]:
    """Hold the folder's lock (``flock``; other helpers writers wait), redo the renames of the
    journals that killed writers left; yield the folder's descriptor."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for journal in sorted(folder.glob(".*.commit")):
            try:
                pairs = [(str(temp), str(path)) for temp, path in json.loads(journal.read_bytes())]
            except (ValueError, TypeError):  # empty or cut short: no rename had started
                pairs = []
            for temp, path in pairs:
                if os.path.exists(temp):
                    os.replace(temp, path)
            os.fsync(fd)
            journal.unlink()
            os.fsync(fd)
            message = f"dropped the journal {journal.name}, not whole"
            if pairs:
                names = ", ".join(Path(path).name for _, path in pairs)
                message = f"finished an interrupted write in {folder}: {names}"
            _warn(message)
        yield fd
    finally:
        os.close(fd)  # releases the lock, as the death of the process does


def temporaries(paths: Sequence[Path]) -> list[Path]:
    """The files named ``.NAME.*.tmp`` beside ``paths`` (all in one folder), for the NAME of one
    of them, in name order: what their writers have not renamed (no glob: a ``[`` in a name is
    itself)."""
    if not paths:
        return []
    folder = paths[0].parent
    names = {path.name for path in paths}
    found = []
    for name in sorted(os.listdir(folder)):  # the warning lists them in this order
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        inner = name[1:-4]  # NAME.PID-TAGHEX, and NAME may hold dots
        if any(inner[:at] in names for at, char in enumerate(inner) if char == "."):
            found.append(folder / name)
    return found


def _writer_is_dead(temp: Path) -> bool:
    """Whether the process whose id a :func:`temp_path` carries is gone (no id: an old name)."""
    pid = re.search(r"\.(\d+)-\w*\.tmp$", temp.name)
    if pid is None:
        return True
    with contextlib.suppress(PermissionError):  # alive, another user's
        try:
            os.kill(int(pid[1]), 0)
        except ProcessLookupError:
            return True
    return False


def prepare(paths: list[Path], overwrite: bool) -> None:
    """Before writing ``paths``: finish killed writers' commits, remove their temporary files.
    FileNotFoundError without their folder; FileExistsError if one exists, unless ``overwrite``."""
    folder = paths[0].parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {paths[0]}: its folder {folder} does not exist")
    with _locked(folder):
        stale = [temp for temp in temporaries(paths) if _writer_is_dead(temp)]
        for temp in stale:
            temp.unlink(missing_ok=True)
    if stale:
        names = ", ".join(t.name for t in stale)
        message = f"removed {len(stale)} temporary file(s) left by a writer that was killed"
        _warn(f"{message} in {folder}: {names}")
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        verb = "exists" if len(existing) == 1 else "exist"
        message = f"{', '.join(existing)} already {verb}; pass overwrite=True to replace"
        raise FileExistsError(message)


def commit(pairs: list[tuple[Path, Path]], overwrite: bool) -> None:
    """Rename each synced temporary file over its path, as one commit, under the folder's lock
    (of two writers the last wins, whole). FileExistsError if a path appeared since
    :func:`prepare`, unless ``overwrite``; a failed rename's OSError (the renames before stay)."""
    first = pairs[0][1]
    folder = first.parent
    journal = folder / f".{first.name}.{os.getpid()}.commit"
    try:
        with _locked(folder) as fd:
            existing = [str(path) for _, path in pairs if path.exists()]
            if existing and not overwrite:  # another writer committed since prepare
                raise FileExistsError(f"{', '.join(existing)} appeared while this write ran")
            if len(pairs) > 1:  # one rename is atomic by itself; several need the journal
                text = json.dumps([[str(temp), str(path)] for temp, path in pairs])
                os.replace(staged(first, text.encode())[0], journal)
                os.fsync(fd)
            try:
                for temp, path in pairs:
                    os.replace(temp, path)
            except OSError:
                journal.unlink(missing_ok=True)  # the next write could not finish it either
                raise
            os.fsync(fd)  # the renames are on disk before the journal goes
            journal.unlink(missing_ok=True)
            os.fsync(fd)
    finally:
        if not journal.exists():  # else the next write into the folder finishes the commit
            for temp, _ in pairs:
                temp.unlink(missing_ok=True)


@contextlib.contextmanager
def committing(paths: list[Path], overwrite: bool) -> Iterator[list[tuple[Path, Path]]]:
    """Write ``paths`` all together or not at all: :func:`prepare` them, yield a list to which
    the block adds each ``(temporary, final)`` pair it writes, and :func:`commit` them when it
    ends well. Raises as they do, or what the block raises, once the temporary files (and what
    writers into their names left: beam's killed workers) are gone."""
    prepare(paths, overwrite)
    pairs: list[tuple[Path, Path]] = []
    try:
        try:
            yield pairs
        except BaseException:
            for temp, _ in pairs:
                temp.unlink(missing_ok=True)
            raise
        commit(pairs, overwrite)
    finally:
        for leftover in temporaries([temp for temp, _ in pairs]):
            leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def output_folder(prefix: PathLike) -> Iterator[None]:
    """Create the folder of ``prefix`` as needed; if the work inside fails, remove what it made."""
    folder = Path(prefix).absolute().parent
    missing = [f for f in (folder, *folder.parents) if not f.exists()]  # deepest first
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for made in missing:
            with contextlib.suppress(OSError):  # not empty: another process wrote there too
                made.rmdir()
        raise
