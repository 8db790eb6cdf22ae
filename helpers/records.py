"""TFRecord files in pure Python: write, read and verify them, plain, ``"GZIP"`` or ``"ZLIB"``
as TensorFlow writes them (notebook 04, "Compress the files: GZIP and ZLIB"; notebook 11, "Check
a record as TensorFlow's reader does"), with the record check of ``helpers._framing``.
"""

import contextlib
import io
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import google_crc32c

import helpers._framing as framing
from helpers._checks import PathLike, check_compression, check_int
from helpers._commit import committing, shard_paths, temp_path
from helpers._framing import (
    RecordError,
    check_header,
    check_payload,  # noqa: F401 (notebook 11 calls it from here)
    detect_compression,  # noqa: F401 (notebooks 06 and 11 call it from here)
    masked_crc32c,
)
from helpers._index_files import staged_index

_WBITS = {"GZIP": 31, "ZLIB": 15}  # zlib's wbits; TensorFlow uses memLevel 9 for both


class _RecordFile(contextlib.AbstractContextManager):
    """One output file: framed records, gathered and written a mebibyte at a time to a
    temporary file, put on ``pairs`` (:func:`helpers._commit.committing`'s list) as it opens."""

    def __init__(
        self, path: Path, compression: str | None, index: bool, pairs: list[tuple[Path, Path]]
    ) -> None:
        self.path = path
        self.temp = temp_path(path)
        self.count = 0
        self.sizes: list[int] | None = [] if index else None  # of each record, for the index
        self.pairs = pairs
        self.parts: list[bytes] = []  # framed records not yet written
        self.held = 0  # their payloads' bytes
        self.file = open(self.temp, "xb")  # buffered: a write writes all it is given
        pairs.append((self.temp, path))
        wbits = _WBITS.get(compression)
        self.deflate = zlib.compressobj(6, zlib.DEFLATED, wbits, 9) if wbits else None

    def write(self, payload: bytes) -> None:
        self.parts += framing.frame(payload)
        self.count += 1
        self.held += len(payload)
        if self.sizes is not None:
            self.sizes.append(len(payload) + framing.FRAME_SIZE)
        if self.held >= framing.CHUNK:
            self.flush()

    def flush(self) -> None:
        data = b"".join(self.parts)
        self.file.write(self.deflate.compress(data) if self.deflate else data)
        self.parts = []
        self.held = 0

    def finish(self) -> None:
        """Write what is left, sync the file: the data is on disk before a name points at it."""
        self.flush()
        if self.deflate:
            self.file.write(self.deflate.flush())
        self.file.flush()
        os.fsync(self.file.fileno())  # closed by __exit__, before the commit
        if self.sizes is not None:  # the binary index names the file as its temporary name has it
            self.pairs += staged_index(self.path, self.sizes, os.stat(self.temp))

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def _write_all(
    paths: list[Path],
    payloads: Iterable[bytes],
    compression: str | None,
    overwrite: bool,
    index: bool = False,
) -> list[int]:
    """Deal ``payloads`` round-robin over ``paths``, committed together (with their ``.index``
    files if ``index``); a failure before the commit leaves the old files, no temporary file."""
    with committing(paths, overwrite) as pairs, contextlib.ExitStack() as opened:
        files = [opened.enter_context(_RecordFile(p, compression, index, pairs)) for p in paths]
        for number, payload in enumerate(payloads):
            if not isinstance(payload, bytes):  # google_crc32c takes bytes only
                if not isinstance(payload, (bytearray, memoryview)):
                    target = paths[number % len(paths)]
                    kind = type(payload).__name__
                    raise TypeError(f"record {number} for {target} is {kind}, expected bytes")
                payload = bytes(payload)
            files[number % len(files)].write(payload)
        for file in files:
            file.finish()
    return [file.count for file in files]


def write_records(
    path: PathLike,
    payloads: Iterable[bytes],
    compression: str | None = None,
    overwrite: bool = False,
) -> int:
    """Write ``payloads`` as TFRecord records to ``path``; return how many were written.

    ``tf.io.TFRecordWriter``, made sturdy (notebook 07, "Write 70,000 records sorted by label";
    notebook 11, "Check a record as TensorFlow's reader does" shows its bytes are TensorFlow's): the
    file appears only when complete. Raises FileExistsError if ``path`` exists and not
    ``overwrite``, FileNotFoundError if its folder does not exist, ValueError for an unknown
    ``compression``, TypeError for a non-bytes payload.
    """
    return _write_all([Path(path)], payloads, check_compression(compression), overwrite)[0]


def write_sharded(
    prefix: PathLike,
    payloads: Iterable[bytes],
    num_shards: int,
    compression: str | None = None,
    overwrite: bool = False,
    index: bool = False,
) -> list[Path]:
    """Write ``payloads`` into ``num_shards`` TFRecord files, record ``i`` in shard ``i %
    num_shards``, and with ``index`` their index files (notebook 08, "Index the files"), all
    committed together (notebook 04, "Make the writer sturdy"); return their paths. Raises as
    :func:`write_records` (FileExistsError before reading anything), or a bad ``num_shards``."""
    paths = shard_paths(prefix, num_shards, compression, index)
    _write_all(paths, payloads, check_compression(compression), overwrite, index)
    return paths


class _Inflater(io.RawIOBase):
    """The uncompressed bytes of an open GZIP or ZLIB file, as a readable stream."""

    def __init__(self, file: BinaryIO, compression: str) -> None:
        self.file = file
        self.inflate = zlib.decompressobj(_WBITS[compression])

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # inflates at most 1 MiB at a time
        while not self.inflate.eof:
            data = self.inflate.unconsumed_tail or self.file.read(framing.CHUNK)
            if not data:
                raise EOFError("the compressed stream ends early")
            piece = self.inflate.decompress(data, min(len(buffer), framing.CHUNK))
            if piece:
                buffer[: len(piece)] = piece
                return len(piece)
        if self.inflate.unused_data or self.file.read(1):
            raise EOFError("unexpected data after the end of the compressed stream")
        return 0


def _streamed(stream: BinaryIO, length: int, path: Path, index: int, offset: int) -> None:
    """:func:`check_payload` for a payload read piece by piece, never held whole."""
    crc = google_crc32c.value(b"")
    size = 0
    while size < length:
        piece = stream.read(min(length - size, framing.CHUNK))
        if not piece:
            break
        crc = google_crc32c.extend(crc, piece)
        size += len(piece)
    footer = stream.read(framing.FOOTER_SIZE) if size == length else b""
    framing.check_size(size + len(footer), length, path, index, offset)
    framing.check_crc(framing.mask(crc), footer, path, index, offset)


def _held(stream: BinaryIO, length: int, path: Path, index: int, offset: int) -> bytes:
    """:func:`check_payload` for a payload read whole, then its footer, each by itself: slicing
    them out of one body would copy every payload again."""
    payload = stream.read(length)
    footer = stream.read(framing.FOOTER_SIZE)
    if footer != framing.CRC.pack(masked_crc32c(payload)):  # as frame() makes it; else say why
        framing.check_size(len(payload) + len(footer), length, path, index, offset)
        framing.check_crc(masked_crc32c(payload), footer, path, index, offset)
    return payload


def _records(
    path: Path, compression: str | None, limit: int | None, offsets: bool = False
) -> Iterator[bytes] | Iterator[tuple[int, bytes]]:
    """Every checked record's payload (``offsets``: ``(offset, payload)``); ``limit=None``
    (verify): payloads not held, ``None`` given for each."""
    index = offset = 0
    file = open(path, "rb", buffering=0)
    raw = _Inflater(file, compression) if compression else file
    read = _streamed if limit is None else _held
    try:
        with file, io.BufferedReader(raw, framing.CHUNK) as stream:
            while header := stream.read(framing.HEADER_SIZE):
                length = framing.unframe_header(header, limit)
                if length is None:  # the check says why
                    length = check_header(header, path, index, offset, limit)
                payload = read(stream, length, path, index, offset)
                yield (offset, payload) if offsets else payload
                index += 1
                offset += framing.FRAME_SIZE + length
    except (zlib.error, EOFError) as error:
        reason = f"{compression} stream is damaged or not {compression} ({error})"
        raise RecordError(path, index, offset, reason) from error


def iter_records(
    path: PathLike,
    compression: str | None = None,
    offsets: bool = False,
    max_record_bytes: int | None = None,
) -> Iterator[bytes] | Iterator[tuple[int, bytes]]:
    """Yield the payload of every record, both CRCs checked (notebook 11, "Check a record as
    TensorFlow's reader does"); with ``offsets=True``, ``(offset in the uncompressed stream,
    payload)`` (notebook 12, "Damage a file on purpose"). Raises RecordError at the first damaged
    record or one over ``max_record_bytes`` (default 256 MiB; refused unread), ValueError for an
    unknown ``compression``, FileNotFoundError if there is no file."""
    limit = framing.MAX_RECORD_BYTES if max_record_bytes is None else max_record_bytes
    limit = check_int(limit, "max_record_bytes", minimum=0)
    return _records(Path(path), check_compression(compression), limit, offsets)


def verify(path: PathLike, compression: str | None = None) -> int:
    """Check every record of a TFRecord file, streaming (small memory); return how many (as
    notebook 04, "Make the writer sturdy" does). Raises as :func:`iter_records`: RecordError at the
    first damaged record (file, index, byte offset)."""
    return sum(1 for _ in _records(Path(path), check_compression(compression), None))
