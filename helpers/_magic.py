"""The first bytes that tell a file's or a payload's format: one table for every module."""

MAGIC = {
    "GZIP": b"\x1f\x8b",
    "PNG": b"\x89PNG",
    "JPEG": b"\xff\xd8\xff",
    "NPY": b"\x93NUMPY",
}


def looks_like(data: bytes) -> str | None:
    """The name of the format whose magic ``data`` starts with, or None."""
    return next((name for name, magic in MAGIC.items() if data.startswith(magic)), None)


def looks_like_zlib(data: bytes) -> bool:
    """True if ``data`` starts with a zlib header (RFC 1950): deflate, and a valid check sum."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
