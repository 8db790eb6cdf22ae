"""Argument checks shared by every module: the same mistake gives the same message."""

import numbers
import os
from collections.abc import Iterable
from pathlib import Path

PathLike = str | os.PathLike
COMPRESSIONS = ("GZIP", "ZLIB")


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


def check_compression(compression: object, auto: bool = False) -> str | None:
    """``None`` (also for TensorFlow's ``""``), ``"GZIP"`` or ``"ZLIB"`` (and ``"auto"`` if
    ``auto``); else ValueError. The command line maps its ``NONE`` and lower case here."""
    if compression in (None, "", *COMPRESSIONS) or (auto and compression == "auto"):
        return compression or None
    allowed = "None, 'GZIP', 'ZLIB' or 'auto'" if auto else "None, 'GZIP' or 'ZLIB'"
    raise ValueError(f"compression must be {allowed}, got {compression!r}")


def check_paths(files: PathLike | bytes | Iterable[PathLike | bytes]) -> list[Path]:
    """One path (``str``, ``bytes`` or ``os.PathLike``) or several, as a list of Paths (empty if
    ``files`` is). TypeError, naming it, for anything else."""
    expected = "expected a path or a sequence of paths, got"
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    elif not isinstance(files, Iterable):
        raise TypeError(f"{expected} {type(files).__name__}")
    paths = list(files)
    for file in paths:
        if not isinstance(file, (str, bytes, os.PathLike)):
            raise TypeError(f"{expected} one holding {file!r} ({type(file).__name__})")
    return [Path(os.fsdecode(file)) for file in paths]
