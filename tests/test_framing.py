"""helpers._framing: the layout, and the fast forms of the record check agree with the check."""

import struct

import numpy as np
import pytest

from helpers._framing import (
    FRAME_SIZE,
    HEADER_DTYPE,
    HEADER_SIZE,
    RecordError,
    check_header,
    check_payload,
    frame,
    mask,
    masked_crc32c,
    unframe,
    unframe_header,
    unframe_many,
)

PAYLOADS = [b"", b"a", b"hello", bytes(range(256)) * 3]


def framed(payloads):
    data = b"".join(part for payload in payloads for part in frame(payload))
    ends = np.cumsum([len(p) + FRAME_SIZE for p in payloads])
    return data, np.concatenate([[0], ends[:-1]]).astype(np.int64), ends.astype(np.int64)


def test_the_layout_is_tensorflows():
    header, payload, footer = frame(b"hello")
    assert struct.unpack("<QI", header) == (5, masked_crc32c(struct.pack("<Q", 5)))
    assert payload == b"hello" and struct.unpack("<I", footer) == (masked_crc32c(b"hello"),)
    assert (HEADER_SIZE, FRAME_SIZE, HEADER_DTYPE.itemsize) == (12, 16, 12)


def test_good_records_pass_every_form_of_the_check():
    data, starts, ends = framed(PAYLOADS)
    for payload, start, end in zip(PAYLOADS, starts.tolist(), ends.tolist(), strict=True):
        assert unframe(data, start, end) == payload
        assert unframe_header(data[start : start + HEADER_SIZE], None) == len(payload)
        assert unframe_header(data[start : start + HEADER_SIZE], len(payload)) == len(payload)
        length = check_header(data[start : start + HEADER_SIZE], "f", 0, start)
        assert check_payload(data[start + HEADER_SIZE : end], length, "f", 0, start) == payload
    payloads, bad = unframe_many(data, starts, ends)
    assert payloads == PAYLOADS and not bad.any()


@pytest.mark.parametrize(
    "at, reason", [(2, "length CRC"), (9, "length CRC"), (14, "payload CRC"), (-1, "payload CRC")]
)
def test_a_flipped_byte_fails_every_form_of_the_check(at, reason):
    data, starts, ends = framed(PAYLOADS)
    start = int(starts[2])  # b"hello"
    end = int(ends[2])
    broken = bytearray(data)
    broken[(start if at >= 0 else end) + at] ^= 0xFF
    broken = bytes(broken)
    assert unframe(broken, start, end) is None
    header_intact = unframe_header(broken[start : start + HEADER_SIZE], None) == 5
    assert header_intact == (reason == "payload CRC")
    _, bad = unframe_many(broken, starts, ends)
    assert bad.tolist() == [False, False, True, False]
    with pytest.raises(RecordError, match=reason):
        length = check_header(broken[start : start + HEADER_SIZE], "f", 1, start)
        check_payload(broken[start + HEADER_SIZE : end], length, "f", 1, start)


def test_a_record_whose_end_does_not_fit_its_length_fails_the_fast_forms():
    data, starts, ends = framed(PAYLOADS)
    ends = ends.copy()
    ends[3] -= 1  # an index that disagrees with the header
    assert unframe(data, int(starts[3]), int(ends[3])) is None
    assert unframe_many(data, starts, ends)[1].tolist() == [False, False, False, True]


def test_a_header_cut_short_or_over_the_limit_fails_the_fast_form_and_the_check_says_why():
    header = frame(b"hello")[0]
    assert unframe_header(header[:11], None) is None
    assert unframe_header(header + b"x", None) is None  # a header is 12 bytes, no more
    with pytest.raises(RecordError, match="file ends inside a record header"):
        check_header(header[:11], "f", 1, 0)
    assert unframe_header(header, 4) is None
    with pytest.raises(RecordError, match="claims 5 bytes, more than max_record_bytes=4"):
        check_header(header, "f", 1, 0, 4)


def test_masked_crc32c_takes_bytes_only_and_mask_agrees_with_it_on_ints_and_arrays():
    """masked_crc32c is notebook 11's masked_crc; mask is its formula for CRCs computed apart."""
    import google_crc32c

    with pytest.raises(TypeError):
        masked_crc32c(bytearray(b"hello"))
    crcs = [google_crc32c.value(p) for p in PAYLOADS]
    assert [mask(crc) for crc in crcs] == [masked_crc32c(p) for p in PAYLOADS]
    assert mask(np.array(crcs, np.int64)).tolist() == [masked_crc32c(p) for p in PAYLOADS]
