"""Random access to plain TFRecord files (notebook 08, "Index the files: where every record
starts"): :func:`build_index` walks a file's headers, :func:`write_index` saves the walk beside it
as its two index files (``helpers._index_files``), :class:`RecordView` reads any record by its
number, every CRC checked."""

import bisect
import contextlib
import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import helpers._framing as framing
from helpers._checks import PathLike, check_paths
from helpers._commit import commit
from helpers._framing import RecordError, check_payload, detect_compression
from helpers._index_files import (
    changed,
    check_every_record,
    check_headers,
    check_records,
    identity,
    saved_index,
    staged_index,
)
from helpers._spans import all_cached, map_file, read_each, unframe_mapped, unframe_read

_SAMPLE = 4096  # headers an opening view checks, shared by its files (each file's first and last)
_LONGEST = framing.FRAME_SIZE + framing.MAX_RECORD_BYTES  # the longest span a read takes


def build_index(path: PathLike) -> np.ndarray:
    """The ``n + 1`` record boundaries (int64) of a plain file (record ``i`` spans ``[b[i],
    b[i + 1])``), every header checked (notebook 08, "Index the files: where every record
    starts"). ValueError for a GZIP or ZLIB file, RecordError for a damaged or cut header or a
    record past the end or over 256 MiB, FileNotFoundError."""
    path = Path(path)
    _check_plain(path)
    parts = []  # each mebibyte's headers
    offset = number = 0  # where the next header is, and its record's number
    with open(path, "rb", buffering=0) as file:
        size = os.fstat(file.fileno()).st_size
        while offset < size:  # a mebibyte at a time, walked from header to header
            chunk = os.pread(file.fileno(), framing.CHUNK, offset)
            here, end = _walk(chunk)
            check_headers(path, chunk, here, number + np.arange(len(here)), offset + here)
            parts.append(here + offset)
            number += len(here)
            offset += end
    if offset > size:  # the last record runs past the end
        start = int(parts[-1][-1])
        length = offset - start - framing.FRAME_SIZE
        framing.check_size(size - start - framing.HEADER_SIZE, length, path, number - 1, start)
    return np.concatenate([*parts, [offset]])


def _check_plain(path: Path) -> None:
    """ValueError for a GZIP or ZLIB file: record i has no fixed byte offset in it."""
    if compression := detect_compression(path):
        raise ValueError(
            f"{path}: a {compression}-compressed TFRecord file cannot be indexed: record i has "
            "no fixed byte offset in it. Write a plain copy with helpers.records.write_records "
            f"(iter_records(path, {compression!r})) and index that."
        )


def _walk(chunk: bytes) -> tuple[np.ndarray, int]:
    """Where the headers that start in ``chunk`` are, as their lengths say (0 if none fits: it
    is cut short), and where the next record starts."""
    here = []
    position = 0
    unpack = framing.LENGTH.unpack_from
    while position <= len(chunk) - framing.HEADER_SIZE:
        here.append(position)
        position += unpack(chunk, position)[0] + framing.FRAME_SIZE
    return np.array(here or [0], np.int64), position


def write_index(paths: PathLike | Sequence[PathLike], progress: bool = False) -> list[int]:
    """Write ``<shard>.index`` and ``<shard>.index.npy`` beside each plain shard, both at once,
    from :func:`build_index` (``python -m helpers index``; notebook 18, "Index the files that
    already exist"); return each one's record count. Raises
    as it does, and PermissionError saying what to do for a folder one cannot write to."""
    from tqdm.auto import tqdm

    paths = check_paths(paths)
    counts = []
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
    (``python -m helpers index --check``; notebook 18, "Index the files that already exist"), a
    mebibyte at a time; return each file's record count. FileNotFoundError for a file without
    one, before any is read; else RecordError, ValueError for a GZIP or ZLIB file or a binary
    index made for another file, OSError."""
    counts = []
    for path in check_paths(paths):
        with open(path, "rb", buffering=0) as file:
            stat = os.fstat(file.fileno())
            _check_plain(path)
            bounds = saved_index(path, stat, strict=True)  # a view would warn and walk past it
            if bounds is None:
                raise FileNotFoundError(f"{path}: no index: write one (python -m helpers index)")
            check_every_record(path, file.fileno(), bounds, stat.st_size)
        counts.append(len(bounds) - 1)
    return counts


class RecordView(contextlib.AbstractContextManager):
    """Any record of plain TFRecord files (numbered across ``paths``) by its number: ``view[i]``
    a payload, ``view[[i, j]]`` a list (notebook 08, "Index the files: where every record
    starts"; notebook 17, "Write 70,000 label-sorted records with an index").

    Indexed from each file's ``.index.npy`` (mapped: processes share it), else ``.index`` or
    :func:`build_index`. Opening checks 4,096 headers spread over the files, at least each
    file's first and last (a cold open of 100 shards reads 4,100, not 102,400); reads check the
    rest, both CRCs, and that no file was replaced or written to (every batch, a file's 1st and
    every 256th single read): RecordError. ValueError for a GZIP or ZLIB file. Pickles as paths.
    A batch from the page cache is sliced from memory maps, else read by threads; a file cut
    short during a batch's read can end the process with SIGBUS (``helpers._spans``).
    """

    def __init__(self, paths: PathLike | Sequence[PathLike], progress: bool = False) -> None:
        self.paths = check_paths(paths)
        self._open(None, progress)

    def _open(self, seen: list | None, progress: bool = False) -> None:  # seen: by the pickler
        """Open, map and index the files; if any of it fails, close what was opened."""
        self._files = []
        self._maps = []  # warm batches are read from them
        try:
            for path in self.paths:
                self._files.append(open(path, "rb", buffering=0))
                self._maps.append(map_file(self._files[-1].fileno()))
            self._load(seen, progress)
        except BaseException:
            self.close()
            raise

    def _load(self, seen: list | None, progress: bool) -> None:
        """The files' identities and indexes: checked against ``seen`` (the pickler's), or new."""
        from tqdm.auto import tqdm

        self._fds = [file.fileno() for file in self._files]
        self._stats = seen or [os.fstat(fd) for fd in self._fds]
        self._reads = [0] * len(self._fds)
        self._check_files(range(len(self.paths)) if seen else [])  # the pickler's files
        self._sizes = [stat.st_size for stat in self._stats]
        self._bounds = []
        self._private = 0  # bytes of index not mapped
        trusted = []  # files opened from their index files: sampled below
        for file, path in enumerate(tqdm(self.paths, "indexing", disable=not progress)):
            if not seen:
                _check_plain(path)
            saved = saved_index(path, self._stats[file], stacklevel=5)
            bounds = build_index(path) if saved is None else saved.view(np.ndarray)
            self._bounds.append(bounds)
            self._private += 0 if isinstance(saved, np.memmap) else bounds.nbytes
            if saved is not None and not seen:  # a walk checked every header
                trusted.append(file)
        self._sample(trusted)
        self._firsts = np.cumsum([0] + [len(b) - 1 for b in self._bounds]).tolist()  # per file

    def _sample(self, files: list[int]) -> None:
        """:func:`check_records` at each file's part of _SAMPLE records, spread over it (all if
        fewer), first and last included: the headers of all files read at once."""
        share = max(2, _SAMPLE // max(len(self.paths), 1))
        picks = []
        fds = []
        offsets = []
        for file in files:
            n = len(self._bounds[file]) - 1
            mine = np.unique(np.linspace(0, n - 1, min(n, share)).round().astype(int))
            picks.append(mine)
            fds.append(np.full(len(mine), self._fds[file]))
            offsets.append(np.maximum(self._bounds[file][mine], 0))  # a wrong one is named
        if not files:
            return
        offsets = np.concatenate(offsets)
        twelve = np.full(len(offsets), framing.HEADER_SIZE)
        headers = read_each(np.concatenate(fds), offsets, twelve)
        first = 0
        for file, mine in zip(files, picks, strict=True):
            part = headers[first : first + len(mine)]
            first += len(mine)
            at = np.cumsum([0, *map(len, part)])[:-1]  # a header cut short is named as such
            data = b"".join(part)
            check_records(self.paths[file], self._bounds[file], self._sizes[file], mine, data, at)

    def _check_files(self, files: Sequence[int]) -> None:  # replaced or written to: RecordError
        for file in files:
            then = self._stats[file]
            change = changed(identity(then), identity(os.stat(self.paths[file])))
            if change:
                reason = f"the file {change} since the view opened it ({then.st_size} bytes)"
                raise RecordError(self.paths[file], 0, 0, reason + ": open a new view")

    def __len__(self) -> int:
        return self._firsts[-1]

    @property
    def index_nbytes(self) -> int:
        """Bytes of index this process holds: 8 per record and per file read without a binary
        index (a mapped one's pages are shared)."""
        return self._private

    def __getitem__(self, key: int | Sequence[int]) -> bytes | list[bytes]:
        """The payload of record ``key``, or a list of them for a sequence of numbers. IndexError
        out of range, TypeError for another key (a bool or a float too), ValueError once
        closed, else RecordError."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self._one(key)  # one record (Grain, PyTorch): no NumPy on the way
        if isinstance(key, (str, bytes, slice)) or not hasattr(key, "__len__"):
            raise TypeError(f"a record number or a sequence of them, not {type(key).__name__}")
        return self.__getitems__(key)

    def _one(self, key: int) -> bytes:
        n = self._firsts[-1]
        number = int(key) + (n if key < 0 else 0)
        if not 0 <= number < n or self._fds is None:
            return self.__getitems__([key])[0]  # raises the IndexError or ValueError
        file = bisect.bisect_right(self._firsts, number) - 1
        self._reads[file] += 1  # a stat costs more than the read: see the docstring
        if self._reads[file] % 256 == 1:
            self._check_files([file])
        bounds = self._bounds[file]
        local = number - self._firsts[file]
        start = bounds.item(local)
        size = bounds.item(local + 1) - start
        if start < 0 or not framing.FRAME_SIZE <= size <= _LONGEST:
            return self._careful(file, local, b"")
        data = os.pread(self._fds[file], size, start)
        payload = framing.unframe(data, 0, size) if len(data) == size else None
        return self._careful(file, local, data) if payload is None else payload

    def __getitems__(self, numbers: Sequence[int]) -> list[bytes]:
        """The payloads of ``numbers``, in order (Grain and PyTorch call it): read together, every
        header and CRC checked by NumPy at once."""
        numbers = self._numbers(numbers)
        if not numbers.size:
            return []
        files = np.searchsorted(self._firsts, numbers, side="right") - 1
        local = numbers - np.array(self._firsts)[files]
        used = np.flatnonzero(np.bincount(files)).tolist()
        self._check_files(used)
        if len(used) == 1:
            groups = [(used[0], slice(None))]  # (a file, its records in the batch)
        else:
            groups = [(file, np.flatnonzero(files == file)) for file in used]
        starts, sizes = self._spans(files, local, groups)
        fds = np.array(self._fds, np.int64)[files]
        if all_cached(fds, starts, sizes):  # the files were just checked: their sizes hold
            payloads, bad = unframe_mapped(self._maps, files, groups, starts, starts + sizes)
        else:
            payloads, bad = unframe_read(fds, starts, sizes)
        for k in np.flatnonzero(bad).tolist():  # the careful path names the damage
            record = os.pread(self._fds[files[k]], int(sizes[k]), int(starts[k]))
            payloads[k] = self._careful(int(files[k]), int(local[k]), record)
        return payloads

    def _numbers(self, numbers: Sequence[int]) -> np.ndarray:
        """``numbers`` as int64 from 0 to ``len(self)``; TypeError unless they are integers,
        IndexError for one out of range, ValueError once closed."""
        numbers = np.asarray(numbers).reshape(-1)
        n = len(self)
        if numbers.dtype.kind not in "iu" and numbers.size:
            kind = f"{numbers.dtype} values" if numbers.dtype != object else "other objects"
            raise TypeError(f"record numbers must be integers, not {kind}")
        if numbers.size and not -n <= numbers.min() <= numbers.max() < n:
            bad = numbers[(numbers < -n) | (numbers >= n)][0]
            raise IndexError(f"record {bad} out of range: {n} records in {len(self.paths)} file(s)")
        if self._fds is None:
            raise ValueError(f"I/O operation on a closed RecordView (of {self._named()})")
        return numbers.astype(np.int64) % max(n, 1)  # a new array: the caller's stays as it was

    def _spans(self, files: np.ndarray, local: np.ndarray, groups: list) -> tuple:
        """Where the records ``local`` of ``files`` start and how long they are, ``groups`` file by
        file (RecordError for one the index cannot give: shorter than a record, longer than 256
        MiB or before byte 0)."""
        starts = np.empty(len(local), np.int64)
        sizes = np.empty(len(local), np.int64)
        for file, mine in groups:
            bounds = self._bounds[file]
            starts[mine] = bounds[local[mine]]
            sizes[mine] = bounds[local[mine] + 1] - starts[mine]
        wrong = (sizes < framing.FRAME_SIZE) | (sizes > _LONGEST) | (starts < 0)
        if wrong.any():
            first = wrong.argmax()
            self._careful(int(files[first]), int(local[first]), b"")  # raises
        return starts, sizes

    def _careful(self, file: int, local: int, data: bytes) -> bytes:
        """The careful check of ``data``, read for record ``local`` of ``file`` (only its header
        if its span is wrong): the RecordError of :func:`check_records` or ``check_payload``."""
        bounds = self._bounds[file]
        start = int(bounds[local])
        header = data or os.pread(self._fds[file], framing.HEADER_SIZE, max(start, 0))
        picks = np.array([local])
        check_records(self.paths[file], bounds, self._sizes[file], picks, header, picks * 0)
        length = int(bounds[local + 1]) - start - framing.FRAME_SIZE
        return check_payload(data[framing.HEADER_SIZE :], length, self.paths[file], local, start)

    def _named(self) -> str:
        """The view's files, for a message: ``a.tfrecord``, ``a.tfrecord and 2 other files``."""
        first, *rest = [str(path) for path in self.paths] or ["no file"]
        if len(rest) == 1:
            return f"{first} and {rest[0]}"
        return f"{first} and {len(rest)} other files" if rest else first

    def __getstate__(self) -> dict:  # the paths and what they were: no index, no open file
        return {"paths": self.paths, "stats": self._stats}

    def __setstate__(self, state: dict) -> None:
        self.paths = state["paths"]
        self._open(state["stats"])

    def close(self) -> None:
        """Close the files and drop the maps (reading afterwards raises ValueError)."""
        for mapped in self._maps:
            if isinstance(mapped, mmap.mmap):
                with contextlib.suppress(BufferError):  # a caller's view of it: freed with it
                    mapped.close()
        for file in self._files:
            file.close()
        self._maps = []
        self._fds = None
        self._bounds = []

    def __exit__(self, *exc: object) -> None:
        self.close()
