"""Byte spans of open files, read two ways. From the page cache, slices of a memory map
(:func:`map_file`): no system call per record. Otherwise by ``os.pread``: one read for each run
of spans that follow each other in a file, from up to 8 threads at once, each letting go of
Python's lock while the disk works. :func:`all_cached` tells the two apart (``RWF_NOWAIT``).
``helpers.index``'s views read records and headers this way.

A map has one danger that ``pread`` has not: a file cut short while a slice of it is read
kills the process with SIGBUS (Arrow's and ArrayRecord's maps share it). A view checks each
file's size and identity before every batch, so only a file cut during that batch's reads can
do it; ``pread`` would give a short read instead.
"""

import functools
import itertools
import mmap
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import helpers._framing as framing

_THREADS = 8  # a batch on a cold cache: read from up to 8 threads,
_SLICE = 16  # at least 16 reads each,
_PROBE = 8  # when one of the first 8 is not all in the page cache
_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: a read that fails if it would wait
_PROBED = 64  # the bytes of a span its probe asks for: its first page must be cached
_RUN = 1 << 30  # a run of spans read at once stays within one GiB-aligned GiB of the file


@functools.cache
def _pool(pid: int) -> ThreadPoolExecutor:  # this process's threads: a forked one makes its own
    return ThreadPoolExecutor(_THREADS, "RecordView")


def map_file(fd: int) -> mmap.mmap | bytes:
    """The whole file ``fd`` as a read-only memory map (``b""`` if it is empty: no map)."""
    if not os.fstat(fd).st_size:
        return b""
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    mapped.madvise(mmap.MADV_RANDOM)  # a record's pages only: no read-ahead around it
    return mapped


def _cached(fd: int, size: int, start: int) -> bool:  # RWF_NOWAIT: fails rather than wait
    try:
        return os.preadv(fd, [bytearray(min(size, _PROBED))], start, _NOWAIT) == min(size, _PROBED)
    except (OSError, TypeError, AttributeError):  # not all cached; no RWF_NOWAIT here
        return False


def all_cached(fds: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the first _PROBE spans' first pages are all in the page cache: a guess for the
    rest, which costs _PROBE system calls that never wait for the disk."""
    columns = (fds[:_PROBE].tolist(), sizes[:_PROBE].tolist(), starts[:_PROBE].tolist())
    return all(map(_cached, *columns))


def read_each(
    fds: np.ndarray, starts: np.ndarray, sizes: np.ndarray, cached: bool | None = None
) -> list[bytes]:
    """Each file's bytes ``[start, start + size)`` by ``os.pread``: from up to 8 threads at once
    (it releases Python's lock) if the page cache lacks some of the first _PROBE of 32 or more
    (``cached``: what the caller's own :func:`all_cached` found, else asked here)."""

    def read(part: tuple[list[int], list[int], list[int]]) -> list[bytes]:
        return list(map(os.pread, *part))  # file descriptors, sizes, offsets

    work = (fds.tolist(), sizes.tolist(), starts.tolist())
    if cached is None and len(work[0]) >= 2 * _SLICE:
        cached = all_cached(fds, starts, sizes)
    if len(work[0]) < 2 * _SLICE or cached:
        return read(work)
    cuts = np.linspace(0, len(work[0]), min(_THREADS, len(work[0]) // _SLICE) + 1).astype(int)
    parts = [[column[a:b] for column in work] for a, b in itertools.pairwise(cuts.tolist())]
    return [data for part in _pool(os.getpid()).map(read, parts) for data in part]


def read_spans(
    fds: np.ndarray, starts: np.ndarray, sizes: np.ndarray, cached: bool | None = None
) -> bytes:
    """The bytes of each span, one after the other: one read for each run of spans that follow
    each other in a file (records read in order), :func:`read_each` for the runs."""
    ends = starts + sizes
    breaks = (
        (starts[1:] != ends[:-1])
        | (fds[1:] != fds[:-1])
        | (starts[1:] // _RUN != starts[:-1] // _RUN)
    )
    firsts = np.flatnonzero(np.concatenate([[True], breaks]))
    lasts = np.append(firsts[1:], len(starts)) - 1
    sizes = ends[lasts] - starts[firsts]
    return b"".join(read_each(fds[firsts], starts[firsts], sizes, cached))


def unframe_mapped(
    maps: list, files: np.ndarray, groups: list, starts: np.ndarray, ends: np.ndarray
) -> tuple[list, np.ndarray]:
    """``framing.unframe_many`` of spans ``starts`` to ``ends`` of ``files``, sliced from their
    ``maps``; ``groups`` pairs each file with its spans' places. All are checked at once."""
    headers = np.empty(len(files), framing.HEADER_DTYPE)
    footers = np.empty(len(files), np.uint32)
    for file, mine in groups:
        headers[mine], footers[mine] = framing.ends_at(maps[file], starts[mine], ends[mine])
    firsts = (starts + framing.HEADER_SIZE).tolist()  # of each payload
    lasts = (ends - framing.FOOTER_SIZE).tolist()
    where = zip(files.tolist(), firsts, lasts, strict=True)
    payloads = [maps[file][first:last] for file, first, last in where]
    return payloads, framing.bad_frames(headers, footers, payloads, ends - starts)


def unframe_read(fds: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[list, np.ndarray]:
    """``framing.unframe_many`` of the spans, read by :func:`read_spans` (threads on a cold
    cache); all marked bad if a file was cut short (each record's check then says where)."""
    data = read_spans(fds, starts, sizes, cached=False)  # the view's probe found it lacking
    if len(data) != sizes.sum():
        return [None] * len(fds), np.ones(len(fds), bool)
    at = np.cumsum(sizes) - sizes
    return framing.unframe_many(data, at, at + sizes)
