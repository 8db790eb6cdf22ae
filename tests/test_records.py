"""helpers.records: TFRecord framing, atomic (sharded) writing, checked reading."""

import gzip
import io
import os
import pickle
import struct
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest
from lock_imports import require

from helpers import _framing
from helpers._commit import shard_paths
from helpers.memory import track_peak_memory
from helpers.records import (
    RecordError,
    check_header,
    check_payload,
    detect_compression,
    iter_records,
    masked_crc32c,
    verify,
    write_records,
    write_sharded,
)

tf = require("tensorflow")

HEADER_SIZE = 12
FOOTER_SIZE = 4
COMPRESSIONS = [None, "GZIP", "ZLIB"]


def compress(data, compression):
    """``data`` as TensorFlow's GZIP or ZLIB file of the same records would hold it."""
    if compression == "GZIP":
        return gzip.compress(data, mtime=0)
    return zlib.compress(data) if compression == "ZLIB" else data


def payloads_of(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in sizes]


# Sizes that cross every path of the reader once the buffers are shrunk (see `small_buffers`).
MIXED_SIZES = [0, 1, 10, 200, 3, 1000, 5000, 7, 64, 2048, 0, 90, 4096, 33]


@pytest.fixture(params=["default buffers", "small buffers"])
def buffers(request, monkeypatch):
    """Run a test with the real buffer size, and with a tiny one that makes every record
    straddle chunk boundaries (verify's payloads stream through the CRC in 64-byte pieces)."""
    if request.param == "small buffers":
        monkeypatch.setattr(_framing, "CHUNK", 64)
    return request.param


def offsets_of(payloads):
    offsets = []
    at = 0
    for payload in payloads:
        offsets.append(at)
        at += HEADER_SIZE + len(payload) + FOOTER_SIZE
    return offsets


# --- round trips


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_write_then_read_gives_the_same_payloads(tmp_path, buffers, compression):
    payloads = payloads_of(MIXED_SIZES)
    path = tmp_path / "mixed.tfrecord"
    assert write_records(path, payloads, compression=compression) == len(payloads)
    assert list(iter_records(path, compression)) == payloads
    assert verify(path, compression) == len(payloads)
    got = list(iter_records(path, compression, offsets=True))
    assert [offset for offset, _ in got] == offsets_of(payloads)
    assert [payload for _, payload in got] == payloads


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_large_records_round_trip_with_default_buffers(tmp_path, compression):
    chunk = _framing.CHUNK
    sizes = [chunk + 1, 5, 2 * chunk + 3, chunk, chunk - 20, 12, 3 * chunk // 2]
    payloads = payloads_of(sizes, seed=1)
    path = tmp_path / "large.tfrecord"
    write_records(path, payloads, compression)
    assert list(iter_records(path, compression)) == payloads


class ShortWrites(io.RawIOBase):
    """A raw file whose every write takes at most 1,000 bytes, as a write to a nearly full disk
    or of more than 2 GiB may: someone (the writer, or the buffer over it) must write the rest."""

    def __init__(self, path, mode):
        self.file = open(path, mode, buffering=0)
        self.calls = 0

    def writable(self):
        return True

    def write(self, data):
        self.calls += 1
        return self.file.write(bytes(data[:1000]))

    def fileno(self):
        return self.file.fileno()

    def close(self):
        self.file.close()
        super().close()


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_short_write_is_followed_by_the_rest(tmp_path, monkeypatch, compression):
    import helpers.records

    opened = []

    def short_open(path, mode, buffering=-1):  # as open: buffered unless buffering=0
        opened.append(ShortWrites(path, mode))
        return opened[-1] if buffering == 0 else io.BufferedWriter(opened[-1])

    monkeypatch.setattr(helpers.records, "open", short_open, raising=False)
    payloads = payloads_of([5000, 3, 20_000], seed=2)
    path = tmp_path / "short.tfrecord"
    write_records(path, payloads, compression)
    monkeypatch.undo()
    assert opened and opened[0].calls > 3  # the writes were really cut short
    assert list(iter_records(path, compression)) == payloads


def test_an_empty_file_holds_zero_records(tmp_path):
    path = tmp_path / "empty.tfrecord"
    assert write_records(path, []) == 0
    assert path.stat().st_size == 0
    assert list(iter_records(path)) == [] and verify(path) == 0


def test_a_record_has_the_documented_layout_and_the_checks_accept_it(tmp_path):
    path = tmp_path / "hello.tfrecord"
    write_records(path, [b"hello"])
    framed = path.read_bytes()
    length, length_crc = struct.unpack("<QI", framed[:12])
    assert length == 5 and length_crc == masked_crc32c(framed[:8])
    assert framed[12:17] == b"hello"
    assert struct.unpack("<I", framed[17:]) == (masked_crc32c(b"hello"),)
    assert check_header(framed[:12], path, 0, 0) == 5
    assert check_payload(framed[12:], 5, path, 0, 0) == b"hello"


def test_masked_crc32c_is_the_documented_formula():
    crc = 0xE3069283  # CRC32C of b"123456789", the standard check value
    expected = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(b"123456789") == expected


def test_bytearray_and_memoryview_payloads_are_accepted(tmp_path):
    path = tmp_path / "views.tfrecord"
    write_records(path, [bytearray(b"ab"), memoryview(b"cde")])
    assert list(iter_records(path)) == [b"ab", b"cde"]


def test_non_bytes_payload_is_a_type_error_naming_the_record(tmp_path):
    path = tmp_path / "bad.tfrecord"
    with pytest.raises(TypeError, match="record 1 .* is str, expected bytes"):
        write_records(path, [b"ok", "text"])
    assert list(tmp_path.iterdir()) == []


def test_unknown_compression_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="compression must be None, 'GZIP' or 'ZLIB'"):
        iter_records(tmp_path / "x.tfrecord", "BZIP2")
    with pytest.raises(ValueError, match="compression"):
        write_records(tmp_path / "x.tfrecord", [b"a"], compression="gzip")
    assert list(tmp_path.iterdir()) == []


def test_writing_into_a_missing_folder_names_the_target(tmp_path):
    target = tmp_path / "no-such-folder" / "out.tfrecord"
    with pytest.raises(FileNotFoundError, match=f"cannot write {target}: its folder"):
        write_records(target, [b"a"])
    with pytest.raises(FileNotFoundError, match="no-such-folder/train-00000-of-00002"):
        write_sharded(tmp_path / "no-such-folder" / "train", [b"a"], 2)


def test_numpy_integers_are_accepted_as_shard_counts(tmp_path):
    paths = write_sharded(tmp_path / "np", [b"a", b"b", b"c"], np.int64(2))
    assert [verify(p) for p in paths] == [2, 1]


def test_gzip_output_is_deterministic(tmp_path):
    payloads = payloads_of([10, 500, 30])
    write_records(tmp_path / "a.tfrecord.gz", payloads, compression="GZIP")
    write_records(tmp_path / "b.tfrecord.gz", payloads, compression="GZIP")
    assert (tmp_path / "a.tfrecord.gz").read_bytes() == (tmp_path / "b.tfrecord.gz").read_bytes()


# --- TensorFlow interoperability


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_files_are_byte_identical_to_tensorflows(tmp_path, compression):
    payloads = payloads_of([0, 17, 4000, 300_000, 3_000_000] + [200] * 500)
    ours = tmp_path / "ours.tfrecord"
    theirs = tmp_path / "theirs.tfrecord"
    write_records(ours, payloads, compression)
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(str(theirs), options=options) as writer:
        for payload in payloads:
            writer.write(payload)
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_tensorflow_reads_our_files(tmp_path, compression):
    payloads = payloads_of([5, 70_000, 0, 300])
    path = tmp_path / "ours.tfrecord"
    write_records(path, payloads, compression=compression)
    dataset = tf.data.TFRecordDataset(str(path), compression_type=compression or "")
    assert [record.numpy() for record in dataset] == payloads


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_we_read_tensorflows_files(tmp_path, buffers, compression):
    payloads = payloads_of(MIXED_SIZES, seed=2)
    path = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(path), options=compression or "") as writer:
        for payload in payloads:
            writer.write(payload)
    assert detect_compression(path) == compression
    assert list(iter_records(path, compression)) == payloads


# --- damage


def write_three(tmp_path, sizes=(40, 300, 50), compression=None):
    payloads = payloads_of(sizes, seed=3)
    path = tmp_path / "three.tfrecord"
    write_records(path, payloads, compression=compression)
    return path, payloads, offsets_of(payloads)


def damage(path, at, xor=0x01):
    data = bytearray(path.read_bytes())
    data[at] ^= xor
    path.write_bytes(bytes(data))


def read_until_error(path, compression=None):
    """The payloads read before the error, and the error."""
    got = []
    with pytest.raises(RecordError) as caught:
        for payload in iter_records(path, compression):
            got.append(payload)
    return got, caught.value


@pytest.mark.parametrize(
    "where, reason",
    [
        (lambda off, n: off + 2, "length CRC mismatch: the record header is damaged"),  # the length
        (
            lambda off, n: off + 9,
            "length CRC mismatch: the record header is damaged",
        ),  # the length's CRC
        (lambda off, n: off + HEADER_SIZE + n // 2, "payload CRC mismatch"),  # the payload
        (lambda off, n: off + HEADER_SIZE + n + 1, "payload CRC mismatch"),  # the payload's CRC
    ],
    ids=["length", "length-crc", "payload", "payload-crc"],
)
def test_a_flipped_bit_names_the_file_record_and_offset(tmp_path, buffers, where, reason):
    path, payloads, offsets = write_three(tmp_path)
    damage(path, where(offsets[1], len(payloads[1])))
    got, error = read_until_error(path)
    assert got == payloads[:1], "records before the damage are still delivered"
    assert (error.path, error.index, error.offset) == (str(path), 1, offsets[1])
    assert reason in error.reason
    assert str(error).startswith(f"{path}: record 1 at byte {offsets[1]}: ")
    with pytest.raises(RecordError):
        verify(path)


@pytest.mark.parametrize(
    "cut, reason",
    [
        (-1, "file ends inside the payload CRC (3 of 4 bytes)"),
        (-FOOTER_SIZE, "file ends inside the payload CRC (0 of 4 bytes)"),
        (-FOOTER_SIZE - 1, "file ends inside the payload (49 of 50 bytes)"),
        (-FOOTER_SIZE - 50, "file ends inside the payload (0 of 50 bytes)"),
        (-FOOTER_SIZE - 50 - 5, "file ends inside a record header (7 of 12 bytes)"),
    ],
)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_truncated_last_record_is_an_error_not_a_short_read(
    tmp_path, buffers, cut, reason, compression
):
    path, payloads, offsets = write_three(tmp_path)
    path.write_bytes(compress(path.read_bytes()[:cut], compression))
    got, error = read_until_error(path, compression)
    assert got == payloads[:2]
    assert (error.path, error.index, error.offset, error.reason) == (
        str(path),
        2,
        offsets[2],
        reason,
    )


def test_a_file_cut_inside_the_first_header_says_it_may_not_be_a_tfrecord(tmp_path):
    path = tmp_path / "tiny.tfrecord"
    path.write_bytes(b"\x05\x00\x00")
    _, error = read_until_error(path)
    assert (error.path, error.index, error.offset) == (str(path), 0, 0)
    assert (
        error.reason
        == "file ends inside a record header (3 of 12 bytes) (or this is not a TFRecord file)"
    )


def test_a_file_that_is_not_a_tfrecord_is_refused_at_record_0(tmp_path, buffers):
    path = tmp_path / "notes.txt"
    path.write_text("These are some notes, not records at all.\n" * 10)
    got, error = read_until_error(path)
    assert got == [] and (error.index, error.offset) == (0, 0)
    expected = "length CRC mismatch: this is not a TFRecord file (or its first header is damaged)"
    assert error.reason == expected


def test_a_gzip_file_read_as_plain_suggests_gzip(tmp_path):
    path, _, _ = write_three(tmp_path, compression="GZIP")
    _, error = read_until_error(path)
    assert (error.path, error.index, error.offset) == (str(path), 0, 0)
    assert (
        error.reason
        == "length CRC mismatch: the file starts like GZIP; read it with compression='GZIP'"
    )


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_plain_file_read_as_compressed_is_refused(tmp_path, compression):
    path, _, _ = write_three(tmp_path)
    _, error = read_until_error(path, compression)
    assert (error.index, error.offset) == (0, 0)
    assert error.reason.startswith(f"{compression} stream is damaged or not {compression}")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_data_after_the_compressed_stream_is_not_ignored(tmp_path, compression):
    path, payloads, _ = write_three(tmp_path, compression=compression)
    path.write_bytes(path.read_bytes() + compress(b"more records", compression))
    got, error = read_until_error(path, compression)
    after = "unexpected data after the end of the compressed stream"
    assert (
        got == payloads
        and error.reason == f"{compression} stream is damaged or not {compression} ({after})"
    )


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_compressed_stream_cut_short_says_so(tmp_path, compression):
    path, payloads, _ = write_three(tmp_path, compression=compression)
    path.write_bytes(path.read_bytes()[:-6])  # the end of the stream and its checksum
    got, error = read_until_error(path, compression)
    ends = "the compressed stream ends early"
    assert error.reason == f"{compression} stream is damaged or not {compression} ({ends})"


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("how", ["flipped byte", "cut short"])
def test_a_corrupt_compressed_stream_is_an_error(tmp_path, how, compression):
    path, payloads, _ = write_three(tmp_path, sizes=(2000, 3000, 4000), compression=compression)
    data = bytearray(path.read_bytes())
    if how == "flipped byte":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[len(data) * 2 // 3 :]
    path.write_bytes(bytes(data))
    got, error = read_until_error(path, compression)
    assert got == payloads[: len(got)] and len(got) < 3
    assert any(
        words in error.reason for words in (compression, "payload CRC mismatch", "length CRC")
    )


def huge_length_header(length):
    length_bytes = struct.pack("<Q", length)
    return length_bytes + struct.pack("<I", masked_crc32c(length_bytes))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_an_absurd_length_with_a_valid_crc_is_refused_by_readers_and_a_truncation_to_verify(
    tmp_path, compression
):
    path, payloads, offsets = write_three(tmp_path)
    data = path.read_bytes() + huge_length_header(2**60) + b"just a few bytes"
    path.write_bytes(compress(data, compression))
    got, error = read_until_error(path, compression)
    assert got == payloads
    where = (3, offsets[2] + HEADER_SIZE + 50 + FOOTER_SIZE)
    assert (error.index, error.offset) == where
    assert error.reason == (
        f"the record claims {2**60:,} bytes, more than max_record_bytes=268,435,456 "
        "(verify checks it without holding it)"
    )
    with pytest.raises(RecordError) as caught:
        verify(path, compression)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), *where)
    assert caught.value.reason == f"file ends inside the payload (16 of {2**60} bytes)"


def test_a_record_over_the_limit_is_refused_naming_it_and_verify_still_checks_it(tmp_path):
    path, payloads, offsets = write_three(tmp_path)
    reading = iter_records(path, max_record_bytes=299)
    assert next(reading) == payloads[0]
    with pytest.raises(RecordError) as caught:
        next(reading)
    assert (caught.value.path, caught.value.index, caught.value.offset) == (str(path), 1, 56)
    assert "claims 300 bytes, more than max_record_bytes=299" in str(caught.value)
    assert list(iter_records(path, max_record_bytes=300)) == payloads
    assert verify(path) == 3
    with pytest.raises(ValueError, match="^max_record_bytes must be at least 0, got -1$"):
        list(iter_records(path, max_record_bytes=-1))
    empty = tmp_path / "empty-records.tfrecord"
    write_records(empty, [b"", b""])
    assert list(iter_records(empty, max_record_bytes=0)) == [b"", b""]  # 0 is a limit too


def test_verify_checks_a_huge_gzip_record_in_little_memory(tmp_path):
    """One valid record of 128 MiB of zeros, GZIP: under 1 MB on disk, never held in memory."""
    import google_crc32c

    size = 1 << 27
    piece = bytes(1 << 20)
    crc = google_crc32c.value(b"")
    for _ in range(size // len(piece)):
        crc = google_crc32c.extend(crc, piece)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    deflate = zlib.compressobj(6, zlib.DEFLATED, 31, 9)
    path = tmp_path / "zeros.tfrecord.gz"
    with open(path, "wb") as out:
        out.write(deflate.compress(huge_length_header(size)))
        for _ in range(size // len(piece)):
            out.write(deflate.compress(piece))
        out.write(deflate.compress(struct.pack("<I", masked)) + deflate.flush())
    assert path.stat().st_size < 1 << 20
    code = (  # VmHWM: this process's peak resident memory (ru_maxrss would include pytest's)
        "import re, sys\n"
        "from helpers.records import verify\n"
        "count = verify(sys.argv[1], 'GZIP')\n"
        "status = open('/proc/self/status').read()\n"
        "print(count, int(re.search(r'VmHWM:\\s+(\\d+) kB', status)[1]) // 1024)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    count, peak_mib = map(int, done.stdout.split())
    assert count == 1 and peak_mib < 100, f"verify peaked at {peak_mib} MiB"
    with pytest.raises(RecordError, match="claims 134,217,728 bytes, more than max_record_bytes"):
        next(iter_records(path, "GZIP", max_record_bytes=size - 1))


def test_record_error_survives_pickling():
    error = RecordError("a.tfrecord", 3, 120, "payload CRC mismatch")
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.index, again.offset, again.reason, str(again)) == (
        "a.tfrecord",
        3,
        120,
        "payload CRC mismatch",
        str(error),
    )


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        verify(tmp_path / "missing.tfrecord")


# --- atomic, sharded writing


def test_shard_paths_follow_the_usual_pattern(tmp_path):
    names = [p.name for p in shard_paths(tmp_path / "train", 4)]
    assert names == [f"train-0000{i}-of-00004.tfrecord" for i in range(4)]
    assert [p.name for p in shard_paths("out/val", 1, "GZIP")] == ["val-00000-of-00001.tfrecord.gz"]
    assert [p.name for p in shard_paths("out/val", 1, "ZLIB")] == ["val-00000-of-00001.tfrecord.zz"]
    for bad in (0, -1):
        with pytest.raises(ValueError, match="num_shards must be at least 1"):
            shard_paths("x", bad)
    for bad in (1.5, None, True):
        with pytest.raises(TypeError, match="num_shards must be an int"):
            shard_paths("x", bad)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_write_sharded_deals_records_round_robin(tmp_path, compression):
    payloads = payloads_of(range(10, 21))  # 11 records
    paths = write_sharded(tmp_path / "train", iter(payloads), 4, compression=compression)
    assert paths == shard_paths(tmp_path / "train", 4, compression)
    for shard, path in enumerate(paths):
        assert list(iter_records(path, compression)) == payloads[shard::4]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_more_shards_than_records_gives_valid_empty_shards(tmp_path):
    paths = write_sharded(tmp_path / "few", [b"a", b"b"], 3)
    assert [verify(p) for p in paths] == [1, 1, 0]


def test_write_sharded_refuses_to_overwrite_and_writes_nothing(tmp_path):
    prefix = tmp_path / "train"
    existing = shard_paths(prefix, 3)[2]
    existing.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="train-00002-of-00003.tfrecord"):
        write_sharded(prefix, [b"a", b"b", b"c"], 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing.name]
    assert existing.read_bytes() == b"precious"
    paths = write_sharded(prefix, [b"a", b"b", b"c"], 3, overwrite=True)
    assert [list(iter_records(p)) for p in paths] == [[b"a"], [b"b"], [b"c"]]


def test_write_records_refuses_to_overwrite(tmp_path):
    path = tmp_path / "one.tfrecord"
    write_records(path, [b"first"])
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_records(path, [b"second"])
    assert list(iter_records(path)) == [b"first"]
    write_records(path, [b"second"], overwrite=True)
    assert list(iter_records(path)) == [b"second"]


def failing_after(count):
    for index in range(count):
        yield f"record {index}".encode()
    raise RuntimeError("the source broke half way")


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_an_error_half_way_leaves_no_shard_and_no_temp_file(tmp_path, compression):
    with pytest.raises(RuntimeError, match="half way"):
        write_sharded(tmp_path / "train", failing_after(5), 2, compression=compression)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="half way"):
        write_records(tmp_path / "one.tfrecord", failing_after(5), compression=compression)
    assert list(tmp_path.iterdir()) == []


def test_an_error_after_a_temp_file_vanished_is_still_the_one_raised_and_no_temp_is_left(
    tmp_path,
):
    """Cleaning up after a failure skips a temporary file that is gone already (removed by hand,
    say): the caller sees the source's error, and the other shard's temporary file goes too."""

    def source():
        yield from (b"a", b"b", b"c")
        (shard_0,) = tmp_path.glob(".train-00000-of-00002.tfrecord.*.tmp")
        shard_0.unlink()
        raise RuntimeError("the source broke half way")

    with pytest.raises(RuntimeError, match="half way"):
        write_sharded(tmp_path / "train", source(), 2)
    assert list(tmp_path.iterdir()) == []


def test_an_error_half_way_keeps_the_previous_files_when_overwriting(tmp_path):
    paths = write_sharded(tmp_path / "train", [b"old 0", b"old 1"], 2)
    with pytest.raises(RuntimeError):
        write_sharded(tmp_path / "train", failing_after(3), 2, overwrite=True)
    assert [list(iter_records(p)) for p in paths] == [[b"old 0"], [b"old 1"]]
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in paths)


def test_a_shard_that_cannot_be_renamed_into_place_reports_that_and_leaves_no_temp_file(
    tmp_path,
):
    """Shard 0 is renamed into place before shard 1's rename fails (its name is a folder):
    the error is that rename's, not one from cleaning up shard 0's temp file, now gone."""
    paths = shard_paths(tmp_path / "train", 2)
    paths[1].mkdir()
    with pytest.raises(IsADirectoryError, match="train-00001-of-00002"):
        write_sharded(tmp_path / "train", [b"a", b"b", b"c"], 2, overwrite=True)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_detect_compression(tmp_path):
    plain, _, _ = write_three(tmp_path)
    zipped = tmp_path / "z.tfrecord.gz"
    write_records(zipped, [b"abc"], compression="GZIP")
    deflated = tmp_path / "z.tfrecord.zz"
    write_records(deflated, [b"abc"], compression="ZLIB")
    empty = tmp_path / "empty.tfrecord"
    write_records(empty, [])
    found = [detect_compression(p) for p in (plain, zipped, deflated, empty)]
    assert found == [None, "GZIP", "ZLIB", None]
    junk = tmp_path / "junk.tfrecord"
    junk.write_bytes(b"not a record file at all")
    with pytest.raises(RecordError, match="junk.tfrecord: record 0 at byte 0: length CRC mismatch"):
        detect_compression(junk)


def test_detect_compression_trusts_a_valid_header_that_starts_like_gzip(tmp_path):
    length = 0x088B1F  # little-endian 1f 8b 08: the GZIP magic and its deflate method byte
    path = tmp_path / "unlucky.tfrecord"
    write_records(path, [bytes(length)])
    assert path.read_bytes()[:3] == b"\x1f\x8b\x08"
    assert detect_compression(path) is None
    assert verify(path) == 1


def test_written_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "perm.tfrecord"
        write_records(path, [b"x"])
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_the_next_write_removes_what_a_killed_write_left_and_says_so(tmp_path):
    """kill -9 half way leaves hidden temp files (never a final name); the next run cleans them."""
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from helpers.records import write_sharded\n"
        "def slow():\n"
        "    for i in range(1000):\n"
        "        yield bytes(100_000)\n"
        "        if i == 20: print('half way', flush=True); time.sleep(60)\n"
        "write_sharded(sys.argv[1], slow(), 2)\n"
    )
    prefix = tmp_path / "train"
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(prefix)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline() == "half way\n"
    time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == 2 and all(
        name.startswith(".train-0000") and name.endswith(".tmp") for name in left
    )
    with pytest.warns(UserWarning, match="removed 2 temporary file"):
        paths = write_sharded(prefix, [b"a", b"b"], 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_reading_a_highly_compressed_file_inflates_it_a_slice_at_a_time(tmp_path):
    """64 MiB of zeros in 64 KiB records compress to about 64 KiB, read in one go from disk:
    inflated without a limit that would be 64 MiB at once, a decompression bomb in small."""
    path = tmp_path / "zeros.tfrecord.gz"
    write_records(path, (bytes(1 << 16) for _ in range(1024)), compression="GZIP")
    assert path.stat().st_size < 1 << 20
    with track_peak_memory() as peak:
        assert verify(path, "GZIP") == 1024
    assert peak.peak_increase_mib < 24


def python_peak_mib(work) -> float:
    """The most memory Python objects held at once while ``work()`` ran. tracemalloc counts
    every allocation, where ``track_peak_memory`` samples resident memory every 5 ms and can
    miss a buffer held for less: these limits are a few MiB against reads of 12 to 64 MiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_a_compressed_file_is_read_from_disk_a_slice_at_a_time(tmp_path):
    """12 MiB of random payloads do not compress: reading them all at once would hold 12 MiB."""
    path = tmp_path / "random.tfrecord.gz"
    write_records(path, (os.urandom(1 << 16) for _ in range(192)), compression="GZIP")
    assert path.stat().st_size > 12 << 20
    assert python_peak_mib(lambda: verify(path, "GZIP")) < 8


def gzip_of_size(size: int, data: bytes) -> bytes:
    """A GZIP member of ``data`` made exactly ``size`` bytes long by its header's extra field."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)  # raw deflate: header and trailer are ours
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    extra = size - 12 - len(body) - len(trailer)
    assert 0 <= extra < 1 << 16, f"{len(body)} bytes of deflate do not fit in {size}"
    return b"\x1f\x8b\x08\x04" + bytes(6) + struct.pack("<H", extra) + bytes(extra) + body + trailer


def test_data_after_a_gzip_stream_that_ends_a_read_is_refused_unread(tmp_path):
    """The stream ends exactly where a 1 MiB read of the file does: 16 MiB after it are
    damage, told by one more byte, not read whole."""
    plain = tmp_path / "plain.tfrecord"
    write_records(plain, (os.urandom(1000) for _ in range(1000)))
    stream = gzip_of_size(_framing.CHUNK, plain.read_bytes())
    path = tmp_path / "trailing.tfrecord.gz"
    path.write_bytes(stream)
    assert verify(path, "GZIP") == 1000
    path.write_bytes(stream + bytes(16 << 20))
    reason = "unexpected data after the end of the compressed stream"
    with pytest.raises(RecordError, match=f"record 1000 at byte 1016000: .*{reason}"):
        verify(path, "GZIP")
    assert python_peak_mib(lambda: pytest.raises(RecordError, verify, path, "GZIP")) < 8


def test_the_writer_holds_about_a_mebibyte_of_records_at_a_time(tmp_path):
    """16 MiB of distinct 4 KiB records: gathered and written a mebibyte at a time."""
    records = (os.urandom(1 << 12) for _ in range(1 << 12))
    peak = python_peak_mib(lambda: write_records(tmp_path / "many.tfrecord", records))
    assert peak < 8


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_writing_and_reading_warn_nothing(tmp_path, compression):
    path = tmp_path / "quiet.tfrecord"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_records(path, [b"a", b"bc"], compression)
        assert list(iter_records(path, compression)) == [b"a", b"bc"]
        assert verify(path, compression) == 2


def test_tensorflows_empty_compression_string_means_plain(tmp_path):
    path = tmp_path / "plain.tfrecord"
    write_records(path, [b"a"], compression="")
    assert list(iter_records(path, "")) == [b"a"] and verify(path, "") == 1
    write_records(tmp_path / "none.tfrecord", [b"a"], compression=None)
    assert path.read_bytes() == (tmp_path / "none.tfrecord").read_bytes()


def test_detect_compression_reads_only_the_first_header(tmp_path):
    path = tmp_path / "big.tfrecord"
    write_records(path, [b"x"])
    os.truncate(path, 64 << 20)  # a valid first record, then 64 MiB of zeros (sparse)
    assert python_peak_mib(lambda: detect_compression(path)) < 1


def test_the_refusal_to_overwrite_names_every_existing_file_in_one_sentence(tmp_path):
    one = tmp_path / "one.tfrecord"
    write_records(one, [b"a"])
    with pytest.raises(FileExistsError) as caught:
        write_records(one, [b"b"])
    assert str(caught.value) == f"{one} already exists; pass overwrite=True to replace"
    paths = write_sharded(tmp_path / "train", [b"a", b"b"], 2)
    with pytest.raises(FileExistsError) as caught:
        write_sharded(tmp_path / "train", [b"c"], 2)
    both = f"{paths[0]}, {paths[1]}"
    assert str(caught.value) == f"{both} already exist; pass overwrite=True to replace"


def test_temporary_files_of_dead_writers_are_removed_and_listed_those_of_live_ones_kept(tmp_path):
    paths = shard_paths(tmp_path / "train", 2)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stale = [
        tmp_path / f".{paths[0].name}.{dead}-0123abcd.tmp",
        tmp_path / f".{paths[1].name}.0123abcd.tmp",  # no pid: an old name
    ]
    live = tmp_path / f".{paths[1].name}.{os.getpid()}-89abcdef.tmp"  # a writer still at work
    for temp in [*stale, live]:
        temp.write_bytes(b"half a record")
    with pytest.warns(UserWarning) as caught:
        write_sharded(tmp_path / "train", [b"a", b"b"], 2)
    names = f"{stale[0].name}, {stale[1].name}"
    assert str(caught[0].message) == (
        f"removed 2 temporary file(s) left by a writer that was killed in {tmp_path}: {names}"
    )
    assert not any(temp.exists() for temp in stale)
    assert live.read_bytes() == b"half a record"


_KILLED_DURING_COMMIT = """
import os, signal, sys
renames = 0
def replace_then_die(source, target):
    global renames
    if str(target).endswith(".tfrecord"):
        renames += 1
        if renames == 2:  # one shard renamed, the next not yet
            os.kill(os.getpid(), signal.SIGKILL)
    os.rename(source, target)
os.replace = replace_then_die
from helpers.records import write_sharded
write_sharded(sys.argv[1], [b"new"] * 3, 3, overwrite=True)
"""


def test_a_writer_killed_between_two_renames_is_finished_by_the_next_write(tmp_path):
    old = write_sharded(tmp_path / "train", [b"old"] * 3, 3)
    killed = subprocess.run([sys.executable, "-c", _KILLED_DURING_COMMIT, str(tmp_path / "train")])
    assert killed.returncode == -9
    # What the kill left: the first shard new, the others old, and the journal of the commit.
    assert [list(iter_records(p)) for p in old] == [[b"new"], [b"old"], [b"old"]]
    assert len(list(tmp_path.glob(".*.commit"))) == 1
    with pytest.warns(UserWarning, match=r"finished an interrupted write in .*: train-00000-of"):
        write_records(tmp_path / "other.tfrecord", [b"x"])  # any helpers write into the folder
    assert [list(iter_records(p)) for p in old] == [[b"new"]] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in old] + ["other.tfrecord"]
    )


_CONCURRENT_WRITER = """
import os, sys, time
from helpers.records import write_sharded
def slow_replace(source, target):  # widens the window between two renames of one commit
    os.rename(source, target)
    time.sleep(0.02 if str(target).endswith(".tfrecord") else 0)
os.replace = slow_replace
name = sys.argv[2].encode()
for round in range(5):
    write_sharded(sys.argv[1], [name] * 4000, 4, overwrite=True)
"""


def test_two_concurrent_writers_never_mix_shards_or_delete_each_others_files(tmp_path):
    prefix = str(tmp_path / "train")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _CONCURRENT_WRITER, prefix, name],
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("A", "B")
    ]
    errors = [writer.communicate()[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], errors
    shards = sorted(tmp_path.glob("train-*"))
    assert len(shards) == 4 and sorted(p.name for p in tmp_path.iterdir()) == [
        p.name for p in shards
    ]
    contents = {payload for shard in shards for payload in iter_records(shard)}
    assert contents in ({b"A"}, {b"B"})
    assert all(len(list(iter_records(shard))) == 1000 for shard in shards)


def test_a_file_that_appears_while_writing_is_named_and_kept(tmp_path):
    """Another writer commits the same name while this write runs: its file stays, and the
    error names it."""
    target = tmp_path / "one.tfrecord"

    def payloads():
        yield b"a"
        target.write_bytes(b"another writer's")
        yield b"b"

    with pytest.raises(FileExistsError) as caught:
        write_records(target, payloads())
    assert str(caught.value) == f"{target} appeared while this write ran"
    assert target.read_bytes() == b"another writer's"
    assert [p.name for p in tmp_path.iterdir()] == ["one.tfrecord"]  # no temp file left


def test_a_zlib_header_alone_is_enough_to_detect_zlib(tmp_path):
    """Two bytes are a whole zlib header (RFC 1950): no third byte is needed."""
    path = tmp_path / "header_only.tfrecord.zz"
    path.write_bytes(zlib.compress(b"")[:2])  # 78 9c
    assert detect_compression(path) == "ZLIB"
