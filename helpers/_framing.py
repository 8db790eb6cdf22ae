"""How a TFRecord file frames each record (notebook 11, "Take one record apart"), and the one
check of a record, with a reason for each kind of damage (notebook 11, "Check a record as
TensorFlow's reader does"). The ``unframe`` functions are its fast forms: they compare with the
bytes :func:`frame` makes, and a record that fails goes to the check, which says why.
"""

import functools
import struct

import google_crc32c
import numpy as np

from helpers._checks import PathLike
from helpers._magic import MAGIC, looks_like_zlib

LENGTH = struct.Struct("<Q")  # the payload length
CRC = struct.Struct("<I")  # a masked CRC32C
HEADER = struct.Struct("<QI")  # the length, then the masked CRC32C of its 8 bytes
HEADER_SIZE = HEADER.size  # 12
FOOTER_SIZE = CRC.size  # 4
FRAME_SIZE = HEADER_SIZE + FOOTER_SIZE  # the bytes a record adds to its payload
HEADER_DTYPE = np.dtype([("length", "<u8"), ("crc", "<u4")])  # packed: HEADER, as NumPy reads it
MASK_DELTA = 0xA282EAD8
MAX_RECORD_BYTES = 1 << 28  # the most bytes of one record a reader holds, by default
CHUNK = 1 << 20  # the bytes a reader reads or inflates, or a writer gathers, at a time


class RecordError(ValueError):
    """A damaged TFRecord file: ``path``, record ``index``, header ``offset`` (uncompressed
    stream), and the ``reason`` (notebook 04, "Read a parse error"; the four attributes:
    notebook 12, "Damage a file on purpose")."""

    def __init__(self, path: PathLike, index: int, offset: int, reason: str) -> None:
        self.path = str(path)
        self.index = index
        self.offset = offset
        self.reason = reason
        super().__init__(f"{self.path}: record {index} at byte {offset}: {reason}")

    def __reduce__(self) -> tuple:  # keep the four fields when pickled (by multiprocessing)
        return type(self), (self.path, self.index, self.offset, self.reason)


def mask(crc: int | np.ndarray) -> int | np.ndarray:
    """:func:`masked_crc32c`'s rotation and offset of a CRC32C already computed: one extended
    piece by piece, or an array of them (int64: the shift stays in range)."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) % 2**32


def masked_crc32c(data: bytes) -> int:
    """CRC32C of ``data`` (bytes; TypeError for another type), rotated and offset as TFRecord
    stores it: notebook 11's ``masked_crc`` (notebook 11, "Take one record apart")."""
    # CRC32C rotated right by 15 bits, plus 0xa282ead8, modulo 2**32
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32


@functools.lru_cache(maxsize=1024)
def header_of(length: int) -> bytes:
    """The 12 bytes before a payload of ``length`` bytes (kept: records often share a length)."""
    packed = LENGTH.pack(length)
    return packed + CRC.pack(masked_crc32c(packed))


def frame(payload: bytes) -> tuple[bytes, bytes, bytes]:
    """The record that holds ``payload`` (bytes), in three parts: header, payload, footer (as
    notebook 11, "Take one record apart" frames one by hand with ``struct``)."""
    return header_of(len(payload)), payload, CRC.pack(masked_crc32c(payload))


def check_header(
    header: bytes, path: PathLike, index: int, offset: int, limit: int | None = None
) -> int:
    """Check one 12-byte record header; return the payload length it announces (notebook 11,
    "Check a record as TensorFlow's reader does"). RecordError if the header is cut short, its
    length CRC does not match, or the length is over ``limit`` (``None``: no limit)."""
    if len(header) < HEADER_SIZE:
        hint = " (or this is not a TFRecord file)" if index == 0 else ""
        reason = f"file ends inside a record header ({len(header)} of 12 bytes){hint}"
        raise RecordError(path, index, offset, reason)
    length, length_crc = HEADER.unpack_from(header)
    if masked_crc32c(header[: LENGTH.size]) != length_crc:
        reason = "the record header is damaged"
        if index == 0 and header.startswith(MAGIC["GZIP"]):
            reason = "the file starts like GZIP; read it with compression='GZIP'"
        elif index == 0:
            reason = "this is not a TFRecord file (or its first header is damaged)"
        raise RecordError(path, index, offset, f"length CRC mismatch: {reason}")
    if limit is not None and length > limit:
        reason = f"the record claims {length:,} bytes, more than max_record_bytes={limit:,}"
        raise RecordError(path, index, offset, f"{reason} (verify checks it without holding it)")
    return length


def unframe_header(header: bytes, limit: int | None) -> int | None:
    """The payload length ``header`` announces if it is what :func:`header_of` makes of that
    length and no more than ``limit``, else None (then :func:`check_header` says why)."""
    if len(header) != HEADER_SIZE:
        return None
    length = LENGTH.unpack_from(header)[0]
    within = limit is None or length <= limit
    return length if within and header == header_of(length) else None


def check_size(size: int, length: int, path: PathLike, index: int, offset: int) -> None:
    """RecordError unless the ``size`` bytes after a header hold its payload and footer."""
    if size < length:
        reason = f"file ends inside the payload ({size} of {length} bytes)"
        raise RecordError(path, index, offset, reason)
    if size < length + FOOTER_SIZE:
        reason = f"file ends inside the payload CRC ({size - length} of 4 bytes)"
        raise RecordError(path, index, offset, reason)


def check_crc(masked: int, footer: bytes, path: PathLike, index: int, offset: int) -> None:
    """RecordError unless a payload's ``masked`` CRC is the one its ``footer`` holds."""
    if masked != CRC.unpack_from(footer)[0]:
        reason = "payload CRC mismatch: the record's bytes were changed"
        raise RecordError(path, index, offset, reason)


def check_payload(body: bytes, length: int, path: PathLike, index: int, offset: int) -> bytes:
    """Check a record's payload and its 4-byte CRC in ``body``; return the payload (notebook 11,
    "Check a record as TensorFlow's reader does"). RecordError if ``body`` is cut short or the
    payload CRC does not match."""
    payload = body[:length]  # sliced once: a slice of a large payload is a copy
    check_size(len(body), length, path, index, offset)
    check_crc(masked_crc32c(payload), body[length:], path, index, offset)
    return payload


def unframe(data: bytes, start: int, end: int) -> bytes | None:
    """The payload of the record in ``data[start:end]`` if it is what :func:`frame` makes of
    it, else None (then :func:`check_header` and :func:`check_payload` say why)."""
    payload = data[start + HEADER_SIZE : end - FOOTER_SIZE]
    header, _, footer = frame(payload)
    intact = data[start : start + HEADER_SIZE] == header and data[end - FOOTER_SIZE : end] == footer
    return payload if intact else None


def unframe_many(data: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[list, np.ndarray]:
    """:func:`unframe` for the records of ``data`` from ``starts`` to ``ends``, with NumPy: their
    payloads, and a mask of those that fail the comparisons (then the check says why)."""
    headers, footers = ends_at(data, starts, ends)
    where = zip((starts + HEADER_SIZE).tolist(), (ends - FOOTER_SIZE).tolist(), strict=True)
    payloads = [data[first:last] for first, last in where]
    return payloads, bad_frames(headers, footers, payloads, ends - starts)


def ends_at(data: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The headers (:data:`HEADER_DTYPE`) and stored payload CRCs of the records of ``data`` (any
    buffer: a memory map too) from ``starts`` to ``ends``, gathered by NumPy."""
    every_crc = np.ndarray(len(data) - FOOTER_SIZE + 1, "<u4", data, 0, (1,))  # at each byte
    return headers_at(data, starts), every_crc[ends - FOOTER_SIZE]


def bad_frames(headers: np.ndarray, footers: np.ndarray, payloads: list, sizes: np.ndarray):
    """Which records of :func:`frames_at` differ from what :func:`frame` makes of their payloads,
    ``sizes`` bytes each, frame included."""
    crcs = mask(np.fromiter(map(google_crc32c.value, payloads), np.int64, len(payloads)))
    bad = headers["length"] != (sizes - FRAME_SIZE).astype(np.uint64)
    return bad | bad_headers(headers) | (crcs != footers)


def headers_at(data: bytes, starts: np.ndarray) -> np.ndarray:
    """The headers (:data:`HEADER_DTYPE`) at byte offsets ``starts`` of ``data``, with NumPy."""
    return np.ndarray(len(data) - HEADER_SIZE + 1, HEADER_DTYPE, data, 0, (1,))[starts]


def bad_headers(headers: np.ndarray) -> np.ndarray:
    """Which ``headers`` fail their length CRC. It covers only the length: one CRC per distinct
    length checks them all (records of one length, the common case, need no sort)."""
    lengths = headers["length"]
    if lengths.size and (lengths == lengths[0]).all():
        return headers["crc"] != masked_crc32c(LENGTH.pack(int(lengths[0])))
    distinct, which = np.unique(lengths, return_inverse=True)
    crcs = np.array([masked_crc32c(LENGTH.pack(n)) for n in distinct.tolist()], np.uint32)
    return crcs[which.reshape(-1)] != headers["crc"]


def detect_compression(path: PathLike) -> str | None:
    """How a record file is stored, told by its first bytes (notebook 11, "Recognise the three
    kinds of file"): ``None`` (a valid first header, or empty), ``"GZIP"`` or ``"ZLIB"``. If none
    fits, :func:`check_header`'s RecordError; FileNotFoundError if there is no file."""
    with open(path, "rb") as stream:
        start = stream.read(HEADER_SIZE)
    if not start:
        return None
    try:
        check_header(start, path, 0, 0)
    except RecordError:
        if start.startswith(MAGIC["GZIP"]):
            return "GZIP"
        if looks_like_zlib(start):
            return "ZLIB"
        raise  # a damaged or foreign file: the framing's reason, not a guess
    return None
