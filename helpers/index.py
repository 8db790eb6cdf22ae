"""Random access to the records of plain TFRecord files (notebook 04, "Index the files"):
:func:`build_index` walks the headers, ``write_sharded(..., index=True)`` saves the walk as
``<shard>.index`` (``tfrecord2idx``'s format), :class:`RecordView` reads any record by number.
"""

import bisect
import contextlib
import mmap
import operator
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

import helpers._framing as framing
from helpers._checks import PathLike, check_paths
from helpers._framing import RecordError, check_header, check_payload
from helpers.records import detect_compression

_identity = operator.attrgetter("st_size", "st_ino")  # of os.stat: a changed or replaced file


def build_index(path: str | os.PathLike) -> np.ndarray:
    """The ``n + 1`` record boundaries (int64) of a plain file: record ``i`` spans
    ``[b[i], b[i + 1])``; headers checked, payloads not. ValueError for a GZIP or ZLIB file,
    RecordError for a damaged or cut header or a record past the end or over 256 MiB,
    FileNotFoundError."""
    path = Path(path)
    if compression := detect_compression(path):
        raise ValueError(
            f"{path}: a {compression}-compressed TFRecord file cannot be indexed: record i has "
            "no fixed byte offset in it. Write a plain copy with helpers.records.write_records "
            f"(iter_records(path, {compression!r})) and index that."
        )
    size = path.stat().st_size
    starts, offset = [], 0
    with open(path, "rb", buffering=1 << 16) as stream:
        while offset < size:
            header = stream.read(framing.HEADER_SIZE)
            where = (path, len(starts), offset)
            length = check_header(header, *where, framing.MAX_RECORD_BYTES)
            framing.check_size(size - offset - framing.HEADER_SIZE, length, *where)
            starts.append(offset)
            offset += framing.FRAME_SIZE + length
            stream.seek(offset)
    starts.append(offset)
    return np.array(starts, dtype=np.int64)


def _boundaries(path: Path, size: int) -> np.ndarray:
    """The boundaries in ``<path>.index`` if it describes this file, else :func:`build_index`'s."""
    try:
        text = path.with_name(path.name + framing.INDEX_SUFFIX).read_text()
        pairs = np.array(text.split(), dtype=np.int64).reshape(-1, 2)
    except (OSError, ValueError):  # no index file, or not pairs of numbers
        return build_index(path)
    bounds = np.append(pairs[:, 0], size)
    fits = bounds[0] == 0 and (np.diff(bounds) == pairs[:, 1]).all()
    if not fits or (pairs[:, 1] < framing.FRAME_SIZE).any() or detect_compression(path):
        return build_index(path)  # a stale index is ignored; a compressed file refused there
    return bounds


class RecordView(contextlib.AbstractContextManager):
    """Any record of one or several plain TFRecord files (numbered across ``paths``, in order)
    by its number: ``view[i]`` a payload, ``view[[i, j]]`` a list (notebooks 04 and 05).

    Indexed from each ``.index`` or by :func:`build_index` (raises as it does), read from memory
    maps with both CRCs checked. A file replaced or resized since is a RecordError (checked by
    every batch, and a file's 1st and every 256th single read); one cut short *during* a read can
    still kill the process with SIGBUS. Pickles into Grain's and PyTorch's worker processes."""

    def __init__(self, paths: PathLike | Sequence[PathLike], progress: bool = False) -> None:
        from tqdm.auto import tqdm

        self.paths = check_paths(paths)
        self._stats = [_identity(os.stat(p)) for p in self.paths]
        bar = tqdm(self.paths, "indexing", disable=not progress)
        bounds = [_boundaries(p, size) for p, (size, _) in zip(bar, self._stats, strict=True)]
        self._firsts = np.cumsum([0] + [len(b) - 1 for b in bounds]).tolist()  # first per file
        # Every file's boundaries in one array: record g of file f spans positions g + f and
        # g + f + 1 (each file adds one closing boundary).
        self._bounds = np.concatenate(bounds) if bounds else np.zeros(0, np.int64)
        self._open()

    def _open(self) -> None:
        self._maps, self._reads = [], [0] * len(self.paths)
        for path, (size, _) in zip(self.paths, self._stats, strict=True):
            with open(path, "rb") as file:  # the map stays valid after the file is closed
                mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            self._maps.append(mapped)
        self._check_files(range(len(self.paths)))

    def _check_files(self, files: Iterable[int]) -> None:  # replaced or resized: RecordError
        for file in files:
            path, (size, inode) = self.paths[file], self._stats[file]
            now = _identity(os.stat(path))
            if now != (size, inode):
                change = "was replaced" if now[1] != inode else f"is now {now[0]} bytes"
                reason = f"the file {change} since the view opened it ({size} bytes)"
                raise RecordError(path, 0, 0, reason + ": open a new view")

    def __len__(self) -> int:
        return self._firsts[-1]

    @property
    def index_nbytes(self) -> int:
        """Bytes the index holds in memory: 8 per record, plus 8 per file."""
        return int(self._bounds.nbytes)

    def __getitem__(self, key: int | Sequence[int]) -> bytes | list[bytes]:
        """The payload of record ``key``, or a list of them for a sequence of numbers. IndexError
        out of range, TypeError for another key, RecordError as the class says."""
        if isinstance(key, (int, np.integer)):  # one record (Grain, PyTorch): no NumPy on the way
            number = int(key) + (len(self) if key < 0 else 0)
            if not 0 <= number < len(self):
                return self.__getitems__([key])  # raises the IndexError
            file = bisect.bisect_right(self._firsts, number) - 1
            self._reads[file] += 1  # a stat costs more than the read: see the docstring
            if self._reads[file] % 256 == 1:
                self._check_files([file])
            start, end = self._bounds.item(number + file), self._bounds.item(number + file + 1)
            payload = framing.unframe(self._maps[file], start, end)
            if payload is None:
                payload = self._checked(file, number, start, end)
            return payload
        if isinstance(key, (str, bytes, slice)) or not hasattr(key, "__len__"):
            raise TypeError(f"a record number or a sequence of them, not {type(key).__name__}")
        return self.__getitems__(key)

    def __getitems__(self, numbers: Sequence[int]) -> list[bytes]:
        """The payloads of ``numbers``, in order (Grain and PyTorch call it): every header and CRC
        read by NumPy at once."""
        numbers, n = np.asarray(numbers, dtype=np.int64).reshape(-1), len(self)
        if numbers.size and not -n <= numbers.min() <= numbers.max() < n:
            bad = numbers[(numbers < -n) | (numbers >= n)][0]
            raise IndexError(f"record {bad} out of range: {n} records in {len(self.paths)} file(s)")
        numbers = numbers % max(n, 1)  # a new array: the caller's stays as it was
        files = np.searchsorted(self._firsts, numbers, side="right") - 1
        used = np.flatnonzero(np.bincount(files)).tolist()
        self._check_files(used)
        starts, ends = self._bounds[numbers + files], self._bounds[numbers + files + 1]
        payloads = np.empty(len(numbers), object)
        for file in used:  # the maps are not held on to
            mine = np.flatnonzero(files == file)
            payloads[mine], bad = framing.unframe_many(self._maps[file], starts[mine], ends[mine])
            for k in mine[bad].tolist():  # the careful path names the damage
                payloads[k] = self._checked(file, int(numbers[k]), int(starts[k]), int(ends[k]))
        return payloads.tolist()

    def _checked(self, file: int, number: int, start: int, end: int) -> bytes:
        """The careful check of a record that failed a fast one: its RecordError says why."""
        data, path, index = self._maps[file], self.paths[file], number - self._firsts[file]
        body = start + framing.HEADER_SIZE  # where the payload starts
        length = check_header(data[start:body], path, index, start)
        indexed = end - body - framing.FOOTER_SIZE  # the payload's length, as the index has it
        if length != indexed:
            reason = f"header says {length} payload bytes, the index {indexed}"
            raise RecordError(path, index, start, reason + ": the file changed since indexing")
        return check_payload(data[body:end], length, path, index, start)

    def __getstate__(self) -> dict:  # for worker processes: the index, not the open maps
        return {k: v for k, v in self.__dict__.items() if k != "_maps"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()

    def close(self) -> None:
        """Release the memory maps (reading afterwards raises ValueError)."""
        for data in self._maps:
            if isinstance(data, mmap.mmap):
                data.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
