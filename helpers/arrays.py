"""One array as one byte string: NumPy's ``.npy`` format, kept in memory.

``array.tobytes()`` keeps only the values; the dtype and shape must travel with
them. ``np.save`` puts both in a short text header in front of the values and
``np.load`` reads them back. :func:`pack` and :func:`unpack` do this on an
``io.BytesIO`` (no file), refuse pickled objects both ways, and turn bytes that
are not one complete ``.npy`` array into a ``ValueError`` that says what was
expected and what was found.

Shown in notebook 01 (``01_roundtrip_raw_bytes.ipynb``), section
"Keep dtype and shape with the bytes".
"""

from __future__ import annotations

import io
import math
import tokenize

import numpy as np

_MAGIC = b"\x93NUMPY"  # the first six bytes of every .npy file (numpy.lib.format.MAGIC_PREFIX)
# .npy versions 2.0 and 3.0 differ from 1.0 in the header-length field (4 bytes, not 2)
_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
    (3, 0): np.lib.format.read_array_header_2_0,  # 3.0 allows UTF-8 field names; sizes read alike
}


def pack(array: np.ndarray) -> bytes:
    """Return ``array`` in ``.npy`` format: a header with dtype and shape, then the values.

    The same bytes ``np.save`` writes to a file. Byte order is kept (``'>f4'``
    stays big-endian) and a view (a slice, a transpose) is stored by value.
    Shown in notebook 01, section "Keep dtype and shape with the bytes".

    Raises:
        ValueError: if ``array`` holds Python objects (dtype ``object``): they
            cannot be stored without pickle, which :func:`unpack` refuses.
    """
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
    """Rebuild the array from bytes made by :func:`pack` (or the contents of a ``.npy`` file).

    Returns a writable array with its own memory and the stored dtype (byte
    order included) and shape. The header is checked against the length of
    ``blob`` before any memory is allocated for the data. Shown in notebook 01,
    section "Keep dtype and shape with the bytes".

    Raises:
        TypeError: if ``blob`` is not bytes-like.
        ValueError: if ``blob`` does not start with the ``.npy`` magic
            ``b'\\x93NUMPY'``, has a header NumPy cannot read, holds pickled
            objects, or has fewer or more data bytes than the header's dtype and
            shape need. The message gives the blob's length and what was expected.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected .npy bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    size = f"{len(blob):,} bytes"
    if _MAGIC.startswith(blob):
        raise ValueError(f"truncated .npy bytes ({size}): they end inside the magic {_MAGIC!r}")
    if not blob.startswith(_MAGIC):
        raise ValueError(
            f"not .npy bytes ({size}): expected the magic {_MAGIC!r}, found {blob[:6]!r}"
        )
    stream = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(stream)
        if version not in _HEADER_READERS:
            raise ValueError(f"format version {version} is not one of {list(_HEADER_READERS)}")
        shape, _, dtype = _HEADER_READERS[version](stream)
    except (ValueError, TypeError, SyntaxError, tokenize.TokenError) as error:  # NumPy parses text
        problem = "truncated" if str(error).startswith("EOF") else "unreadable"
        raise ValueError(f"{problem} .npy header ({size}): {error}") from error
    if dtype.hasobject:
        raise ValueError(f"refused .npy bytes ({size}): dtype {dtype} holds pickled Python objects")
    start, needed = stream.tell(), dtype.itemsize * math.prod(shape)
    found = len(blob) - start
    if found != needed:
        raise ValueError(
            f"{'truncated' if found < needed else 'too long'} .npy bytes ({size}): the header "
            f"says dtype {dtype.str} and shape {shape}, so {needed:,} data bytes after byte "
            f"{start:,}; found {found:,}"
        )
    stream.seek(0)
    return np.lib.format.read_array(stream, allow_pickle=False)
