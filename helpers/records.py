"""The TFRecord file format in pure Python: write, read and verify records.

A TFRecord file is a sequence of records, each laid out as::

    uint64 length          little-endian, the payload size in bytes
    uint32 masked_crc32c(length bytes)
    bytes  payload         `length` bytes (usually a serialized tf.train.Example)
    uint32 masked_crc32c(payload)

Notebook 02 writes such files with ``tf.io.TFRecordWriter``, notebook 06 takes one apart.
Files are plain, ``"GZIP"`` or ``"ZLIB"``, as TensorFlow writes them. Damage raises
:class:`RecordError` (file, record, byte offset), from :func:`check_header` and
:func:`check_payload`, the one framing check here and in :mod:`helpers.index`.
"""

import contextlib
import fcntl
import glob
import io
import itertools
import json
import os
import re
import secrets
import struct
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import google_crc32c

from helpers._checks import check_compression, check_int

_HEADER = struct.Struct("<QI")  # payload length, masked CRC of the 8 length bytes
_CRC = struct.Struct("<I")
_HEADER_SIZE, _FOOTER_SIZE = 12, 4
_MASK_DELTA = 0xA282EAD8
_GZIP_MAGIC = b"\x1f\x8b"
_WBITS = {"GZIP": 31, "ZLIB": 15}  # zlib's wbits; TensorFlow uses memLevel 9 for both
_SUFFIX = {None: ".tfrecord", "GZIP": ".tfrecord.gz", "ZLIB": ".tfrecord.zz"}
_BUFFER = 1 << 20
_MAX_RECORD_BYTES = 1 << 28  # the most bytes of one record a reader holds, by default


class RecordError(ValueError):
    """A damaged TFRecord file: ``path``, record ``index``, header ``offset`` (uncompressed
    stream), and the ``reason``."""

    def __init__(self, path: str | os.PathLike, index: int, offset: int, reason: str):
        self.path, self.index, self.offset, self.reason = str(path), index, offset, reason
        super().__init__(f"{self.path}: record {index} at byte {offset}: {reason}")

    def __reduce__(self):  # keep the four fields when pickled (e.g. by multiprocessing)
        return type(self), (self.path, self.index, self.offset, self.reason)


def masked_crc32c(data: bytes) -> int:
    """CRC32C of ``data``, rotated and offset as TFRecord stores it (notebook 06)."""
    return _mask(google_crc32c.value(bytes(data)))


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def check_header(
    header: bytes, path: str | os.PathLike, index: int, offset: int, limit: int | None = None
) -> int:
    """Check one 12-byte record header; return the payload length it announces. RecordError if
    the header is cut short, its length CRC does not match, or the length is over ``limit``
    (bytes a reader would hold; ``None``: no limit)."""
    if len(header) < _HEADER_SIZE:
        hint = " (or this is not a TFRecord file)" if index == 0 else ""
        reason = f"file ends inside a record header ({len(header)} of 12 bytes){hint}"
        raise RecordError(path, index, offset, reason)
    length, length_crc = _HEADER.unpack_from(header)
    if masked_crc32c(header[:8]) != length_crc:
        reason = "the record header is damaged"
        if index == 0 and header.startswith(_GZIP_MAGIC):
            reason = "the file starts like GZIP; read it with compression='GZIP'"
        elif index == 0:
            reason = "this is not a TFRecord file (or its first header is damaged)"
        raise RecordError(path, index, offset, f"length CRC mismatch: {reason}")
    if limit is not None and length > limit:
        reason = f"the record claims {length:,} bytes, more than max_record_bytes={limit:,}"
        raise RecordError(path, index, offset, f"{reason} (verify checks it without holding it)")
    return length


def check_payload(
    body: bytes, length: int, path: str | os.PathLike, index: int, offset: int
) -> bytes:
    """Check a record's payload and its 4-byte CRC in ``body``; return the payload. RecordError
    if ``body`` is cut short or the payload CRC does not match."""
    payload = body[:length]
    _check_body(len(body), length, masked_crc32c(payload), body[length:], path, index, offset)
    return payload


def _check_body(size: int, length: int, masked: int, footer: bytes, path, index, offset) -> None:
    if size < length:
        reason = f"file ends inside the payload ({size} of {length} bytes)"
        raise RecordError(path, index, offset, reason)
    if size < length + _FOOTER_SIZE:
        reason = f"file ends inside the payload CRC ({size - length} of 4 bytes)"
        raise RecordError(path, index, offset, reason)
    if masked != _CRC.unpack_from(footer)[0]:
        reason = "payload CRC mismatch: the record's bytes were changed"
        raise RecordError(path, index, offset, reason)


def _temp_name(path: Path, tag: str = "") -> Path:
    """A hidden name next to ``path`` that carries this process's id: ``.NAME.PID-TAGHEX.tmp``."""
    return path.parent / f".{path.name}.{os.getpid()}-{tag}{secrets.token_hex(4)}.tmp"


class _AtomicRecordFile:
    """One output file: records go to a temporary file, renamed over ``path`` by :func:`_commit`."""

    def __init__(self, path: Path, compression: str | None, index: bool = False):
        if not path.parent.is_dir():
            raise FileNotFoundError(f"cannot write {path}: its folder {path.parent} does not exist")
        self.path, self.count, self.tmp_name = path, 0, _temp_name(path)
        self.sizes: list[int] | None = [] if index else None  # of each record, for the index
        self.pairs = [(self.tmp_name, path)]  # temporary and final names, to commit
        self.file = open(self.tmp_name, "xb", buffering=_BUFFER)
        wbits = _WBITS.get(compression)
        self.deflate = zlib.compressobj(6, zlib.DEFLATED, wbits, 9) if wbits else None

    def write(self, payload: bytes) -> None:
        length = struct.pack("<Q", len(payload))
        header = length + _CRC.pack(masked_crc32c(length))
        for part in (header, payload, _CRC.pack(masked_crc32c(payload))):  # payload: no copy
            self.file.write(self.deflate.compress(part) if self.deflate else part)
        self.count += 1
        if self.sizes is not None:
            self.sizes.append(_HEADER_SIZE + len(payload) + _FOOTER_SIZE)

    def finish(self) -> None:
        if self.deflate:
            self.file.write(self.deflate.flush())
        self.file.flush()
        os.fsync(self.file.fileno())  # the data is on disk before a name points at it
        self.file.close()
        if self.sizes is not None:
            self.pairs.append(_write_index(self.path, self.sizes))

    def discard(self) -> None:
        self.file.close()
        for temp, _ in self.pairs:
            temp.unlink(missing_ok=True)


def _write_index(path: Path, sizes: list[int]) -> tuple[Path, Path]:
    """Write ``path``'s index (``start length`` per record) to a temporary file: (temp, final)."""
    index = path.with_name(path.name + ".index")
    temp, starts = _temp_name(index), itertools.accumulate(sizes, initial=0)
    temp.write_text("".join(f"{a} {n}\n" for a, n in zip(starts, sizes, strict=False)))
    return temp, index


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[int]:
    """Hold the folder's lock (``flock``; other helpers writers wait); yield its descriptor."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # releases the lock, as the death of the process does


def _finish_interrupted(folder: Path, fd: int) -> None:
    """Redo the renames that a writer killed during its commit left undone (the lock is held)."""
    for journal in folder.glob(".*.commit"):
        pairs = json.loads(journal.read_text())
        for temp, path in pairs:
            if os.path.exists(temp):
                os.replace(temp, path)
        os.fsync(fd)
        journal.unlink()
        names = ", ".join(Path(path).name for _, path in pairs)
        warnings.warn(f"finished an interrupted write in {folder}: {names}", stacklevel=5)


def _is_alive(pid: int) -> bool:
    with contextlib.suppress(PermissionError):  # alive, another user's
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
    return True


def _remove_stale_temps(paths: list[Path]) -> None:
    """Delete the temporary files of ``paths`` whose writer process has died, and say so."""
    temps = [t for p in paths for t in p.parent.glob(f".{glob.escape(p.name)}.*.tmp")]
    pids = [re.search(r"\.(\d+)-\w*\.tmp$", t.name) for t in temps]  # None: no pid in the name
    stale = [t for t, p in zip(temps, pids, strict=True) if not (p and _is_alive(int(p[1])))]
    for temp in stale:
        temp.unlink(missing_ok=True)
    if stale:
        names = ", ".join(t.name for t in stale)
        message = f"removed {len(stale)} temporary file(s) left by a writer that was killed"
        warnings.warn(f"{message} in {stale[0].parent}: {names}", stacklevel=5)


def _check_targets(paths: list[Path], overwrite: bool) -> None:
    """Repair what killed writers left next to ``paths``; FileExistsError unless overwrite."""
    if paths[0].parent.is_dir():
        with _folder_locked(paths[0].parent) as fd:
            _finish_interrupted(paths[0].parent, fd)
            _remove_stale_temps(paths)
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        verb = "exists" if len(existing) == 1 else "exist"
        message = f"{', '.join(existing)} already {verb}; pass overwrite=True to replace"
        raise FileExistsError(message)


def _commit(pairs: list[tuple[Path, Path]], overwrite: bool) -> None:
    """Rename each finished temporary file over its path, as one commit, under the folder's lock
    (the last writer wins, whole). A journal lists the renames first; if a kill leaves it, the
    next write in the folder redoes them (the temporary files are complete on disk)."""
    folder = pairs[0][1].parent
    journal = folder / f".{pairs[0][1].name}.{os.getpid()}.commit"
    with _folder_locked(folder) as fd:
        _finish_interrupted(folder, fd)
        existing = [str(path) for _, path in pairs if path.exists()]
        if existing and not overwrite:  # another writer committed since the check
            raise FileExistsError(f"{', '.join(existing)} appeared while this write ran")
        temp = _temp_name(journal)
        temp.write_text(json.dumps([[str(t), str(p)] for t, p in pairs]))
        os.replace(temp, journal)
        os.fsync(fd)
        for temp, path in pairs:
            os.replace(temp, path)
        os.fsync(fd)  # the renames are on disk before the journal goes
        journal.unlink()
        os.fsync(fd)


@contextlib.contextmanager
def _output_folder(prefix: str | os.PathLike) -> Iterator[None]:
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


def _write_all(
    paths: list[Path],
    payloads: Iterable[bytes],
    compression: str | None,
    overwrite: bool,
    index: bool = False,
) -> list[int]:
    """Deal ``payloads`` round-robin over ``paths``, committed together (with their ``.index``
    files if ``index``); a failure leaves the old files and no temporary file."""
    _check_targets(paths, overwrite)
    files: list[_AtomicRecordFile] = []
    try:
        files.extend(_AtomicRecordFile(path, compression, index) for path in paths)
        for number, payload in enumerate(payloads):
            if not isinstance(payload, (bytes, bytearray, memoryview)):
                kind, target = type(payload).__name__, paths[number % len(paths)]
                raise TypeError(f"record {number} for {target} is {kind}, expected bytes")
            files[number % len(files)].write(bytes(payload))
        for file in files:
            file.finish()
        _commit([pair for file in files for pair in file.pairs], overwrite)
    except BaseException:
        for file in files:
            file.discard()
        raise
    return [file.count for file in files]


def write_records(
    path: str | os.PathLike,
    payloads: Iterable[bytes],
    compression: str | None = None,
    overwrite: bool = False,
) -> int:
    """Write ``payloads`` as TFRecord records to ``path``; return how many were written.

    Notebook 02's ``tf.io.TFRecordWriter``, made sturdy: the file appears only when complete
    (temporary file, fsync, rename); an existing one is replaced only if ``overwrite``. Raises
    FileExistsError if ``path`` exists and not ``overwrite``, FileNotFoundError if its folder
    does not exist, ValueError for an unknown ``compression``, TypeError for a non-bytes payload.
    """
    return _write_all([Path(path)], payloads, check_compression(compression), overwrite)[0]


def _shard_paths(prefix: str | os.PathLike, num_shards, compression=None, index=False) -> list:
    """``<prefix>-00000-of-00004.tfrecord`` (``.tfrecord.gz`` for GZIP, ``.zz`` for ZLIB);
    TypeError or ValueError for a bad ``num_shards`` or ``compression``, or with ``index``."""
    num_shards = check_int(num_shards, "num_shards", minimum=1)
    prefix, suffix = Path(prefix), _SUFFIX[check_compression(compression)]
    if index and compression:
        raise ValueError(f"index=True needs plain files: a {compression} file cannot be indexed")
    names = (f"{prefix.name}-{i:05d}-of-{num_shards:05d}{suffix}" for i in range(num_shards))
    return [prefix.with_name(name) for name in names]


def write_sharded(
    prefix: str | os.PathLike,
    payloads: Iterable[bytes],
    num_shards: int,
    compression: str | None = None,
    overwrite: bool = False,
    index: bool = False,
) -> list[Path]:
    """Write ``payloads`` into ``num_shards`` TFRecord files; return their paths.

    Record ``i`` goes to shard ``i % num_shards`` (notebook 02, "the sturdy version"). Names are
    checked before anything is read; the shards are committed together at the end, so an error
    leaves neither shards nor temporary files (a kill during the renames: the next helpers write
    into the folder finishes them, and warns). Of two writers to one prefix the last to commit
    wins, whole. With ``index`` (plain files) each shard's ``.index`` is committed with it
    (:class:`helpers.index.RecordView`, notebook 04). Raises FileExistsError if a shard exists
    and not ``overwrite`` (nothing is read); else as :func:`write_records`, or a bad ``num_shards``.
    """
    paths = _shard_paths(prefix, num_shards, compression, index)
    _write_all(paths, payloads, check_compression(compression), overwrite, index)
    return paths


class _Inflater(io.RawIOBase):
    """The uncompressed bytes of a GZIP or ZLIB file, as a readable stream."""

    def __init__(self, path: Path, compression: str):
        self.file = open(path, "rb")
        self.inflate = zlib.decompressobj(_WBITS[compression])

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # inflates at most 1 MiB at a time, whatever is asked
        while not self.inflate.eof:
            if not (data := self.inflate.unconsumed_tail or self.file.read(_BUFFER)):
                raise EOFError("the compressed stream ends early")
            if piece := self.inflate.decompress(data, min(len(buffer), _BUFFER)):
                buffer[: len(piece)] = piece
                return len(piece)
        if self.inflate.unused_data or self.file.read(1):
            raise EOFError("unexpected data after the end of the compressed stream")
        return 0

    def close(self) -> None:
        self.file.close()
        super().close()


def _streamed(stream, length: int, path: Path, index: int, offset: int) -> None:
    """:func:`check_payload` for a payload read piece by piece, never held whole."""
    crc, size = google_crc32c.value(b""), 0
    while size < length and (piece := stream.read(min(length - size, _BUFFER))):
        crc, size = google_crc32c.extend(crc, piece), size + len(piece)
    footer = stream.read(_FOOTER_SIZE) if size == length else b""
    _check_body(size + len(footer), length, _mask(crc), footer, path, index, offset)


def _records(path: Path, compression: str | None, limit: int | None) -> Iterator[tuple]:
    """``(offset, payload)`` of every checked record; ``limit=None`` (verify): payloads not held."""
    index = offset = 0
    raw = _Inflater(path, compression) if compression else open(path, "rb", buffering=0)
    try:
        with io.BufferedReader(raw, _BUFFER) as stream:
            while header := stream.read(_HEADER_SIZE):
                length = check_header(header, path, index, offset, limit)
                where = path, index, offset
                if limit is None:  # verify: nothing held
                    yield offset, _streamed(stream, length, *where)
                else:
                    yield offset, check_payload(stream.read(length + _FOOTER_SIZE), length, *where)
                index, offset = index + 1, offset + _HEADER_SIZE + length + _FOOTER_SIZE
    except (zlib.error, EOFError) as error:
        reason = f"{compression} stream is damaged or not {compression} ({error})"
        raise RecordError(path, index, offset, reason) from error


def iter_records(
    path: str | os.PathLike,
    compression: str | None = None,
    offsets: bool = False,
    max_record_bytes: int | None = None,
) -> Iterator[bytes] | Iterator[tuple[int, bytes]]:
    """Yield the payload of every record in a TFRecord file, checking both CRCs.

    Plain Python (notebook 02, "Read them again in plain Python"; ``python -m benchmarks records``
    times it against TensorFlow). With ``offsets=True`` yield ``(offset, payload)``, where the
    header starts in the (uncompressed) stream (notebook 06). A record over ``max_record_bytes``
    (default 256 MiB) is refused unread. Raises RecordError at the first damaged or too long record,
    ValueError for an unknown ``compression``, FileNotFoundError if there is no file.
    """
    limit = _MAX_RECORD_BYTES if max_record_bytes is None else max_record_bytes
    limit = check_int(limit, "max_record_bytes", minimum=0)
    records = _records(Path(path), check_compression(compression), limit)
    return records if offsets else (payload for _, payload in records)


def verify(path: str | os.PathLike, compression: str | None = None) -> int:
    """Check every record of a TFRecord file, streaming (small memory); return how many. Raises as
    :func:`iter_records`: RecordError at the first damaged record (file, index, byte offset)."""
    return sum(1 for _ in _records(Path(path), check_compression(compression), None))


def detect_compression(path: str | os.PathLike) -> str | None:
    """How a record file is stored, told by its first bytes (notebook 06): ``None`` for a valid
    first header or an empty file, else ``"GZIP"`` for the GZIP magic, ``"ZLIB"`` for a zlib
    header. RecordError (record 0, byte 0) if none fits; FileNotFoundError if there is no file."""
    with open(path, "rb") as stream:
        start = stream.read(_HEADER_SIZE)
    plain = len(start) == _HEADER_SIZE and masked_crc32c(start[:8]) == _HEADER.unpack(start)[1]
    if plain or not start:
        return None
    if start.startswith(_GZIP_MAGIC):
        return "GZIP"
    if len(start) >= 2 and start[0] == 0x78 and (start[0] << 8 | start[1]) % 31 == 0:
        return "ZLIB"
    raise RecordError(path, 0, 0, "neither a TFRecord file nor a GZIP- or ZLIB-compressed one")
