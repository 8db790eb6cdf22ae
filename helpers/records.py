"""TFRecord files in pure Python: write, read and verify them, plain, ``"GZIP"`` or ``"ZLIB"``
as TensorFlow writes them (notebooks 02 and 06), with the record check of ``helpers._framing``.
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
from helpers._commit import commit, prepare, shard_paths, temp_path
from helpers._framing import RecordError, check_header, check_payload, masked_crc32c  # noqa: F401
from helpers._index_files import staged_index
from helpers._magic import MAGIC, looks_like_zlib

_WBITS = {"GZIP": 31, "ZLIB": 15}  # zlib's wbits; TensorFlow uses memLevel 9 for both


class _RecordFile:
    """One output file: framed records, gathered and written a mebibyte at a time to a
    temporary file, which :func:`helpers._commit.commit` renames over ``path``."""

    def __init__(self, path: Path, compression: str | None, index: bool = False) -> None:
        self.path, self.count, self.temp = path, 0, temp_path(path)
        self.sizes: list[int] | None = [] if index else None  # of each record, for the index
        self.pairs = [(self.temp, path)]  # temporary and final names, to commit
        self.parts: list[bytes] = []  # framed records not yet written
        self.held = 0  # their payloads' bytes
        self.file = open(self.temp, "xb")  # buffered: a write writes all it is given
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
        self.parts, self.held = [], 0

    def finish(self) -> None:
        """Write what is left, sync the file: the data is on disk before a name points at it."""
        self.flush()
        if self.deflate:
            self.file.write(self.deflate.flush())
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        if self.sizes is not None:  # the binary index names the file as its temporary name has it
            self.pairs += staged_index(self.path, self.sizes, os.stat(self.temp))

    def discard(self) -> None:
        self.file.close()
        for temp, _ in self.pairs:
            temp.unlink(missing_ok=True)


def _write_all(
    paths: list[Path],
    payloads: Iterable[bytes],
    compression: str | None,
    overwrite: bool,
    index: bool = False,
) -> list[int]:
    """Deal ``payloads`` round-robin over ``paths``, committed together (with their ``.index``
    files if ``index``); a failure before the commit leaves the old files, no temporary file."""
    prepare(paths, overwrite)
    files: list[_RecordFile] = []
    try:
        files.extend(_RecordFile(path, compression, index) for path in paths)
        for number, payload in enumerate(payloads):
            if not isinstance(payload, bytes):  # google_crc32c takes bytes only
                if not isinstance(payload, (bytearray, memoryview)):
                    kind, target = type(payload).__name__, paths[number % len(paths)]
                    raise TypeError(f"record {number} for {target} is {kind}, expected bytes")
                payload = bytes(payload)
            files[number % len(files)].write(payload)
        for file in files:
            file.finish()
    except BaseException:
        for file in files:
            file.discard()
        raise
    commit([pair for file in files for pair in file.pairs], overwrite)
    return [file.count for file in files]


def write_records(
    path: PathLike,
    payloads: Iterable[bytes],
    compression: str | None = None,
    overwrite: bool = False,
) -> int:
    """Write ``payloads`` as TFRecord records to ``path``; return how many were written.

    ``tf.io.TFRecordWriter``, made sturdy (notebooks 04, 05, 06): the file appears only when
    complete (temporary file, fsync, rename); an existing one is replaced only if ``overwrite``.
    Raises FileExistsError if ``path`` exists and not ``overwrite``, FileNotFoundError if its
    folder does not exist, ValueError for an unknown ``compression``, TypeError for a non-bytes
    payload.
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
    """Write ``payloads`` into ``num_shards`` TFRecord files; return their paths.

    Record ``i`` goes to shard ``i % num_shards`` (notebook 02, "Make it sturdy"); the shards,
    and with ``index`` each one's ``.index`` (notebook 04), are committed together at the end
    (``helpers._commit``). Raises FileExistsError if a shard exists and not ``overwrite``
    (nothing is read); else as :func:`write_records`, or a bad ``num_shards``.
    """
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
    crc, size = google_crc32c.value(b""), 0
    while size < length:
        piece = stream.read(min(length - size, framing.CHUNK))
        if not piece:
            break
        crc, size = google_crc32c.extend(crc, piece), size + len(piece)
    footer = stream.read(framing.FOOTER_SIZE) if size == length else b""
    framing.check_size(size + len(footer), length, path, index, offset)
    framing.check_crc(framing.mask(crc), footer, path, index, offset)


def _records(path: Path, compression: str | None, limit: int | None) -> Iterator[tuple]:
    """``(offset, payload)`` of every checked record; ``limit=None`` (verify): payloads not held."""
    index = offset = 0
    file = open(path, "rb", buffering=0)
    raw = _Inflater(file, compression) if compression else file
    try:
        with file, io.BufferedReader(raw, framing.CHUNK) as stream:
            while header := stream.read(framing.HEADER_SIZE):
                length = check_header(header, path, index, offset, limit)
                if limit is None:  # verify: nothing held
                    yield offset, _streamed(stream, length, path, index, offset)
                else:
                    body = stream.read(length + framing.FOOTER_SIZE)
                    yield offset, check_payload(body, length, path, index, offset)
                index, offset = index + 1, offset + framing.FRAME_SIZE + length
    except (zlib.error, EOFError) as error:
        reason = f"{compression} stream is damaged or not {compression} ({error})"
        raise RecordError(path, index, offset, reason) from error


def iter_records(
    path: PathLike,
    compression: str | None = None,
    offsets: bool = False,
    max_record_bytes: int | None = None,
) -> Iterator[bytes] | Iterator[tuple[int, bytes]]:
    """Yield the payload of every record, both CRCs checked (notebook 02, "Read the records in
    plain Python"); with ``offsets=True``, ``(offset in the uncompressed stream, payload)``
    (notebook 06). A record over ``max_record_bytes`` (default 256 MiB) is refused unread.
    Raises RecordError at the first damaged or too long record, ValueError for an unknown
    ``compression``, FileNotFoundError if there is no file."""
    limit = framing.MAX_RECORD_BYTES if max_record_bytes is None else max_record_bytes
    limit = check_int(limit, "max_record_bytes", minimum=0)
    records = _records(Path(path), check_compression(compression), limit)
    return records if offsets else (payload for _, payload in records)


def verify(path: PathLike, compression: str | None = None) -> int:
    """Check every record of a TFRecord file, streaming (small memory); return how many. Raises as
    :func:`iter_records`: RecordError at the first damaged record (file, index, byte offset)."""
    return sum(1 for _ in _records(Path(path), check_compression(compression), None))


def detect_compression(path: PathLike) -> str | None:
    """How a record file is stored, told by its first bytes (notebook 06): ``None`` for a valid
    first header or an empty file, else ``"GZIP"`` for the GZIP magic, ``"ZLIB"`` for a zlib
    header. RecordError (record 0, byte 0) if none fits; FileNotFoundError if there is no file."""
    with open(path, "rb") as stream:
        start = stream.read(framing.HEADER_SIZE)
    if not start:
        return None
    with contextlib.suppress(RecordError):
        check_header(start, path, 0, 0)
        return None
    if start.startswith(MAGIC["GZIP"]):
        return "GZIP"
    if looks_like_zlib(start):
        return "ZLIB"
    raise RecordError(path, 0, 0, "neither a TFRecord file nor a GZIP- or ZLIB-compressed one")
