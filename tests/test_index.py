"""helpers.index: record boundaries, random access with CRC checks, refusal of compressed files."""

import gc
import os
import re
import sys

import numpy as np
import pytest

from helpers.index import RecordReader, build_index
from helpers.memory import track_peak_memory
from helpers.records import RecordError, iter_records, write_records

PAYLOADS = [bytes([i]) * (i * 7 % 23) for i in range(40)]  # varied lengths, empty ones too


@pytest.fixture
def tfrecord(tmp_path):
    path = tmp_path / "data.tfrecord"
    write_records(path, PAYLOADS)
    return path


def expected_boundaries(payloads):
    return np.cumsum([0] + [16 + len(p) for p in payloads]).tolist()


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_build_index_finds_every_record_boundary(tfrecord):
    boundaries = build_index(tfrecord)
    assert boundaries.dtype == np.int64
    assert boundaries.tolist() == expected_boundaries(PAYLOADS)
    assert (np.diff(boundaries) - 16).tolist() == [len(p) for p in PAYLOADS]


def test_an_empty_file_has_no_records(tmp_path):
    path = tmp_path / "empty.tfrecord"
    write_records(path, [])
    assert build_index(path).tolist() == [0]
    with RecordReader(path) as reader, pytest.raises(IndexError, match="out of range: 0 records"):
        reader.read(0)


def test_random_access_returns_every_payload_in_any_order(tfrecord):
    order = np.random.default_rng(3).permutation(len(PAYLOADS))
    with RecordReader(tfrecord) as reader:
        assert len(reader) == len(PAYLOADS)
        assert reader.read_many(order) == [PAYLOADS[i] for i in order]
        assert reader.read(np.int64(5)) == PAYLOADS[5]
        assert reader.index_nbytes == 8 * (len(PAYLOADS) + 1)


def test_records_are_numbered_across_files(tmp_path):
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(first, PAYLOADS[:3])
    write_records(second, PAYLOADS[3:10])
    with RecordReader([first, second], progress=False) as reader:
        assert len(reader) == 10
        assert reader.read_many([9, 0, 3, 2]) == [PAYLOADS[i] for i in (9, 0, 3, 2)]
        with pytest.raises(IndexError, match="record 10 out of range: 10 records in 2 file"):
            reader.read(10)
        with pytest.raises(IndexError, match="record -1 out of range"):
            reader.read(-1)


def test_a_bad_payload_is_found_on_read_with_the_file_index_and_offset(tfrecord):
    offsets = expected_boundaries(PAYLOADS)
    flip_byte(tfrecord, offsets[7] + 12)  # the first payload byte of record 7
    with RecordReader(tfrecord) as reader:
        assert reader.read(6) == PAYLOADS[6]
        with pytest.raises(RecordError) as caught:
            reader.read(7)
    error = caught.value
    assert (error.path, error.index, error.offset) == (str(tfrecord), 7, offsets[7])
    assert "payload CRC mismatch" in error.reason
    # The sequential reader finds the same record with the same words.
    with pytest.raises(RecordError, match=f"record 7 at byte {offsets[7]}: payload CRC mismatch"):
        list(iter_records(tfrecord))


def test_a_damaged_header_is_found_when_indexing(tfrecord):
    offsets = expected_boundaries(PAYLOADS)
    flip_byte(tfrecord, offsets[4] + 2)
    with pytest.raises(RecordError, match=f"record 4 at byte {offsets[4]}: length CRC mismatch"):
        build_index(tfrecord)


def test_a_file_changed_after_indexing_is_reported_not_misread(tmp_path):
    path = tmp_path / "changing.tfrecord"
    write_records(path, [b"a" * 10, b"b" * 10])
    other = tmp_path / "other.tfrecord"
    write_records(other, [b"a" * 4, b"b" * 16])  # the same size, other boundaries
    with RecordReader(path) as reader:
        with open(path, "r+b") as stream:  # changed in place, under the open reader
            stream.write(other.read_bytes())
        with pytest.raises(RecordError, match="record 1 at byte 26: length CRC mismatch"):
            reader.read(1)


@pytest.mark.parametrize(
    "cut, reason",
    [
        (3, "file ends inside a record header (9 of 12 bytes)"),
        (14, "runs past the end of the file"),
    ],
)
def test_a_truncated_file_is_refused_when_indexing(tfrecord, cut, reason):
    data = tfrecord.read_bytes()
    last = expected_boundaries(PAYLOADS)[-2]
    tfrecord.write_bytes(data[: last + (12 - cut if cut == 3 else 16 + len(PAYLOADS[-1]) - cut)])
    with pytest.raises(RecordError, match=f"record 39 at byte {last}: .*{re.escape(reason)}"):
        build_index(tfrecord)


def test_a_file_that_is_not_a_tfrecord_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not records at all, just some text to read\n")
    with pytest.raises(RecordError, match="record 0 at byte 0"):
        build_index(path)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files_are_refused_clearly(tmp_path, compression):
    path = tmp_path / "data.tfrecord.z"
    write_records(path, PAYLOADS, compression=compression)
    with pytest.raises(
        ValueError, match=f"{compression}-compressed TFRecord file cannot be indexed"
    ):
        build_index(path)
    with pytest.raises(ValueError, match="cannot be indexed"):
        RecordReader([path])


def test_a_closed_reader_refuses_to_read(tfrecord):
    reader = RecordReader(tfrecord)
    reader.close()
    with pytest.raises(ValueError, match="closed RecordReader"):
        reader.read(0)
    reader.close()  # closing twice is harmless


def open_on(fd, path):
    """Whether descriptor ``fd`` is open on ``path`` (a closed number may be reused by another)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


def test_a_reader_dropped_without_close_closes_its_files(tfrecord, tmp_path, monkeypatch):
    unraisable = []  # exceptions in __del__ are printed and swallowed: collect them instead
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    reader = RecordReader(tfrecord)
    (fd,) = reader._fds
    assert open_on(fd, tfrecord)
    del reader
    gc.collect()
    assert not open_on(fd, tfrecord), "a dropped RecordReader kept its file open"
    compressed = tmp_path / "data.tfrecord.gz"
    write_records(compressed, PAYLOADS, compression="GZIP")
    with pytest.raises(ValueError, match="cannot be indexed"):
        RecordReader(compressed)  # fails before it opens anything; nothing to close later
    gc.collect()
    assert unraisable == []


def test_read_many_takes_any_shape_of_record_numbers_and_none(tfrecord):
    with RecordReader(tfrecord) as reader:
        assert reader.read_many([]) == []
        assert reader.read_many(np.int64(3)) == [PAYLOADS[3]]
        assert reader.read_many(np.array([[9, 0], [3, 2]])) == [PAYLOADS[i] for i in (9, 0, 3, 2)]


def test_a_bad_record_of_a_later_file_is_named_by_its_number_in_that_file(tmp_path):
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(first, PAYLOADS[:3])
    write_records(second, PAYLOADS[3:10])
    offsets = expected_boundaries(PAYLOADS[3:10])
    flip_byte(second, offsets[2] + 12)  # record 2 of b.tfrecord, number 5 of the reader
    with RecordReader([first, second]) as reader, pytest.raises(RecordError) as caught:
        reader.read(5)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (
        str(second),
        2,
        offsets[2],
    )


def test_a_compressed_file_is_refused_with_the_way_to_index_it(tmp_path):
    path = tmp_path / "data.tfrecord.gz"
    write_records(path, PAYLOADS, compression="GZIP")
    advice = (
        f"{path}: a GZIP-compressed TFRecord file cannot be indexed: record i has no fixed byte "
        "offset in it. Write a plain copy with helpers.records.write_records "
        "(iter_records(path, 'GZIP')) and index that."
    )
    with pytest.raises(ValueError) as caught:
        build_index(path)
    assert str(caught.value) == advice


def test_indexing_shows_a_progress_bar_only_when_asked(tfrecord, capsys):
    RecordReader(tfrecord).close()
    assert capsys.readouterr().err == ""
    RecordReader([tfrecord, tfrecord], progress=True).close()
    assert "\rindexing: 100%" in capsys.readouterr().err


def test_a_reader_of_no_files_is_empty(tmp_path):
    with RecordReader([]) as reader:
        assert (len(reader), reader.index_nbytes) == (0, 0)
        with pytest.raises(IndexError, match="record 0 out of range: 0 records in 0 file"):
            reader.read(0)


def test_each_read_is_one_pread_of_exactly_the_records_bytes(tfrecord, monkeypatch):
    sizes, pread = [], os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: sizes.append(n) or pread(fd, n, at))
    with RecordReader(tfrecord) as reader:
        assert reader.read_many([39, 1, 20]) == [PAYLOADS[i] for i in (39, 1, 20)]
    assert sizes == [16 + len(PAYLOADS[i]) for i in (39, 1, 20)]


def test_a_record_whose_length_changed_since_indexing_is_named(tmp_path):
    path = tmp_path / "changing.tfrecord"
    write_records(path, [b"a" * 10, b"b" * 10])
    other = tmp_path / "other.tfrecord"
    write_records(other, [b"a" * 10, b"b" * 12])  # record 1 still starts at byte 26, longer
    with RecordReader(path) as reader:
        path.write_bytes(other.read_bytes())
        with pytest.raises(RecordError) as caught:
            reader.read(1)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), 1, 26)
    assert caught.value.reason == (
        "header says 12 payload bytes, the index 10: the file changed since indexing"
    )


def test_a_damaged_header_under_an_open_reader_names_the_file(tfrecord):
    offsets = expected_boundaries(PAYLOADS)
    with RecordReader(tfrecord) as reader:
        flip_byte(tfrecord, offsets[3] + 1)
        with pytest.raises(RecordError) as caught:
            reader.read(3)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (
        str(tfrecord),
        3,
        offsets[3],
    )


def test_indexing_reads_headers_not_payloads(tmp_path):
    path = tmp_path / "big.tfrecord"
    write_records(path, [bytes(48 << 20), b"small"])
    with track_peak_memory() as peak:
        assert build_index(path).tolist() == [0, 16 + (48 << 20), 32 + (48 << 20) + 5]
    assert peak.peak_increase_mib < 16


def test_errors_while_indexing_name_the_file(tfrecord):
    tfrecord.write_bytes(tfrecord.read_bytes()[:-1])  # the last record runs past the end
    with pytest.raises(RecordError) as caught:
        build_index(tfrecord)
    assert (caught.value.path, caught.value.index) == (str(tfrecord), 39)
    offset = expected_boundaries(PAYLOADS)[4]
    flip_byte(tfrecord, offset + 2)  # record 4's length
    with pytest.raises(RecordError) as caught:
        build_index(tfrecord)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (
        str(tfrecord),
        4,
        offset,
    )
