"""How a TFRecord file frames each record (:data:`HEADER`, the payload, its masked CRC32C), and
the one check of a record: :func:`check_header` and :func:`check_payload`, with a reason for
each kind of damage. :func:`unframe` and :func:`unframe_many` (NumPy) are its fast forms for
memory-mapped files: the same comparisons; a record that fails them goes to the check.
"""

import functools
import struct

import google_crc32c
import numpy as np

from helpers._checks import PathLike
from helpers._magic import MAGIC

LENGTH, CRC = struct.Struct("<Q"), struct.Struct("<I")  # the payload length; a masked CRC32C
HEADER = struct.Struct("<QI")  # the length, then the masked CRC32C of its 8 bytes
HEADER_SIZE, FOOTER_SIZE = HEADER.size, CRC.size  # 12 and 4
FRAME_SIZE = HEADER_SIZE + FOOTER_SIZE  # the bytes a record adds to its payload
HEADER_DTYPE = np.dtype([("length", "<u8"), ("crc", "<u4")])  # packed: HEADER, as NumPy reads it
MASK_DELTA = 0xA282EAD8
MAX_RECORD_BYTES = 1 << 28  # the most bytes of one record a reader holds, by default
CHUNK = 1 << 20  # the bytes a reader reads or inflates, or a writer gathers, at a time


class RecordError(ValueError):
    """A damaged TFRecord file: ``path``, record ``index``, header ``offset`` (uncompressed
    stream), and the ``reason``."""

    def __init__(self, path: PathLike, index: int, offset: int, reason: str) -> None:
        self.path, self.index, self.offset, self.reason = str(path), index, offset, reason
        super().__init__(f"{self.path}: record {index} at byte {offset}: {reason}")

    def __reduce__(self) -> tuple:  # keep the four fields when pickled (by multiprocessing)
        return type(self), (self.path, self.index, self.offset, self.reason)


def mask(crc: int | np.ndarray) -> int | np.ndarray:
    """A CRC32C rotated right by 15 bits and offset, as TFRecord stores it (ints or arrays)."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """CRC32C of ``data``, rotated and offset as TFRecord stores it."""
    return mask(google_crc32c.value(bytes(data)))


@functools.lru_cache(maxsize=1024)
def header_of(length: int) -> bytes:
    """The 12 bytes before a payload of ``length`` bytes (kept: records often share a length)."""
    packed = LENGTH.pack(length)
    return packed + CRC.pack(masked_crc32c(packed))


def frame(payload: bytes) -> tuple[bytes, bytes, bytes]:
    """The record that holds ``payload`` (bytes), in three parts: header, payload, footer."""
    return header_of(len(payload)), payload, CRC.pack(masked_crc32c(payload))


def check_header(
    header: bytes, path: PathLike, index: int, offset: int, limit: int | None = None
) -> int:
    """Check one 12-byte record header; return the payload length it announces. RecordError if
    the header is cut short, its length CRC does not match, or the length is over ``limit``
    (bytes a reader would hold; ``None``: no limit)."""
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
    """Check a record's payload and its 4-byte CRC in ``body``; return the payload. RecordError
    if ``body`` is cut short or the payload CRC does not match."""
    check_size(len(body), length, path, index, offset)
    check_crc(masked_crc32c(body[:length]), body[length:], path, index, offset)
    return body[:length]


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
    every_crc = np.ndarray(len(data) - FOOTER_SIZE + 1, "<u4", data, 0, (1,))  # at each byte
    headers, footers = headers_at(data, starts), every_crc[ends - FOOTER_SIZE]
    where = zip((starts + HEADER_SIZE).tolist(), (ends - FOOTER_SIZE).tolist(), strict=True)
    payloads = [data[first:last] for first, last in where]
    crcs = mask(np.fromiter(map(google_crc32c.value, payloads), np.int64, len(payloads)))
    bad = headers["length"] != (ends - starts - FRAME_SIZE).astype(np.uint64)
    return payloads, bad | bad_headers(headers) | (crcs != footers)


def headers_at(data: bytes, starts: np.ndarray) -> np.ndarray:
    """The headers (:data:`HEADER_DTYPE`) at byte offsets ``starts`` of ``data``, with NumPy."""
    return np.ndarray(len(data) - HEADER_SIZE + 1, HEADER_DTYPE, data, 0, (1,))[starts]


def bad_headers(headers: np.ndarray) -> np.ndarray:
    """Which ``headers`` fail their length CRC. It covers only the length: one CRC per distinct
    length checks them all."""
    distinct, which = np.unique(headers["length"], return_inverse=True)
    crcs = np.array([masked_crc32c(LENGTH.pack(n)) for n in distinct.tolist()], np.uint32)
    return crcs[which.reshape(-1)] != headers["crc"]
