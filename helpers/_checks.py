"""Argument checks shared by every module: the same mistake gives the same message."""

import numbers


def check_int(value: object, name: str, minimum: int | None = None) -> int:
    """``value`` as an int. TypeError for a non-integer or bool; ValueError if below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_seed(seed: object) -> int:
    """``seed`` as an int. TypeError for ``None`` or a non-integer; ValueError if negative."""
    if seed is None:
        reason = "every shuffle here is reproducible"
        raise TypeError(f"seed must be an int (for example seed=0), got None: {reason}")
    return check_int(seed, "seed", minimum=0)


def check_compression(compression: object) -> str | None:
    """``None`` (also for TensorFlow's ``""``), ``"GZIP"`` or ``"ZLIB"``; else ValueError."""
    if compression in (None, "", "GZIP", "ZLIB"):
        return compression or None
    raise ValueError(f"compression must be None, 'GZIP' or 'ZLIB', got {compression!r}")
