"""One array as one byte string: NumPy's ``.npy`` format (``np.save``, ``np.load``) in memory.

``array.tobytes()`` keeps only the values; ``.npy`` puts dtype and shape in a short text header
in front of them. Shown in notebook 01 (``01_roundtrip_raw_bytes.ipynb``), section "Keep dtype
and shape with the bytes".
"""

from __future__ import annotations

import io
import math
import tokenize

import numpy as np

_MAGIC = b"\x93NUMPY"  # the first six bytes of every .npy file (numpy.lib.format.MAGIC_PREFIX)


def pack(array: np.ndarray) -> bytes:
    """Return ``array`` as the bytes ``np.save`` writes: a header with dtype and shape, the values.

    Byte order is kept (``'>f4'`` stays big-endian); a view (a slice, a transpose) is stored by
    value. Notebook 01, "Keep dtype and shape with the bytes". Raises ValueError for an array
    of Python objects (dtype ``object``): they would need pickle, which :func:`unpack` refuses."""
    array = np.asarray(array)
    if array.dtype.hasobject:
        raise ValueError(
            f"cannot pack an array of dtype {array.dtype}: it holds Python objects, "
            "not values (store numbers, bools or fixed-width strings)"
        )
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def unpack(blob: bytes | bytearray | memoryview) -> np.ndarray:
    """Rebuild the array from :func:`pack`'s bytes (or a ``.npy`` file's): dtype, shape, values.

    A writable array with its own memory; the header is checked against the length of ``blob``
    before memory is allocated for the data. Notebook 01, "Keep dtype and shape with the bytes".
    Raises TypeError if ``blob`` is not bytes-like; ValueError (the blob's length, what was
    expected) if it does not start with the magic ``b'\\x93NUMPY'``, has a header NumPy cannot
    read, holds pickled objects or has fewer or more data bytes than dtype and shape need."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected .npy bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    stream, size = io.BytesIO(blob), f"{len(blob):,} bytes"
    if not blob.startswith(_MAGIC):
        problem = "truncated" if _MAGIC.startswith(blob) else "not"
        expected = f"expected the magic {_MAGIC!r}, found {blob[:6]!r}"
        raise ValueError(f"{problem} .npy bytes ({size}): {expected}")
    try:
        version = np.lib.format.read_magic(stream)
        if version not in ((1, 0), (2, 0), (3, 0)):  # 2.0 and 3.0 read their header alike
            raise ValueError(f"format version {version} is not one of (1, 0), (2, 0), (3, 0)")
        read_header = np.lib.format.read_array_header_1_0
        if version != (1, 0):
            read_header = np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(stream)
    except (ValueError, TypeError, SyntaxError, tokenize.TokenError) as error:  # NumPy parses text
        problem = "truncated" if str(error).startswith("EOF") else "unreadable"
        raise ValueError(f"{problem} .npy header ({size}): {error}") from error
    if dtype.hasobject:
        raise ValueError(f"refused .npy bytes ({size}): dtype {dtype} holds pickled Python objects")
    start, needed = stream.tell(), dtype.itemsize * math.prod(shape)
    if (found := len(blob) - start) != needed:
        raise ValueError(
            f"{'truncated' if found < needed else 'too long'} .npy bytes ({size}): the header "
            f"says dtype {dtype.str} and shape {shape}, so {needed:,} data bytes after byte "
            f"{start:,}; found {found:,}"
        )
    stream.seek(0)
    return np.load(stream, allow_pickle=False)
