"""Random access to plain TFRecord files (notebook 04): :func:`write_index` saves the walk of
:func:`build_index` as ``<shard>.index`` (``tfrecord2idx``'s ``start length`` lines) and
``<shard>.index.npy`` (int64: size, ``st_mtime_ns``, the ``n + 1`` boundaries), read by views."""

import bisect
import contextlib
import functools
import itertools
import operator
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import helpers._framing as framing
from helpers._checks import PathLike, check_paths
from helpers._commit import commit, staged_index
from helpers._framing import RecordError, check_header, check_payload
from helpers.records import detect_compression

_identity = operator.attrgetter("st_size", "st_ino")  # of os.stat: a changed or replaced file
_indexed = operator.attrgetter("st_size", "st_mtime_ns")  # what a binary index remembers
_SAMPLE = 1024  # headers an opening view checks in each file, spread from the first to the last
_THREADS, _SLICE, _PROBE = 8, 16, 8  # a batch on a cold cache: up to 8 threads, 16 reads each
_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: a read that fails if it would wait


def build_index(path: str | os.PathLike) -> np.ndarray:
    """The ``n + 1`` record boundaries (int64) of a plain file (record ``i`` spans ``[b[i],
    b[i + 1])``), every header checked. ValueError for a GZIP or ZLIB file, RecordError for a
    damaged or cut header or a record past the end or over 256 MiB, FileNotFoundError."""
    path = Path(path)
    if compression := detect_compression(path):
        raise ValueError(
            f"{path}: a {compression}-compressed TFRecord file cannot be indexed: record i has "
            "no fixed byte offset in it. Write a plain copy with helpers.records.write_records "
            f"(iter_records(path, {compression!r})) and index that."
        )
    parts, offset, number, unpack = [], 0, 0, framing.LENGTH.unpack_from
    with open(path, "rb", buffering=0) as file:
        size = os.fstat(file.fileno()).st_size
        while offset < size:  # a mebibyte at a time, walked from header to header
            file.seek(offset)
            chunk = file.read(framing.CHUNK)
            here, position, last = [], 0, len(chunk) - framing.HEADER_SIZE
            while position <= last:
                here.append(position)
                position += unpack(chunk, position)[0] + framing.FRAME_SIZE
            if not here:  # fewer than 12 bytes left
                check_header(chunk, path, number, offset)
            headers = framing.headers_at(chunk, np.array(here))
            bad = framing.bad_headers(headers) | (headers["length"] > framing.MAX_RECORD_BYTES)
            if bad.any():  # the first bad header says why
                k, limit = int(bad.argmax()), framing.MAX_RECORD_BYTES
                check_header(chunk[here[k] :], path, number + k, offset + here[k], limit)
            parts.append(np.array(here, np.int64) + offset)
            number, offset = number + len(here), offset + position
    if offset > size:  # the last record runs past the end
        start = int(parts[-1][-1])
        left, length = size - start - framing.HEADER_SIZE, offset - start - framing.FRAME_SIZE
        framing.check_size(left, length, path, number - 1, start)
    return np.concatenate([*parts, [offset]])


def _wrong(path: Path, bounds: np.ndarray, number: int, why: str) -> RecordError:
    """The error for an index that does not describe its file, at record ``number``."""
    why += f": the index does not describe this file: rebuild it (python -m helpers index {path})"
    return RecordError(path, number, int(bounds[min(number, len(bounds) - 1)]), why)


def _tiling(path: Path, bounds: np.ndarray, size: int, picks: np.ndarray, lengths: object = None):
    """RecordError unless ``bounds`` run from 0 to ``size`` and give the records ``picks`` (sorted,
    the first and the last among them) 16 bytes or more each, in order (and ``lengths``)."""
    if len(bounds) == 1 and size:
        raise _wrong(path, bounds * 0, 0, f"the index has no record, the file {size} bytes")
    starts, ends = bounds[picks], bounds[picks + 1]
    lengths = ends - starts if lengths is None else lengths
    bad = (lengths != ends - starts) | (lengths < framing.FRAME_SIZE) | (starts[:1] != 0)
    bad |= (starts < np.append(0, ends[:-1])) | (picks == len(bounds) - 2) & (ends != size)
    if bad.any():
        k = int(bad.argmax())
        says = f"the index gives it bytes {starts[k]}-{starts[k] + lengths[k]} of {size}"
        raise _wrong(path, bounds, int(picks[k]), says)


def _saved_index(path: Path, stat: os.stat_result) -> np.ndarray | None:
    """The boundaries mapped from ``<path>.index.npy`` made for this size and time of the file,
    else those of ``<path>.index``, its tiling checked; None if neither."""
    with contextlib.suppress(OSError, ValueError):  # none, or not a NumPy file: not trusted
        mapped = np.load(path.with_name(path.name + framing.BINARY_SUFFIX), mmap_mode="r")
        if mapped.dtype == np.int64 and mapped.shape[0] > 2 and [*_indexed(stat)] == [*mapped[:2]]:
            return mapped[2:]
    try:
        text = path.with_name(path.name + framing.INDEX_SUFFIX).read_text()
        pairs = np.array(text.split(), dtype=np.int64).reshape(-1, 2)
    except FileNotFoundError:
        return None
    except ValueError:  # not pairs of numbers
        raise _wrong(path, np.zeros(1, np.int64), 0, "not 'start length' lines") from None
    bounds = np.append(pairs[:, 0], stat.st_size)
    _tiling(path, bounds, stat.st_size, np.arange(len(pairs)), pairs[:, 1])
    return bounds


@functools.cache
def _pool(pid: int) -> ThreadPoolExecutor:  # this process's threads: a forked one makes its own
    return ThreadPoolExecutor(_THREADS, "RecordView")


def _preads(fds: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> list[bytes]:
    """Each file's bytes ``[start, start + size)`` by ``os.pread``: from up to 8 threads at once
    (it releases Python's lock) if the page cache lacks some of the first _PROBE of 32 or more."""

    def cached(fd: int, size: int, start: int) -> bool:  # RWF_NOWAIT: fails rather than wait
        try:
            return os.preadv(fd, [bytearray(size)], start, _NOWAIT) == size
        except (OSError, TypeError, AttributeError):  # not all cached; no RWF_NOWAIT here
            return False

    def read(part: list[tuple[int, int, int]]) -> list[bytes]:
        return list(itertools.starmap(os.pread, part))  # (file descriptor, size, offset) each

    work = list(zip(fds.tolist(), sizes.tolist(), starts.tolist(), strict=True))
    if len(work) < 2 * _SLICE or all(itertools.starmap(cached, work[:_PROBE])):
        return read(work)
    cuts = np.linspace(0, len(work), min(_THREADS, len(work) // _SLICE) + 1).astype(int).tolist()
    parts = _pool(os.getpid()).map(read, [work[a:b] for a, b in itertools.pairwise(cuts)])
    return [data for part in parts for data in part]


def write_index(paths: PathLike | Sequence[PathLike], progress: bool = False) -> list[int]:
    """Write ``<shard>.index`` and ``<shard>.index.npy`` beside each plain shard, both at once,
    from :func:`build_index` (``python -m helpers index``); return each one's record count. Raises
    as it does, and PermissionError saying what to do for a folder one cannot write to."""
    from tqdm.auto import tqdm

    paths, counts = check_paths(paths), []
    for folder in {path.absolute().parent for path in paths}:
        if not os.access(folder, os.W_OK):  # say so before a long walk
            what = "copy the shards to a folder you can write to and index them there"
            raise PermissionError(f"{folder}: cannot write an index into this folder: {what}")
    for path in tqdm(paths, "indexing", disable=not progress):
        stat = os.stat(path)  # before the walk: a write during it makes the binary stale
        sizes = np.diff(build_index(path))
        commit(staged_index(path, sizes, stat), True)
        counts.append(len(sizes))
    return counts


def check_index(paths: PathLike | Sequence[PathLike]) -> list[int]:
    """Check every header of each file against the index a :class:`RecordView` opens it with
    (``python -m helpers index --check``); return each file's record count. FileNotFoundError
    for a file without one; else raises as a view."""
    with RecordView(paths) as view:
        for file, path in enumerate(view.paths):
            if _saved_index(path, view._stats[file]) is None:  # a stale binary one is none
                raise FileNotFoundError(f"{path}: no index: write one (python -m helpers index)")
            view._sample(file, every=True)
        return np.diff(view._firsts).tolist()


class RecordView(contextlib.AbstractContextManager):
    """Any record of one or several plain TFRecord files (numbered across ``paths``, in order)
    by its number: ``view[i]`` a payload, ``view[[i, j]]`` a list (notebooks 04 and 05).

    Indexed from each ``.index.npy`` of the file's size and time (mapped read-only: processes
    share its pages), else ``.index`` or :func:`build_index` (private arrays). Opening checks the
    tiling (all of a text index) and 1,024 headers spread over each file, first and last
    included; it cannot see a wrong boundary between them (that record's read does) nor a damaged
    payload (reads check both CRCs): :func:`check_index` checks every header. Reads use
    ``os.pread``; a file replaced or resized (checked by every batch and a file's 1st and every
    256th single read) or cut short is a RecordError. Pickles as paths: a worker process maps
    the binary indexes again (parses or walks the rest)."""

    def __init__(self, paths: PathLike | Sequence[PathLike], progress: bool = False) -> None:
        self.paths = check_paths(paths)
        self._open(None, progress)

    def _open(self, seen: list | None, progress: bool = False) -> None:  # seen: by the pickler
        from tqdm.auto import tqdm

        self._files = [open(path, "rb", buffering=0) for path in self.paths]
        self._fds = [file.fileno() for file in self._files]
        self._stats, self._reads = seen or [os.fstat(fd) for fd in self._fds], [0] * len(self._fds)
        self._check_files(range(len(self.paths)) if seen else [])  # the pickler's files
        self._bounds = []
        for file, path in enumerate(tqdm(self.paths, "indexing", disable=not progress)):
            if not seen and detect_compression(path):
                build_index(path)  # refuses it
            bounds = _saved_index(path, self._stats[file])
            self._bounds.append(build_index(path) if bounds is None else bounds)
            if bounds is not None and not seen:  # a walk checked every header
                self._sample(file)
        self._firsts = np.cumsum([0] + [len(b) - 1 for b in self._bounds]).tolist()  # per file

    def _sample(self, file: int, every: bool = False) -> None:
        """RecordError unless the index tiles the file at _SAMPLE records spread over it (or all:
        fewer, or ``every``), first and last included, whose headers say the index's lengths."""
        path, bounds, size = self.paths[file], self._bounds[file], self._stats[file].st_size
        n = len(bounds) - 1
        picks = np.unique(
            np.linspace(0, n - 1, n if every else min(n, _SAMPLE)).round().astype(int)
        )
        _tiling(path, bounds, size, picks)
        starts, lengths = bounds[picks], bounds[picks + 1] - bounds[picks] - framing.FRAME_SIZE
        fds, twelve = np.full(len(picks), self._fds[file]), np.full(len(picks), 12)
        headers = np.frombuffer(b"".join(_preads(fds, starts, twelve)), framing.HEADER_DTYPE)
        bad = framing.bad_headers(headers) | (headers["length"] != lengths)
        if bad.any():
            k = int(bad.argmax())
            why = f"no header of {lengths[k]} payload bytes where the index puts one"
            raise _wrong(path, bounds, int(picks[k]), why)

    def _check_files(self, files: Sequence[int]) -> None:  # replaced or resized: RecordError
        for file in files:
            path, (size, inode) = self.paths[file], _identity(self._stats[file])
            now = _identity(os.stat(path))
            if now != (size, inode):
                change = "was replaced" if now[1] != inode else f"is now {now[0]} bytes"
                reason = f"the file {change} since the view opened it ({size} bytes)"
                raise RecordError(path, 0, 0, reason + ": open a new view")

    def __len__(self) -> int:
        return self._firsts[-1]

    @property
    def index_nbytes(self) -> int:
        """Bytes of index this process holds: 8 per record and per file read without a binary
        index (a mapped one's pages are shared)."""
        return sum(b.nbytes for b in self._bounds if not isinstance(b, np.memmap))

    def __getitem__(self, key: int | Sequence[int]) -> bytes | list[bytes]:
        """The payload of record ``key``, or a list of them for a sequence of numbers. IndexError
        out of range, TypeError for another key, ValueError once closed, else RecordError."""
        if isinstance(key, (int, np.integer)):  # one record (Grain, PyTorch): no NumPy on the way
            number = int(key) + (len(self) if key < 0 else 0)
            if not 0 <= number < len(self) or self._fds is None:
                return self.__getitems__([key])  # raises the IndexError or ValueError
            file = bisect.bisect_right(self._firsts, number) - 1
            self._reads[file] += 1  # a stat costs more than the read: see the docstring
            if self._reads[file] % 256 == 1:
                self._check_files([file])
            bounds, local = self._bounds[file], number - self._firsts[file]
            start, size = bounds.item(local), bounds.item(local + 1) - bounds.item(local)
            data = os.pread(self._fds[file], size, start)
            payload = framing.unframe(data, 0, size) if len(data) == size else None
            if payload is None:
                payload = self._checked(file, number, start, data, size)
            return payload
        if isinstance(key, (str, bytes, slice)) or not hasattr(key, "__len__"):
            raise TypeError(f"a record number or a sequence of them, not {type(key).__name__}")
        return self.__getitems__(key)

    def __getitems__(self, numbers: Sequence[int]) -> list[bytes]:
        """The payloads of ``numbers``, in order (Grain and PyTorch call it): read together, every
        header and CRC checked by NumPy at once."""
        numbers, n = np.asarray(numbers, dtype=np.int64).reshape(-1), len(self)
        if numbers.size and not -n <= numbers.min() <= numbers.max() < n:
            bad = numbers[(numbers < -n) | (numbers >= n)][0]
            raise IndexError(f"record {bad} out of range: {n} records in {len(self.paths)} file(s)")
        if self._fds is None:
            raise ValueError("I/O operation on a closed RecordView")
        numbers = numbers % max(n, 1)  # a new array: the caller's stays as it was
        files = np.searchsorted(self._firsts, numbers, side="right") - 1
        used = np.flatnonzero(np.bincount(files)).tolist()
        self._check_files(used)
        local, spans = numbers - np.array(self._firsts)[files], np.empty((numbers.size, 2), int)
        for file in used:
            mine = files == file
            spans[mine] = self._bounds[file][local[mine, None] + [0, 1]]
        starts, sizes = spans[:, 0], spans[:, 1] - spans[:, 0]
        datas = _preads(np.array(self._fds, np.int64)[files], starts, sizes)
        data, payloads, bad = b"".join(datas), [None] * numbers.size, np.ones(numbers.size, bool)
        if len(data) == sizes.sum() and numbers.size:  # else a file was cut: each record says
            at = np.cumsum(sizes) - sizes
            payloads, bad = framing.unframe_many(data, at, at + sizes)
        for k in np.flatnonzero(bad).tolist():  # the careful path names the damage
            where = (int(files[k]), int(numbers[k]), int(starts[k]), datas[k], int(sizes[k]))
            payloads[k] = self._checked(*where)
        return payloads

    def _checked(self, file: int, number: int, start: int, data: bytes, size: int) -> bytes:
        """The careful check of ``data``, read for record ``number``: its RecordError says why."""
        path, index = self.paths[file], number - self._firsts[file]
        length = check_header(data[: framing.HEADER_SIZE], path, index, start)
        if length != size - framing.FRAME_SIZE:
            reason = f"header says {length} payload bytes, the index {size - framing.FRAME_SIZE}"
            raise RecordError(path, index, start, reason + ": the file changed since indexing")
        return check_payload(data[framing.HEADER_SIZE :], length, path, index, start)

    def __getstate__(self) -> dict:  # the paths and what they were: no index, no open file
        return {"paths": self.paths, "stats": self._stats}

    def __setstate__(self, state: dict) -> None:
        self.paths = state["paths"]
        self._open(state["stats"])

    def close(self) -> None:
        """Close the files and drop the maps (reading afterwards raises ValueError)."""
        for file in self._files:
            file.close()
        self._fds, self._bounds = None, []

    def __exit__(self, *exc: object) -> None:
        self.close()
