"""Random access to the records of plain TFRecord files, through an index of byte offsets.

A TFRecord file has no table of contents: reaching record ``i`` means walking the headers
before it (notebook 04, "Index the files"). :func:`build_index` does that walk;
``write_sharded(..., index=True)`` saves it beside each shard as ``<shard>.index``, one
``start length`` line per record (``tfrecord2idx``'s format, so the ``tfrecord`` package reads
ours). :class:`RecordView` hands out any record by its number. GZIP and ZLIB files cannot be
indexed: reaching record ``i`` there means decompressing everything before it.
"""

import bisect
import mmap
import operator
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import google_crc32c
import numpy as np

from helpers import records
from helpers.records import RecordError, check_header, check_payload, detect_compression

_HEADER_SIZE = records._HEADER_SIZE
_HEADER_AT, _FOOTER_AT = records._HEADER.unpack_from, records._CRC.unpack_from
_CRC32C = google_crc32c.value
_FRAME_SIZE = _HEADER_SIZE + records._FOOTER_SIZE  # what a record adds to its payload
_HEADER, _FOOTER = np.dtype([("length", "<u8"), ("crc", "<u4")]), np.dtype("<u4")  # packed
_identity = operator.attrgetter("st_size", "st_ino")  # of os.stat: a changed or replaced file


def build_index(path: str | os.PathLike) -> np.ndarray:
    """The ``n + 1`` record boundaries (int64) of a plain file: record ``i`` spans
    ``[b[i], b[i + 1])``. Headers are checked, payloads skipped (the reads check them).

    Raises:
        ValueError: if the file is GZIP- or ZLIB-compressed (it cannot be indexed).
        RecordError: for a damaged or cut header, a record running past the end or over
            256 MiB (``helpers.records._MAX_RECORD_BYTES``: a read holds it whole).
        FileNotFoundError: if the file does not exist.
    """
    path = Path(path)
    if compression := detect_compression(path):
        raise ValueError(
            f"{path}: a {compression}-compressed TFRecord file cannot be indexed: record i has "
            "no fixed byte offset in it. Write a plain copy with helpers.records.write_records "
            f"(iter_records(path, {compression!r})) and index that."
        )
    size = path.stat().st_size
    starts, offset, limit = [], 0, records._MAX_RECORD_BYTES
    with open(path, "rb", buffering=1 << 16) as stream:
        while offset < size:
            length = check_header(stream.read(_HEADER_SIZE), path, len(starts), offset, limit)
            if offset + _FRAME_SIZE + length > size:
                reason = f"record of {length} payload bytes runs past the end of the file"
                raise RecordError(path, len(starts), offset, f"{reason} ({size} bytes)")
            starts.append(offset)
            offset += _FRAME_SIZE + length
            stream.seek(offset)
    starts.append(offset)
    return np.array(starts, dtype=np.int64)


def _boundaries(path: Path, size: int) -> np.ndarray:
    """The boundaries in ``<path>.index`` if it describes this file, else :func:`build_index`'s."""
    try:
        text = path.with_name(path.name + ".index").read_text()
        pairs = np.array(text.split(), dtype=np.int64).reshape(-1, 2)
    except (OSError, ValueError):  # no index file, or not pairs of numbers
        return build_index(path)
    bounds = np.append(pairs[:, 0], size)
    fits = bounds[0] == 0 and (np.diff(bounds) == pairs[:, 1]).all()
    if not fits or (pairs[:, 1] < _FRAME_SIZE).any() or detect_compression(path):
        return build_index(path)  # a stale index is ignored; a compressed file refused there
    return bounds


class RecordView:
    """Any record of one or several plain TFRecord files, by its number: ``view[i]``.

    Records are numbered across ``paths`` in order. ``len(view)`` comes from each file's ``.index``
    or one header walk; ``view[i]`` is a payload, ``view[[i, j]]`` (Grain's ``__getitems__``) a
    list. Reads come from memory maps and check both CRCs; a file replaced or resized since the view
    opened is a :class:`~helpers.records.RecordError` (every batch checks, single reads a file's 1st
    and every 256th read), never wrong bytes (one cut short *during* a read can still kill the
    process with SIGBUS). Memory: 8 bytes per record. A random-access source for Grain and a
    map-style dataset for PyTorch, it pickles into their workers, which reopen the files. Shown in
    notebooks 04 and 05. ``paths``: one file or a sequence of files; ``progress``: a bar on stderr.

    Raises:
        ValueError, RecordError, FileNotFoundError: while indexing, as :func:`build_index`.
    """

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike], progress=False):
        from tqdm.auto import tqdm

        single = isinstance(paths, (str, os.PathLike))
        self.paths = [Path(paths)] if single else [Path(p) for p in paths]
        self._stats = [_identity(os.stat(p)) for p in self.paths]
        bar = tqdm(self.paths, "indexing", disable=not progress)
        bounds = [_boundaries(p, size) for p, (size, _) in zip(bar, self._stats, strict=True)]
        self._first = np.cumsum([0] + [len(b) - 1 for b in bounds])  # first number per file
        self._firsts = self._first.tolist()
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

    def _check_files(self, files) -> None:
        """RecordError for a file that another has replaced, or that changed size."""
        for file in files:
            path, (size, inode) = self.paths[file], self._stats[file]
            if (now := _identity(os.stat(path))) != (size, inode):
                change = "was replaced" if now[1] != inode else f"is now {now[0]} bytes"
                reason = f"the file {change} since the view opened it ({size} bytes)"
                raise RecordError(path, 0, 0, reason + ": open a new view")

    def __len__(self) -> int:
        return self._firsts[-1]

    @property
    def index_nbytes(self) -> int:
        """Bytes the index holds in memory: 8 per record, plus 8 per file."""
        return int(self._bounds.nbytes)

    def __getitem__(self, key):
        """The payload of record ``key`` (an int), or a list of them (a sequence of ints).
        IndexError for a number out of range, TypeError for another kind of key, RecordError
        for a damaged record or a file that changed since the view opened."""
        if isinstance(key, (int, np.integer)):  # one record (Grain, PyTorch): no NumPy on the way
            number = int(key) + (len(self) if key < 0 else 0)
            file = bisect.bisect_right(self._firsts, number) - 1
            if not 0 <= number < len(self):
                return self.__getitems__([key])  # raises the IndexError
            self._reads[file] += 1  # a stat costs more than the read: see the docstring
            if self._reads[file] % 256 == 1:
                self._check_files([file])
            start, end = self._bounds.item(number + file), self._bounds.item(number + file + 1)
            data, mask = self._maps[file], records._mask  # the checks, inlined: 2x faster
            (length, length_crc), (crc,) = _HEADER_AT(data, start), _FOOTER_AT(data, end - 4)
            payload = data[start + _HEADER_SIZE : end - 4]
            if (
                mask(_CRC32C(data[start : start + 8])) != length_crc
                or length != len(payload)
                or mask(_CRC32C(payload)) != crc
            ):
                self._damaged(file, number, start, end)
            return payload
        if isinstance(key, (str, bytes, slice)) or not hasattr(key, "__len__"):
            raise TypeError(f"a record number or a sequence of them, not {type(key).__name__}")
        return self.__getitems__(key)

    def __getitems__(self, numbers) -> list[bytes]:
        """The payloads of ``numbers``, in the order given (what Grain and PyTorch call). NumPy
        reads every header and stored CRC at once; then each payload is one slice and one CRC."""
        numbers, n = np.asarray(numbers, dtype=np.int64).reshape(-1), len(self)
        if numbers.size and not -n <= numbers.min() <= numbers.max() < n:
            bad = numbers[(numbers < -n) | (numbers >= n)][0]
            raise IndexError(f"record {bad} out of range: {n} records in {len(self.paths)} file(s)")
        numbers %= max(n, 1)
        files = np.searchsorted(self._first, numbers, side="right") - 1
        self._check_files(used := np.flatnonzero(np.bincount(files)).tolist())
        starts, ends = self._bounds[numbers + files], self._bounds[numbers + files + 1]
        heads, stored = np.empty(len(numbers), _HEADER), np.empty(len(numbers), _FOOTER)
        for file, mine in ((f, np.flatnonzero(files == f)) for f in used):  # maps not held on to
            data = self._maps[file]  # seen as a 12-byte header, and a CRC, at every byte offset
            heads[mine] = np.ndarray(len(data) - 11, _HEADER, data, 0, (1,))[starts[mine]]
            stored[mine] = np.ndarray(len(data) - 3, _FOOTER, data, 0, (1,))[ends[mine] - 4]
        # A header's CRC covers only its length: one CRC per distinct length checks them all.
        sizes, which = np.unique(lengths := heads["length"], return_inverse=True)
        length_crcs = [records.masked_crc32c(size.to_bytes(8, "little")) for size in sizes.tolist()]
        bad = (lengths != (ends - starts - _FRAME_SIZE).astype(np.uint64)) | (
            np.array(length_crcs, np.uint32)[which] != heads["crc"]
        )
        firsts, lasts = (starts + _HEADER_SIZE).tolist(), (ends - 4).tolist()  # of each payload
        maps, where = self._maps, zip(files.tolist(), firsts, lasts, strict=True)
        payloads = [maps[file][first:last] for file, first, last in where]
        bad |= records._mask(np.fromiter(map(_CRC32C, payloads), np.int64, len(payloads))) != stored
        for k in np.flatnonzero(bad)[:1].tolist():  # the careful path names the damage
            self._damaged(int(files[k]), int(numbers[k]), int(starts[k]), int(ends[k]))
        return payloads

    def _damaged(self, file: int, number: int, start: int, end: int) -> None:
        """The careful path, for a record that failed a fast check: a RecordError naming why."""
        data, path, index = self._maps[file], self.paths[file], number - self._firsts[file]
        length = check_header(data[start : start + _HEADER_SIZE], path, index, start)
        if length != end - start - _FRAME_SIZE:
            reason = f"header says {length} payload bytes, the index {end - start - _FRAME_SIZE}"
            raise RecordError(path, index, start, reason + ": the file changed since indexing")
        check_payload(data[start + _HEADER_SIZE : end], length, path, index, start)

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
