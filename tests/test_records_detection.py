"""helpers.records.detect_compression: a file whose first bytes fit no compression is refused with
the framing's own reason, the one a plain reader gives, by the API and the command line alike."""

import struct

import pytest

from helpers._framing import LENGTH, masked_crc32c
from helpers.cli import main
from helpers.records import RecordError, detect_compression, verify, write_records

NOT_PLAIN = "length CRC mismatch: this is not a TFRecord file (or its first header is damaged)"


def damaged_copy(tmp_path, at: int) -> bytes:
    """The bytes of a two-record file with byte ``at`` of its first header flipped."""
    path = tmp_path / "intact.tfrecord"
    write_records(path, [b"x" * 300, b"y"])
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    return bytes(data)


CONTENTS = {  # each kind of file: how to make its bytes, and what a plain reader says of it
    "length": (lambda folder: damaged_copy(folder, 1), NOT_PLAIN),  # 300 bytes become 4,396
    "length CRC": (lambda folder: damaged_copy(folder, 9), NOT_PLAIN),
    "text": (lambda folder: b"name,label\ncat,1\n", NOT_PLAIN),
    "5 bytes": (lambda folder: b"hello", "file ends inside a record header (5 of 12 bytes)"),
}


@pytest.fixture(params=list(CONTENTS))
def refused(request, tmp_path):
    """A file that is neither plain nor compressed: (path, the reason a plain reader gives)."""
    make, reason = CONTENTS[request.param]
    path = tmp_path / "refused.tfrecord"
    path.write_bytes(make(tmp_path))
    return path, reason


def test_the_first_bytes_fit_no_compression_in_these_files(refused):
    path, _ = refused
    start = path.read_bytes()[:2]
    assert not start.startswith(b"\x1f\x8b")  # GZIP
    assert not (start[0] & 0x0F == 8 and int.from_bytes(start, "big") % 31 == 0)  # zlib


def test_detection_raises_the_framing_error_a_plain_reader_raises(refused):
    path, reason = refused
    with pytest.raises(RecordError) as detected:
        detect_compression(path)
    with pytest.raises(RecordError) as read:
        verify(path, compression=None)
    assert str(detected.value) == str(read.value)
    assert (detected.value.index, detected.value.offset) == (0, 0)
    assert detected.value.reason.startswith(reason)


def test_a_damaged_first_length_is_named_with_and_without_compression_none(refused, capsys):
    path, reason = refused
    detected = main(["verify", str(path)])
    said = capsys.readouterr()
    plain = main(["verify", "--compression", "NONE", str(path)])
    assert (detected, plain) == (1, 1)
    assert said.out == "" and said.err == capsys.readouterr().err
    assert said.err.startswith(f"{path}: record 0 at byte 0: {reason}")
    assert said.err.count("\n") == 1 and "Traceback" not in said.err


def test_a_plain_header_is_trusted_whatever_its_first_bytes_look_like(tmp_path):
    """A valid first header means plain, even where it happens to start like zlib."""
    length = 0x0178  # little-endian 78 01: a zlib header (0x7801 = 31 x 991)
    assert LENGTH.pack(length)[:2] == b"\x78\x01"
    path = tmp_path / "unlucky.tfrecord"
    write_records(path, [bytes(length)])
    assert struct.unpack_from("<I", path.read_bytes(), 8)[0] == masked_crc32c(LENGTH.pack(length))
    assert detect_compression(path) is None
    assert verify(path) == 1
