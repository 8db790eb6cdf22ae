"""Argument checks shared by every module: one meaning for ``seed``, sizes and ``compression``,
so that the same mistake gives the same clear message everywhere."""

from __future__ import annotations

import numbers


def check_int(value: object, name: str, minimum: int | None = None) -> int:
    """Return ``value`` as a Python int; NumPy integers are accepted, bools and floats are not.

    Raises:
        TypeError: if ``value`` is not an integer (``None`` included).
        ValueError: if it is below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_seed(seed: object) -> int:
    """Return ``seed`` as a non-negative int: every shuffle in ``helpers`` takes an explicit seed.

    Raises:
        TypeError: for ``None`` or anything that is not an integer.
        ValueError: for a negative seed.
    """
    if seed is None:
        raise TypeError(
            "seed must be an int (for example seed=0), got None: every shuffle here is reproducible"
        )
    return check_int(seed, "seed", minimum=0)


def check_compression(compression: object) -> str | None:
    """Return ``None``, ``"GZIP"`` or ``"ZLIB"``: TensorFlow's three kinds of TFRecord file.

    ``""`` (TensorFlow's own spelling of "not compressed") means ``None``.

    Raises:
        ValueError: for anything else.
    """
    if compression is None or compression == "":
        return None
    if compression in ("GZIP", "ZLIB"):
        return compression
    raise ValueError(f"compression must be None, 'GZIP' or 'ZLIB', got {compression!r}")
