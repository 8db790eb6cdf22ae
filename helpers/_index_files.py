"""The two index files beside a plain TFRecord shard, and the one check that an index describes
its shard (notebook 08, "Index the files: where every record starts"; ``python -m helpers index``):
``<shard>.index``, a ``start length`` line per record (``tfrecord2idx``'s format), and
``<shard>.index.npy``, int64: the shard's :func:`identity` when indexed, then its boundaries.
"""

import io
import operator
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

import helpers._framing as framing
from helpers import _commit
from helpers._framing import RecordError, check_header

_TEXT_SUFFIX = ".index"  # a ``start length`` line per record
_BINARY_SUFFIX = ".index.npy"  # int64: the shard's identity, then its n + 1 boundaries
_LINES = 1 << 16  # text index lines formatted and written at a time
identity = operator.attrgetter("st_size", "st_mtime_ns", "st_ino")  # of an os.stat_result


def changed(then: Sequence[int], now: Sequence[int]) -> str | None:
    """How the file whose :func:`identity` is ``now`` differs from the one it was (``then``), or
    None: the one "same file" rule, for the binary index and an open view alike."""
    size, mtime, inode = then
    if now[2] != inode:
        return "was replaced"
    if now[0] != size:
        return f"is now {now[0]} bytes"
    return "was written to" if now[1] != mtime else None


def staged_index(path: Path, sizes: Sequence[int], stat: os.stat_result) -> list[tuple[Path, Path]]:
    """``path``'s two index files, from its records' ``sizes`` and the ``stat`` of the file they
    describe, each staged (``helpers._commit.staged``): the pairs to commit."""
    bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    return [
        _commit.staged(path.with_name(path.name + _TEXT_SUFFIX), _lines(bounds)),
        _commit.staged(path.with_name(path.name + _BINARY_SUFFIX), _npy(stat, bounds)),
    ]


def _lines(bounds: np.ndarray) -> Iterator[bytes]:
    """The text index of ``bounds``, _LINES lines at a time."""
    for first in range(0, len(bounds) - 1, _LINES):
        part = bounds[first : first + _LINES + 1]
        yield "".join(map("{} {}\n".format, part[:-1].tolist(), np.diff(part).tolist())).encode()


def _npy(stat: os.stat_result, bounds: np.ndarray) -> list[bytes | memoryview]:
    """The binary index as ``np.load`` reads it: NumPy's header, the identity, the boundaries."""
    header = io.BytesIO()
    shape = (3 + len(bounds),)
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<i8", "fortran_order": False, "shape": shape}
    )
    return [header.getvalue(), np.array(identity(stat), "<i8").tobytes(), memoryview(bounds)]


def saved_index(
    path: Path, stat: os.stat_result, stacklevel: int = 2, strict: bool = False
) -> np.ndarray | None:
    """The boundaries of the open file ``path`` (its ``stat``): mapped from its binary index if
    made for this file (else a warning names it; ``strict``: ValueError), else parsed from its
    text index; None if it has neither. RecordError for a text index that does not tile it."""
    bounds = _mapped(path, stat, stacklevel + 1, strict)
    return _parsed(path, stat.st_size) if bounds is None else bounds


def _mapped(path: Path, stat: os.stat_result, stacklevel: int, strict: bool) -> np.ndarray | None:
    binary = path.with_name(path.name + _BINARY_SUFFIX)
    try:
        mapped = np.load(binary, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        return None
    except OSError as error:
        why = f"not readable ({error})"
    except (ValueError, EOFError):  # NumPy's words: "pickled data", "no data left"
        why = "not an index: not a NumPy array file"
    else:
        why = _stale(mapped, stat)
        if why is None:
            return mapped[3:]
    message = f"ignored {binary}: {why}. Rebuild it: python -m helpers index {path}"
    if strict:
        raise ValueError(f"{path}: {message}")
    warnings.warn(message, stacklevel=stacklevel)
    return None


def _stale(mapped: np.ndarray, stat: os.stat_result) -> str | None:
    """Why the binary index ``mapped`` does not describe the file of ``stat``, or None."""
    if mapped.dtype != np.int64 or mapped.ndim != 1 or len(mapped) < 4:
        return f"not an index: {mapped.dtype} of shape {mapped.shape}, not int64 numbers"
    change = changed(mapped[:3].tolist(), identity(stat))
    return None if change is None else f"made for another version of the file, which {change}"


def _parsed(path: Path, size: int) -> np.ndarray | None:
    text = path.with_name(path.name + _TEXT_SUFFIX)
    try:
        numbers = np.fromfile(text, np.int64, sep=" ")  # parsed by NumPy, 8 bytes a number
    except FileNotFoundError:
        return None
    except ValueError:  # not numbers
        numbers = np.zeros(1, np.int64)
    if numbers.size % 2:
        raise _wrong_index(path, 0, 0, "not 'start length' lines")
    starts = numbers[0::2]
    lengths = numbers[1::2]
    bounds = np.append(starts, size)
    apart = np.flatnonzero(np.diff(bounds) != lengths)  # a line that ends elsewhere
    if apart.size:
        k = int(apart[0])
        raise _misplaced(path, k, int(starts[k]), int(starts[k] + lengths[k]), size)
    return bounds


def _wrong_index(path: Path, number: int, offset: int, why: str) -> RecordError:
    """The error for an index that does not describe its file, at record ``number``."""
    why += f": the index does not describe this file: rebuild it (python -m helpers index {path})"
    return RecordError(path, number, offset, why)


def _misplaced(path: Path, number: int, start: int, end: int, size: int) -> RecordError:
    return _wrong_index(path, number, start, f"the index gives it bytes {start}-{end} of {size}")


def check_records(
    path: Path, bounds: np.ndarray, size: int, picks: np.ndarray, data: bytes, at: np.ndarray
) -> None:
    """The one check of an index against its file: RecordError for the first of the records
    ``picks`` (sorted) that ``bounds`` do not tile the file of ``size`` bytes with (16 bytes or
    more each), or whose header ``data[at[i]:]`` does not announce the index's length."""
    if len(bounds) == 1 and size:
        raise _wrong_index(path, 0, 0, f"the index has no record, the file {size} bytes")
    starts = bounds[picks]
    ends = bounds[picks + 1]
    misplaced = (ends - starts < framing.FRAME_SIZE) | (starts < 0) | (ends > size)
    misplaced |= (picks == 0) & (starts != 0) | (picks == len(bounds) - 2) & (ends != size)
    misplaced[1:] |= starts[1:] < ends[:-1]
    bad = misplaced | _bad_headers(data, at, ends - starts - framing.FRAME_SIZE)
    if bad.any():
        k = int(bad.argmax())
        number = int(picks[k])
        if misplaced[k]:
            raise _misplaced(path, number, int(starts[k]), int(ends[k]), size)
        header = data[at[k] : at[k] + framing.HEADER_SIZE]
        _refuse(path, header, number, int(starts[k]), int(ends[k] - starts[k]) - framing.FRAME_SIZE)


def check_headers(
    path: Path, data: bytes, at: np.ndarray, numbers: np.ndarray, offsets: np.ndarray
) -> None:
    """The one check of record headers, with NumPy: RecordError for the first header
    ``data[at[i]:]`` (record ``numbers[i]``, at byte ``offsets[i]`` of the file) that is cut
    short, fails its length CRC or claims more than 256 MiB, with the readers' reasons."""
    bad = _bad_headers(data, at)
    if bad.any():
        k = int(bad.argmax())
        header = data[at[k] : at[k] + framing.HEADER_SIZE]
        _refuse(path, header, int(numbers[k]), int(offsets[k]))


def _bad_headers(data: bytes, at: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """Which headers at ``at`` in ``data`` are cut short, fail their length CRC, claim over 256
    MiB or (given them) other payload ``lengths``."""
    whole = at + framing.HEADER_SIZE <= len(data)
    headers = np.zeros(len(at), framing.HEADER_DTYPE)
    if whole.any():
        headers[whole] = framing.headers_at(data, at[whole])
    bad = ~whole | framing.bad_headers(headers) | (headers["length"] > framing.MAX_RECORD_BYTES)
    return bad if lengths is None else bad | (headers["length"] != lengths.astype(np.uint64))


def _refuse(
    path: Path, header: bytes, number: int, offset: int, length: int | None = None
) -> NoReturn:
    """The RecordError for a header :func:`_bad_headers` found bad (``length``: the index's)."""
    try:
        claimed = check_header(header, path, number, offset)
    except RecordError as error:
        if length is None or len(header) < framing.HEADER_SIZE:  # cut short: the readers' reason
            raise
        where = "length CRC mismatch where the index puts a header: the file is damaged there"
        how = "python -m helpers verify checks the file, python -m helpers index rebuilds the index"
        why = f"{where}, or the index does not describe it ({how})"
        raise RecordError(path, number, offset, why) from error
    if claimed > framing.MAX_RECORD_BYTES:
        limit = f"more than the {framing.MAX_RECORD_BYTES:,} an index allows"
        how = "helpers.records.iter_records reads it, given a larger max_record_bytes"
        raise RecordError(
            path, number, offset, f"the record claims {claimed:,} bytes, {limit} ({how})"
        )
    why = f"no header of {length} payload bytes where the index puts one (it says {claimed})"
    raise _wrong_index(path, number, offset, why)


def check_every_record(path: Path, fd: int, bounds: np.ndarray, size: int) -> None:
    """:func:`check_records` for every record of the open file ``fd``, its headers read a
    mebibyte at a time: memory stays bounded at any number of records."""
    first = 0
    n = len(bounds) - 1
    if n == 0:
        check_records(path, bounds, size, np.arange(0), b"", np.arange(0))
    while first < n:
        start = int(bounds[first])
        chunk = os.pread(fd, framing.CHUNK, start)
        last = int(np.searchsorted(bounds, start + len(chunk) - framing.HEADER_SIZE, "right"))
        picks = np.arange(first, min(max(last, first + 1), n))  # one, cut short, at least
        check_records(path, bounds, size, picks, chunk, bounds[picks] - start)
        first = int(picks[-1]) + 1
