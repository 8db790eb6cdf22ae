"""An array as bytes in ``.npy`` format (notebook 01, "Keep dtype and shape with the bytes")."""

import io
import math
import tokenize

import numpy as np
from numpy.lib import format as npy

from helpers._magic import MAGIC


def pack(array: np.ndarray) -> bytes:
    """``array`` as the bytes ``np.save`` writes (notebook 01). ValueError for an array of Python
    objects: they would need pickle, which :func:`unpack` refuses."""
    array = np.asarray(array)
    if array.dtype.hasobject:
        what = "it holds Python objects, not values (store numbers, bools or fixed-width strings)"
        raise ValueError(f"cannot pack an array of dtype {array.dtype}: {what}")
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def unpack(blob: bytes | bytearray | memoryview) -> np.ndarray:
    """The array of :func:`pack`'s bytes, checked before any allocation (notebook 01). TypeError
    if ``blob`` is not bytes-like; ValueError (its length, what was expected) for no .npy magic,
    an unreadable header, pickled objects, or fewer or more data bytes than the header says."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected .npy bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    stream = io.BytesIO(blob)
    size = f"{len(blob):,} bytes"
    if not blob.startswith(MAGIC["NPY"]):
        problem = "truncated" if MAGIC["NPY"].startswith(blob) else "not"
        expected = f"expected the magic {MAGIC['NPY']!r}, found {blob[:6]!r}"
        raise ValueError(f"{problem} .npy bytes ({size}): {expected}")
    try:
        version = npy.read_magic(stream)
        if version not in ((1, 0), (2, 0), (3, 0)):  # 2.0 and 3.0 read their header alike
            raise ValueError(f"format version {version} is not one of (1, 0), (2, 0), (3, 0)")
        read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, _, dtype = read_header(stream)
    except (ValueError, TypeError, SyntaxError, tokenize.TokenError) as error:  # NumPy parses text
        problem = "truncated" if str(error).startswith("EOF") else "unreadable"
        raise ValueError(f"{problem} .npy header ({size}): {error}") from error
    if dtype.hasobject:
        raise ValueError(f"refused .npy bytes ({size}): dtype {dtype} holds pickled Python objects")
    start = stream.tell()
    needed = dtype.itemsize * math.prod(shape)
    found = len(blob) - start
    if found != needed:
        problem = f"{'truncated' if found < needed else 'too long'} .npy bytes ({size})"
        says = f"the header says dtype {dtype.str} and shape {shape}, so {needed:,} data bytes"
        raise ValueError(f"{problem}: {says} after byte {start:,}; found {found:,}")
    stream.seek(0)
    return np.load(stream, allow_pickle=False)
