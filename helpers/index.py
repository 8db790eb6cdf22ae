"""Random access to the records of plain TFRecord files, through an index of byte offsets.

A TFRecord file has no table of contents: to reach record ``i`` you walk the ``i``
headers before it. Notebook 04 ("Index the files: where every record starts") shows
that walk; :func:`build_index` remembers it, and :class:`RecordReader` uses the index
to read any record with one ``os.pread``, checked by ``records.check_header`` and
``check_payload`` as the sequential reader is. Only plain files can be indexed: in a
GZIP or ZLIB file, reaching record ``i`` means decompressing everything before it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from helpers import records
from helpers.records import RecordError, check_header, check_payload, detect_compression

_HEADER_SIZE = records._HEADER_SIZE
_FRAME_SIZE = _HEADER_SIZE + records._FOOTER_SIZE  # what a record adds to its payload


def build_index(path: str | os.PathLike) -> np.ndarray:
    """Walk the record headers of a plain TFRecord file; return its record boundaries.

    The result is an int64 array of ``n + 1`` byte offsets: record ``i`` (header,
    payload and footer) spans ``[b[i], b[i + 1])``, so the index costs 8 bytes per
    record. Every length CRC is checked and every record must end inside the file;
    payloads are skipped, not read (:class:`RecordReader` checks them on every read).

    Raises:
        ValueError: if the file is GZIP- or ZLIB-compressed (it cannot be indexed).
        RecordError: for a damaged or cut header, a record running past the end or over
            256 MiB (``helpers.records._MAX_RECORD_BYTES``: a read holds it whole).
        FileNotFoundError: if the file does not exist.
    """
    path = Path(path)
    compression = detect_compression(path)
    if compression:
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


class RecordReader:
    """Read any record of one or several plain TFRecord files by its number.

    Records are numbered across ``paths`` in order: the first file's, then the
    second's, and so on. Each read is one ``os.pread`` (Linux, macOS) and checks the
    header and payload CRCs; a file that changed since it was indexed gives a
    :class:`~helpers.records.RecordError`, never wrong bytes. Memory: 8 bytes per
    record. Shown in notebook 04 ("Shuffle globally by random access").

    Args:
        paths: one file or a sequence of files.
        progress: show a progress bar (on stderr) while indexing.

    Raises:
        ValueError, RecordError, FileNotFoundError: while indexing, as :func:`build_index`.
    """

    def __init__(
        self, paths: str | os.PathLike | Sequence[str | os.PathLike], progress: bool = False
    ):
        single = isinstance(paths, (str, os.PathLike))
        self.paths = [Path(paths)] if single else [Path(p) for p in paths]
        from tqdm.auto import tqdm

        bounds = [build_index(p) for p in tqdm(self.paths, "indexing", disable=not progress)]
        self._counts = np.array([len(b) - 1 for b in bounds], dtype=np.int64)
        self._first = np.concatenate([[0], np.cumsum(self._counts)])  # first number per file
        # Every file's boundaries in one array: record g of file f ends where record g + 1 starts,
        # at position g + f (each file adds one closing boundary).
        self._bounds = np.concatenate(bounds) if bounds else np.zeros(0, np.int64)
        self._fds = [os.open(p, os.O_RDONLY) for p in self.paths]

    def __len__(self) -> int:
        return int(self._first[-1])

    @property
    def index_nbytes(self) -> int:
        """Bytes the index holds in memory: 8 per record, plus 8 per file."""
        return int(self._bounds.nbytes)

    def read(self, record: int) -> bytes:
        """Return the payload of record number ``record``.

        Raises:
            IndexError: if ``record`` is out of range.
            RecordError: if the record is damaged or the file changed since indexing.
            ValueError: if the reader is closed.
        """
        return self.read_many([record])[0]

    def read_many(self, records: Iterable[int] | np.ndarray) -> list[bytes]:
        """Return the payloads of ``records`` (record numbers), in the order given.

        Raises:
            IndexError, RecordError, ValueError: as :meth:`read`.
        """
        if self._fds is None:
            raise ValueError(f"read from a closed RecordReader ({len(self.paths)} file(s))")
        records = np.asarray(records, dtype=np.int64).reshape(-1)
        bad = records[(records < 0) | (records >= len(self))]
        if bad.size:
            raise IndexError(
                f"record {int(bad[0])} out of range: {len(self)} records in "
                f"{len(self.paths)} file(s)"
            )
        files = np.searchsorted(self._first, records, side="right") - 1
        local = (records - self._first[files]).tolist()
        starts, ends = (
            self._bounds[records + files].tolist(),
            self._bounds[records + files + 1].tolist(),
        )
        files = files.tolist()
        payloads = []
        for file, index, start, end in zip(files, local, starts, ends, strict=True):
            path, data = self.paths[file], os.pread(self._fds[file], end - start, start)
            length = check_header(data[:_HEADER_SIZE], path, index, start)
            if length != end - start - _FRAME_SIZE:
                indexed = end - start - _FRAME_SIZE
                reason = f"header says {length} payload bytes, the index {indexed}"
                raise RecordError(path, index, start, reason + ": the file changed since indexing")
            payloads.append(check_payload(data[_HEADER_SIZE:], length, path, index, start))
        return payloads

    def close(self) -> None:
        """Close the files (reading afterwards raises ValueError)."""
        fds, self._fds = self._fds, None
        for fd in fds or ():
            os.close(fd)

    def __del__(self) -> None:
        if getattr(self, "_fds", None):
            self.close()

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
