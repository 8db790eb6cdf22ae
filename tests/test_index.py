"""helpers.index: record boundaries, index files, random access with CRC checks, refusals."""

import inspect
import os
import pickle
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

from helpers import index
from helpers.index import RecordView, build_index
from helpers.memory import track_peak_memory
from helpers.records import RecordError, iter_records, masked_crc32c, write_records, write_sharded

PAYLOADS = [bytes([i]) * (i * 7 % 23) for i in range(40)]  # varied lengths, empty ones too


@pytest.fixture
def tfrecord(tmp_path):
    path = tmp_path / "data.tfrecord"
    write_records(path, PAYLOADS)
    return path


def expected_boundaries(payloads):
    return np.cumsum([0] + [16 + len(p) for p in payloads]).tolist()


def keeping_mtime(path, write):
    """Run ``write`` on ``path`` and set its st_mtime_ns back: damage a disk does, which the view's
    identity check cannot see (its CRC checks do)."""
    before = path.stat()
    write()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    keeping_mtime(path, lambda: path.write_bytes(bytes(data)))


def test_build_index_finds_every_record_boundary(tfrecord):
    boundaries = build_index(tfrecord)
    assert boundaries.dtype == np.int64
    assert boundaries.tolist() == expected_boundaries(PAYLOADS)
    assert (np.diff(boundaries) - 16).tolist() == [len(p) for p in PAYLOADS]


def test_an_empty_file_has_no_records(tmp_path):
    path = tmp_path / "empty.tfrecord"
    write_records(path, [])
    assert build_index(path).tolist() == [0]
    with RecordView(path) as view, pytest.raises(IndexError, match="out of range: 0 records"):
        view[0]


def test_random_access_returns_every_payload_in_any_order(tfrecord):
    order = np.random.default_rng(3).permutation(len(PAYLOADS))
    with RecordView(tfrecord) as view:
        assert len(view) == len(PAYLOADS)
        assert view[order] == view.__getitems__(order) == [PAYLOADS[i] for i in order]
        assert view[np.int64(5)] == PAYLOADS[5] and view[-1] == PAYLOADS[-1]
        assert view.index_nbytes == 8 * (len(PAYLOADS) + 1)


def test_records_are_numbered_across_files(tmp_path):
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(first, PAYLOADS[:3])
    write_records(second, PAYLOADS[3:10])
    with RecordView([first, second]) as view:
        assert len(view) == 10
        assert view[[9, 0, 3, 2, -10]] == [PAYLOADS[i] for i in (9, 0, 3, 2, 0)]
        with pytest.raises(IndexError, match="record 10 out of range: 10 records in 2 file"):
            view[10]
        with pytest.raises(IndexError, match="record -11 out of range"):
            view[[0, -11]]


def test_a_bad_payload_is_found_on_read_with_the_file_index_and_offset(tfrecord):
    offsets = expected_boundaries(PAYLOADS)
    flip_byte(tfrecord, offsets[7] + 12)  # the first payload byte of record 7
    with RecordView(tfrecord) as view:
        assert view[6] == PAYLOADS[6]
        with pytest.raises(RecordError) as caught:
            view[7]
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
    with RecordView(path) as view:
        before = path.stat()
        with open(path, "r+b") as stream:  # changed in place, under the open view
            stream.write(other.read_bytes())
        later = before.st_mtime_ns + 1  # what the write did, at any resolution of the clock
        os.utime(path, ns=(before.st_atime_ns, later))
        for read in (lambda: view[1], lambda: view[[1]]):  # the first single read checks too
            with pytest.raises(RecordError) as caught:
                read()
            assert (caught.value.index, caught.value.offset) == (0, 0)
            assert caught.value.reason == (
                "the file was written to since the view opened it (52 bytes): open a new view"
            )
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # a change the time hides
        for read in (lambda: view[1], lambda: view[[1]]):  # the headers and CRCs see it
            with pytest.raises(RecordError, match="record 1 at byte 26: length CRC mismatch"):
                read()


@pytest.mark.parametrize(
    "cut, reason",
    [
        (3, "file ends inside a record header (9 of 12 bytes)"),
        (14, "file ends inside the payload (10 of 20 bytes)"),  # the readers' reasons
        (2, "file ends inside the payload CRC (2 of 4 bytes)"),
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
        RecordView([path])
    size = path.stat().st_size  # an index file, even one that fits the size, does not change that
    path.with_name(path.name + ".index").write_text(f"0 {size}\n")
    with pytest.raises(ValueError, match="cannot be indexed"):
        RecordView([path])


def test_a_closed_view_refuses_to_read(tfrecord):
    view = RecordView(tfrecord)
    view.close()
    with pytest.raises(ValueError, match="closed"):
        view[0]
    view.close()  # closing twice is harmless


def test_a_batch_may_be_any_sequence_of_numbers_even_none(tfrecord):
    with RecordView(tfrecord) as view:
        assert view[[]] == view[np.array([], np.int64)] == []
        assert view[(3,)] == view.__getitems__(np.int64(3)) == [PAYLOADS[3]]
        assert view[np.array([[9, 0], [3, 2]])] == [PAYLOADS[i] for i in (9, 0, 3, 2)]
        for key in ("3", b"3", slice(0, 2), 3.0, None):
            kind = type(key).__name__
            with pytest.raises(
                TypeError, match=f"a record number or a sequence of them, not {kind}"
            ):
                view[key]


def test_a_bad_record_of_a_later_file_is_named_by_its_number_in_that_file(tmp_path):
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(first, PAYLOADS[:3])
    write_records(second, PAYLOADS[3:10])
    offsets = expected_boundaries(PAYLOADS[3:10])
    flip_byte(second, offsets[2] + 12)  # record 2 of b.tfrecord, number 5 of the reader
    with RecordView([first, second]) as view, pytest.raises(RecordError) as caught:
        view[5]
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
    RecordView(tfrecord).close()
    assert capsys.readouterr().err == ""
    RecordView([tfrecord, tfrecord], progress=True).close()
    assert "\rindexing: 100%" in capsys.readouterr().err


def test_a_reader_of_no_files_is_empty(tmp_path):
    with RecordView([]) as view:
        assert (len(view), view.index_nbytes) == (0, 0)
        with pytest.raises(IndexError, match="record 0 out of range: 0 records in 0 file"):
            view[0]


def test_a_record_whose_length_changed_since_indexing_is_named(tmp_path):
    path = tmp_path / "changing.tfrecord"
    write_records(path, [b"a" * 10, b"b" * 10, b"c" * 10])
    other = tmp_path / "other.tfrecord"
    write_records(other, [b"a" * 10, b"b" * 12, b"c" * 8])  # record 1 at byte 26, longer
    with RecordView(path) as view:
        keeping_mtime(path, lambda: path.write_bytes(other.read_bytes()))
        with pytest.raises(RecordError) as caught:
            view[1]
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), 1, 26)
    assert caught.value.reason == (
        "no header of 10 payload bytes where the index puts one (it says 12): the index does "
        f"not describe this file: rebuild it (python -m helpers index {path})"
    )


def test_a_damaged_header_under_an_open_reader_names_the_file(tfrecord):
    offsets = expected_boundaries(PAYLOADS)
    with RecordView(tfrecord) as view:
        flip_byte(tfrecord, offsets[3] + 1)
        with pytest.raises(RecordError) as caught:
            view[3]
    assert (caught.value.path, caught.value.index, caught.value.offset) == (
        str(tfrecord),
        3,
        offsets[3],
    )
    assert caught.value.reason == (
        "length CRC mismatch where the index puts a header: the file is damaged there, or the "
        "index does not describe it (python -m helpers verify checks the file, python -m "
        "helpers index rebuilds the index)"
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


# --------------------------------------------------------------------------- index files


def test_write_sharded_writes_each_shards_index_in_tfrecord2idx_format(tmp_path):
    paths = write_sharded(tmp_path / "x", PAYLOADS, 3, index=True)
    for shard, path in enumerate(paths):
        lines = path.with_name(path.name + ".index").read_text().splitlines()
        bounds = expected_boundaries(PAYLOADS[shard::3])
        assert lines == [f"{a} {b - a}" for a, b in zip(bounds, bounds[1:], strict=False)]
    with pytest.raises(ValueError, match="index=True needs plain files: a GZIP file"):
        write_sharded(tmp_path / "z", PAYLOADS, 2, compression="GZIP", index=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name + end for p in paths for end in ("", ".index", ".index.npy")
    )


def test_a_view_takes_the_index_file_instead_of_walking_the_headers(tmp_path, monkeypatch):
    paths = write_sharded(tmp_path / "x", PAYLOADS, 2, index=True)
    monkeypatch.setattr(index, "build_index", lambda path: pytest.fail(f"walked {path}"))
    with RecordView(paths) as view:
        assert view[list(range(len(view)))] == PAYLOADS[0::2] + PAYLOADS[1::2]


@pytest.mark.parametrize(
    "content, record, offset, says",
    [
        ("", 0, 0, "the index has no record, the file 1086 bytes"),
        ("0 16\n", 0, 0, "the index gives it bytes 0-16 of 1086"),
        ("nonsense\n", 0, 0, "not 'start length' lines"),
        ("0 16 7\n", 0, 0, "not 'start length' lines"),
        ("5 0\n", 0, 5, "the index gives it bytes 5-5 of 1086"),
        ("0 8\n8 1078\n", 0, 0, "the index gives it bytes 0-8 of 1086"),  # tiles, but 8 bytes
        ("0 16\n16 1070\n", 1, 16, "no header of 1054 payload bytes where the index puts one"),
        ("0 1086\n", 0, 0, "no header of 1070 payload bytes where the index puts one"),
    ],
)
def test_an_index_file_that_does_not_fit_its_file_is_named_not_trusted(
    tfrecord, content, record, offset, says
):
    assert tfrecord.stat().st_size == 1086
    tfrecord.with_name(tfrecord.name + ".index").write_text(content)
    with pytest.raises(RecordError) as caught:
        RecordView(tfrecord)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (
        str(tfrecord),
        record,
        offset,
    )
    rebuild = f"rebuild it (python -m helpers index {tfrecord})"
    assert caught.value.reason.startswith(says) and caught.value.reason.endswith(rebuild)


def test_the_issues_wrong_index_is_named_at_its_first_record(tmp_path):
    """``0 34 / 34 17`` beside three 17-byte records tiles the file, and its second entry is the
    third record's: only record 0's header tells (it says 1 byte, the index 18)."""
    path = tmp_path / "three.tfrecord"
    write_records(path, [b"a", b"b", b"c"])
    path.with_name(path.name + ".index").write_text("0 34\n34 17\n")
    with pytest.raises(RecordError, match="record 0 at byte 0: no header of 18 payload bytes"):
        RecordView(path)


def test_a_replaced_or_resized_file_is_named_before_a_batch_is_read(tmp_path):
    path, other = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(path, PAYLOADS)
    write_records(other, PAYLOADS[::-1])
    with RecordView(path) as view:
        os.replace(other, path)  # same size, another file
        with pytest.raises(RecordError, match="the file was replaced since the view opened it"):
            view[0]
    with RecordView(path) as view:
        with open(path, "ab") as stream:
            stream.write(b"more")
        with pytest.raises(RecordError) as caught:
            view[[1, 2]]
    size = path.stat().st_size
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), 0, 0)
    assert caught.value.reason == (
        f"the file is now {size} bytes since the view opened it ({size - 4} bytes): open a new view"
    )


def test_single_reads_check_their_file_at_its_first_and_every_256th_read(tmp_path):
    path, other = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(path, PAYLOADS)
    write_records(other, PAYLOADS[::-1])
    with RecordView(path) as view:
        assert view[1] == PAYLOADS[1]  # the first read checks the file
        os.replace(other, path)  # same size, another file: the view keeps the bytes it opened
        assert [view[i % 40] for i in range(2, 257)] == [PAYLOADS[i % 40] for i in range(2, 257)]
        with pytest.raises(RecordError, match="the file was replaced since the view opened it"):
            view[0]  # the 257th read checks again
        with pytest.raises(RecordError, match="the file was replaced"):
            view[[0]]  # a batch checks every time


_WORKER = """
import pickle, sys
view = pickle.loads(sys.stdin.buffer.read())
sys.stdout.buffer.write(b"|".join(view[[len(view) - 1, 0]]))
"""


def test_a_view_pickles_into_another_process_which_reopens_the_files(tmp_path):
    paths = write_sharded(tmp_path / "x", PAYLOADS, 2)
    with RecordView(paths) as view:
        blob = pickle.dumps(view)
    worker = subprocess.run([sys.executable, "-c", _WORKER], input=blob, capture_output=True)
    assert worker.returncode == 0, worker.stderr.decode()
    assert worker.stdout == PAYLOADS[-1] + b"|" + PAYLOADS[0]
    assert len(blob) < 2_000  # the index travels, not the records


def test_the_index_holds_eight_bytes_per_record_and_the_records_stay_on_disk(tmp_path):
    paths = write_sharded(tmp_path / "x", [bytes(1000)] * 20_000, 4, index=True)
    with track_peak_memory() as peak, RecordView(paths) as view:
        assert view.index_nbytes == 0  # every binary index mapped, not held
    assert peak.peak_increase_mib < 8  # the files hold 20 MB
    for path in paths[1:]:  # without the binary form: private arrays, text parsed or walked
        path.with_name(path.name + ".index.npy").unlink()
    path.with_name(path.name + ".index").unlink()
    with RecordView(paths) as view:
        assert view.index_nbytes == 8 * (3 * 5_000 + 3)
        assert view[[0, 19_999]] == [bytes(1000)] * 2


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        (0, "length CRC mismatch"),  # a length byte: the header no longer matches its CRC
        (9, "length CRC mismatch"),  # a byte of the stored length CRC
        (12, "payload CRC mismatch"),  # the first payload byte
        (15, "payload CRC mismatch"),  # a byte of the stored payload CRC (3-byte payload)
    ],
)
def test_a_batch_checks_every_header_and_payload_like_a_single_read(tfrecord, where, reason):
    """The batch path reads headers and CRCs with NumPy: any damaged byte still names the record."""
    offsets = expected_boundaries(PAYLOADS)
    assert len(PAYLOADS[7]) == 3
    with RecordView(tfrecord) as view:
        assert view[list(range(40))[::-1]] == PAYLOADS[::-1]
        flip_byte(tfrecord, offsets[7] + where)
        errors = []
        for read in (lambda: view[list(range(40))[::-1]], lambda: view[[7]], lambda: view[7]):
            with pytest.raises(RecordError) as caught:
                read()
            errors.append(caught.value)
        assert view[[6, 8]] == [PAYLOADS[6], PAYLOADS[8]]  # the others still read
    for error in errors:
        assert (error.path, error.index, error.offset) == (str(tfrecord), 7, offsets[7])
        assert error.reason.startswith(reason), error.reason


def test_the_first_and_last_records_read_by_positive_and_negative_numbers(tmp_path, tfrecord):
    with RecordView(tfrecord) as view:
        n = len(view)
        for number, expected in [
            (0, 0),
            (n - 1, n - 1),
            (-1, n - 1),
            (-n, 0),
            (np.int64(-2), n - 2),
        ]:
            assert view[number] == PAYLOADS[expected], number  # bytes, not a list
        assert view[[0, -1, -n]] == [PAYLOADS[0], PAYLOADS[-1], PAYLOADS[0]]
        # The error names the number that is out of range, not a valid one beside it.
        with pytest.raises(IndexError, match=f"^record {n} out of range: {n} records in 1 file"):
            view[[-n, n]]
        with pytest.raises(IndexError, match=f"^record {-n - 1} out of range"):
            view[-n - 1]
        # A caller's array of numbers is read, never rewritten (negative numbers included).
        asked = np.array([-1, 0, -n], dtype=np.int64)
        assert view[asked] == [PAYLOADS[n - 1], PAYLOADS[0], PAYLOADS[0]]
        assert asked.tolist() == [-1, 0, -n]
    one = tmp_path / "one.tfrecord"
    write_records(one, [b"only"])
    with RecordView(one) as view:
        assert view[-1] == view[0] == b"only" and view[[-1, 0]] == [b"only", b"only"]


def test_a_damaged_first_record_is_named_like_any_other(tfrecord):
    assert PAYLOADS[0] == b""
    flip_byte(tfrecord, 12)  # record 0 is empty: bytes 12-15 are its payload CRC
    with RecordView(tfrecord) as view:
        for read in (lambda: view[0], lambda: view[[1, 0]]):
            with pytest.raises(RecordError, match="record 0 at byte 0: payload CRC mismatch"):
                read()


def test_indexing_refuses_a_record_longer_than_a_read_may_hold(tmp_path):
    """A header may claim any length with a valid CRC: the limit is named, not the file's end."""
    length = struct.pack("<Q", 300 << 20)
    path = tmp_path / "huge.tfrecord"
    write_records(path, [b"first"])
    path.write_bytes(path.read_bytes() + length + struct.pack("<I", masked_crc32c(length)) + b"x")
    with pytest.raises(RecordError) as caught:
        build_index(path)
    assert (caught.value.index, caught.value.offset) == (1, 16 + 5)
    assert caught.value.reason == (
        f"the record claims {300 << 20:,} bytes, more than the 268,435,456 an index allows "
        "(helpers.records.iter_records reads it, given a larger max_record_bytes)"
    )
    # The parameter it names is the reader's, which has it; build_index has none.
    assert "max_record_bytes" in inspect.signature(iter_records).parameters
    assert list(inspect.signature(build_index).parameters) == ["path"]
    with pytest.raises(RecordError, match="more than the 268,435,456 an index allows"):
        RecordView(path)


def test_good_records_pass_the_fast_checks_without_the_careful_path(tmp_path, monkeypatch):
    """The careful path (check_records, check_payload) re-checks a record that failed a fast
    check, so a fast check that wrongly failed good records would still return them, only
    slower: forbid that path here (once the view is open: opening checks a sample)."""

    def careful_path(*args):
        raise AssertionError(f"a good record took the careful path: {args}")

    paths = write_sharded(tmp_path / "x", PAYLOADS, 3, index=True)  # varied lengths in every file
    with RecordView(paths) as view:
        monkeypatch.setattr(index, "check_records", careful_path)
        monkeypatch.setattr(index, "check_payload", careful_path)
        numbers = list(range(len(view)))
        expected = [view.__getitems__([n])[0] for n in numbers]
        assert [view[n] for n in numbers] == expected  # one record at a time
        assert view[numbers[::-1]] == expected[::-1]  # a batch
        assert sorted(expected) == sorted(PAYLOADS)


def test_a_view_unpickled_in_this_process_reopens_its_files(tfrecord):
    with RecordView(tfrecord) as view:
        copy = pickle.loads(pickle.dumps(view))
    with copy:
        assert copy[[0, -1]] == [PAYLOADS[0], PAYLOADS[-1]] and len(copy) == len(PAYLOADS)


def test_a_compressed_file_is_refused_even_with_an_index_file_that_fits(tmp_path):
    """An index file is trusted only for an uncompressed file, however well its numbers fit."""
    path = tmp_path / "data.tfrecord"
    write_records(path, [b"x" * 40], compression="ZLIB")
    size = path.stat().st_size
    path.with_name(path.name + ".index").write_text(f"0 {size}\n")
    with pytest.raises(ValueError, match="a ZLIB-compressed TFRecord file cannot be indexed"):
        RecordView(path)


def test_a_key_of_another_kind_is_named_in_the_type_error(tfrecord):
    with RecordView(tfrecord) as view:
        for key, kind in [("1", "str"), (slice(0, 2), "slice"), (1.0, "float")]:
            with pytest.raises(TypeError, match=f"a sequence of them, not {kind}$"):
                view[key]


def test_record_numbers_must_be_integers_not_floats_or_bools(tfrecord):
    """NumPy would read ``[0.9, 1.7]`` as records 0 and 1 and ``True`` as record 1."""
    with RecordView(tfrecord) as view:
        for key, kind in [
            ([0.9, 1.7], "float64 values"),
            (np.array([True, False]), "bool values"),
            ([1, "2"], "<U21 values"),
            ([1, None], "other objects"),
        ]:
            with pytest.raises(TypeError, match=f"^record numbers must be integers, not {kind}$"):
                view[key]
            with pytest.raises(TypeError, match="^record numbers must be integers"):
                view.__getitems__(key)
        for key in (True, np.bool_(False)):
            with pytest.raises(TypeError, match="a record number or a sequence of them, not bool"):
                view[key]
        assert view[np.array([3, 1], np.uint8)] == [
            PAYLOADS[3],
            PAYLOADS[1],
        ]  # integers of any kind
        assert view[[]] == []  # NumPy makes a float array of it: no number, no error


def test_a_closed_view_names_itself_and_its_files(tmp_path, tfrecord):
    view = RecordView(tfrecord)
    view.close()
    closed = f"I/O operation on a closed RecordView (of {tfrecord})"
    for read in (lambda: view[0], lambda: view[[0, 1]], lambda: view.__getitems__([2])):
        with pytest.raises(ValueError, match=f"^{re.escape(closed)}$"):
            read()
    other = tmp_path / "other.tfrecord"
    write_records(other, [b"x"])
    for paths, named in [
        ([tfrecord, other], f"{tfrecord} and {other}"),
        ([tfrecord, other, other], f"{tfrecord} and 2 other files"),
    ]:
        view = RecordView(paths)
        view.close()
        with pytest.raises(ValueError, match=re.escape(f"closed RecordView (of {named})")):
            view[0]


def test_paths_may_be_bytes_and_anything_else_is_named(tfrecord):
    with RecordView(os.fsencode(tfrecord)) as view:  # bytes: one path, as os.open takes it
        assert view.paths == [tfrecord] and view[0] == PAYLOADS[0]
    with RecordView([os.fsencode(tfrecord), str(tfrecord)]) as view:
        assert len(view) == 2 * len(PAYLOADS)
    with pytest.raises(TypeError, match=r"^expected a path or a sequence of paths, got int$"):
        RecordView(3)
    with pytest.raises(TypeError, match=r"got one holding 3 \(int\)$"):
        RecordView([tfrecord, 3])


def test_an_index_that_claims_impossible_spans_is_named_before_anything_is_read(tmp_path):
    """A binary index may say anything between the records a view samples: a read never holds
    what such a span claims, nor reads before byte 0; it names the record."""
    # 4 shards of 3,000 share the opening's 4,096 header checks: 1,024 in each.
    paths = write_sharded(tmp_path / "x", [bytes(10)] * 12_000, 4, index=True)
    binary = paths[0].with_name(paths[0].name + ".index.npy")
    saved = np.load(binary)
    for bounds_at, value, says in [
        (1_500, 10 << 30, "bytes 38974-10737418240 of 78000"),  # 10 GiB long
        (1_500, -26, "bytes 38974--26 of 78000"),  # ends before it starts
    ]:
        wrong = saved.copy()
        wrong[3 + bounds_at] = value  # record 1,499's end and record 1,500's start
        np.save(binary, wrong)  # made for this very file: mapped and trusted
        with RecordView(paths) as view:  # record 1,500 is not sampled
            assert view[0] == bytes(10)
            for read in (lambda: view[1_499], lambda: view[[1_499]]):
                with pytest.raises(RecordError) as caught:
                    read()
                assert (caught.value.index, caught.value.offset) == (1_499, 38974)
                assert caught.value.reason.startswith(f"the index gives it {says}")
        with RecordView(paths) as view, pytest.raises(RecordError) as caught:
            view[[1_500]]  # starts 10 GiB in, or at byte -26
        assert caught.value.index == 1_500 and "the index gives it bytes" in caught.value.reason
