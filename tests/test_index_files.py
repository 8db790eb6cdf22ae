"""helpers.index: indexing files that exist (write_index, check_index), the binary index and
its identity, the checks a view makes at every open, reads of a shard cut short, and the memory
a worker process holds."""

import contextlib
import ctypes
import gc
import mmap
import os
import pickle
import re
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from test_records import python_peak_mib

from helpers import _spans, index
from helpers.index import RecordView, build_index, check_index, write_index
from helpers.records import RecordError, write_records, write_sharded

PAYLOADS = [bytes([i]) * (i * 7 % 23) for i in range(40)]  # varied lengths, empty ones too


@pytest.fixture
def tfrecord(tmp_path):
    path = tmp_path / "data.tfrecord"
    write_records(path, PAYLOADS)
    return path


def text_of(path):
    return path.with_name(path.name + ".index")


def binary_of(path):
    return path.with_name(path.name + ".index.npy")


def test_write_index_writes_the_text_and_the_binary_form_the_writers_write(tmp_path):
    ours = write_sharded(tmp_path / "w", PAYLOADS, 2, index=True)
    copies = []
    for path in ours:  # the same shards, as another writer left them: no index
        copies.append(tmp_path / ("copy-" + path.name))
        copies[-1].write_bytes(path.read_bytes())
    assert write_index(copies) == [20, 20]
    for path, copy in zip(ours, copies, strict=True):
        assert text_of(copy).read_text() == text_of(path).read_text()
        stat, saved = copy.stat(), np.load(binary_of(copy))
        assert saved.dtype == np.int64
        identity = [stat.st_size, stat.st_mtime_ns, stat.st_ino]  # what says "the same file"
        assert saved.tolist() == [*identity, *build_index(copy).tolist()]
        stat = path.stat()
        written = np.load(binary_of(path))  # write_sharded's, of its own shard
        assert written.tolist() == [stat.st_size, stat.st_mtime_ns, stat.st_ino, *saved[3:]]
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_a_view_maps_the_binary_index_and_walks_nothing(tmp_path, monkeypatch):
    paths = write_sharded(tmp_path / "x", PAYLOADS, 2, index=True)
    monkeypatch.setattr(index, "build_index", lambda path: pytest.fail(f"walked {path}"))
    with RecordView(paths) as view:
        assert view.index_nbytes == 0
        assert view[list(range(len(view)))] == PAYLOADS[0::2] + PAYLOADS[1::2]


def test_a_stale_binary_index_is_ignored_for_the_checked_text_or_a_walk(tmp_path):
    path = tmp_path / "a.tfrecord"
    write_records(path, PAYLOADS)
    write_index(path)
    write_records(path, PAYLOADS[::-1], overwrite=True)  # same size, another file, other time
    text_of(path).unlink()
    ignored = f"ignored {binary_of(path)}: made for another version of the file, which was replaced"
    with pytest.warns(UserWarning, match=re.escape(ignored)), RecordView(path) as view:
        assert view[list(range(40))] == PAYLOADS[::-1] and view.index_nbytes == 8 * 41
    stale = np.load(binary_of(path))
    stale[3:] = build_index(path)  # right boundaries, but made for another version of the file
    np.save(binary_of(path), stale)
    with pytest.warns(UserWarning, match=re.escape(ignored)), RecordView(path) as view:
        assert view.index_nbytes == 8 * 41  # not mapped: walked
    with pytest.raises(ValueError, match=re.escape(f"{path}: {ignored}")):
        check_index(path)  # --check names a stale binary index as wrong, in one error


@pytest.mark.parametrize(
    "bounds, record, says",
    [
        ([0, 17, 34], 1, "the index gives it bytes 17-34 of 51"),  # does not reach the end
        ([5, 17, 51], 0, "the index gives it bytes 5-17 of 51"),  # does not start at 0
        ([0, 34, 51], 0, "no header of 18 payload bytes where the index puts one"),  # the issue's
        ([0, 8, 51], 0, "the index gives it bytes 0-8 of 51"),  # shorter than a record can be
    ],
)
def test_a_binary_index_of_the_right_file_and_wrong_boundaries_is_named(
    tmp_path, bounds, record, says
):
    path = tmp_path / "three.tfrecord"
    write_records(path, [b"a", b"b", b"c"])
    write_index(path)
    np.save(binary_of(path), np.array([*np.load(binary_of(path))[:3], *bounds]))
    with pytest.raises(RecordError) as caught:
        RecordView(path)
    assert (caught.value.path, caught.value.index) == (str(path), record)
    assert caught.value.reason.startswith(says) and "python -m helpers index" in caught.value.reason


def test_the_check_at_opening_sees_the_first_the_last_and_1000_headers_spread_between(tmp_path):
    path = tmp_path / "many.tfrecord"
    write_records(path, [bytes(i % 3) for i in range(1_100)])
    data, starts = path.read_bytes(), build_index(path).tolist()
    seen = []
    for k, start in enumerate(starts[:-1]):  # each record's header damaged in turn
        damaged = bytearray(data)
        damaged[start + 9] ^= 0x01  # its length CRC
        path.write_bytes(bytes(damaged))
        try:
            RecordView(path).close()
        except RecordError as error:
            assert (error.index, error.offset) == (k, start)
            seen.append(k)
    assert len(seen) >= 1_000 and seen[0] == 0 and seen[-1] == 1_099
    assert max(np.diff(seen)) <= 2  # spread over all of the file
    path.write_bytes(data[: starts[40]])  # 40 records: every header
    for k in range(40):
        damaged = bytearray(path.read_bytes())
        damaged[starts[k] + 9] ^= 0x01
        (tmp_path / "few.tfrecord").write_bytes(bytes(damaged))
        write_index_text = "".join(
            f"{a} {b - a}\n" for a, b in zip(starts[:40], starts[1:41], strict=True)
        )
        text_of(tmp_path / "few.tfrecord").write_text(write_index_text)
        with pytest.raises(RecordError, match=f"record {k} at byte {starts[k]}"):
            RecordView(tmp_path / "few.tfrecord")


def swapped_lengths_index(path, k):
    """The text index of ``path`` with records ``k`` and ``k + 1`` given each other's lengths:
    it still tiles the file, and is wrong at record ``k`` only."""
    bounds = build_index(path).tolist()
    sizes = np.diff(bounds).tolist()
    sizes[k], sizes[k + 1] = sizes[k + 1], sizes[k]
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    text_of(path).write_text("".join(f"{s} {n}\n" for s, n in zip(starts, sizes, strict=True)))


def test_the_cheap_check_cannot_see_a_wrong_boundary_between_samples_a_read_and_the_full_check_do(
    tmp_path,
):
    path = tmp_path / "many.tfrecord"
    write_records(path, [bytes(i % 5) for i in range(10_000)])  # more than the 4,096 sampled
    for k in range(1_500, 1_600, 5):  # records k (no payload) and k + 1 (one byte) swapped
        swapped_lengths_index(path, k)
        with contextlib.suppress(RecordError):  # k or k + 1 sampled: seen at opening
            view = RecordView(path)
            break
    with view:  # neither sampled: the view opens, and the read of record k names it
        assert view[k - 1] == bytes((k - 1) % 5)
        with pytest.raises(
            RecordError, match=f"record {k} at byte .*: no header of 1 payload bytes .*it says 0"
        ):
            view[k]
    with pytest.raises(RecordError) as caught:
        check_index(path)
    assert (caught.value.path, caught.value.index) == (str(path), k)
    assert caught.value.reason.startswith("no header of 1 payload bytes where the index puts one")
    write_index(path)  # rebuilt: every header agrees
    assert check_index(path) == [10_000]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_write_index_refuses_compressed_files_and_writes_nothing(tmp_path, compression):
    path = tmp_path / "data.tfrecord.z"
    write_records(path, PAYLOADS, compression=compression)
    with pytest.raises(ValueError, match=f"a {compression}-compressed TFRecord file cannot be"):
        write_index(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.tfrecord.z"]


def test_write_index_names_a_damaged_header_and_writes_nothing(tfrecord):
    data = bytearray(tfrecord.read_bytes())
    offset = build_index(tfrecord).tolist()[9]
    data[offset + 3] ^= 0x40
    tfrecord.write_bytes(bytes(data))
    with pytest.raises(RecordError, match=f"record 9 at byte {offset}: length CRC mismatch"):
        write_index(tfrecord)
    assert sorted(p.name for p in tfrecord.parent.iterdir()) == ["data.tfrecord"]


def test_write_index_refuses_a_folder_it_cannot_write_to_saying_what_to_do(tfrecord, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # root may write anywhere
    with pytest.raises(PermissionError) as caught:
        write_index(tfrecord)
    assert str(caught.value).startswith(f"{tfrecord.parent}: cannot write an index into this")
    assert "copy the shards to a folder you can write to and index them there" in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_write_index_refuses_a_read_only_folder(tfrecord):
    tfrecord.parent.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="cannot write an index into this folder"):
            write_index(tfrecord)
    finally:
        tfrecord.parent.chmod(0o755)


def test_write_index_replaces_a_wrong_index_whole(tfrecord):
    text_of(tfrecord).write_text("0 34\n34 17\n")
    with pytest.raises(RecordError):
        RecordView(tfrecord)
    write_index(tfrecord, progress=True)
    with RecordView(tfrecord) as view:
        assert view[list(range(40))] == PAYLOADS and view.index_nbytes == 0


def test_a_shard_cut_short_between_reads_is_a_named_error_on_every_path(tmp_path):
    paths = write_sharded(
        tmp_path / "x", [bytes([i % 256]) * 300 for i in range(400)], 2, index=True
    )
    with RecordView(paths) as view:
        assert view[0] == bytes(300) and view[[1, 3]] == [bytes([2]) * 300, bytes([6]) * 300]
        os.truncate(paths[0], paths[0].stat().st_size // 2)
        assert view[1] == bytes([2]) * 300  # before the cut: still there
        with pytest.raises(RecordError) as single:
            view[150]  # a single read that does not stat: its read comes back short
        with pytest.raises(RecordError, match="the file is now 31600 bytes since the view opened"):
            view[[150, 2]]
    assert (single.value.path, single.value.index) == (str(paths[0]), 150)
    assert single.value.reason == "file ends inside a record header (0 of 12 bytes)"


def cached_pages(path):
    """How many of the file's pages are in the page cache: ``mincore`` of a private map of it
    (a probe by read would start read-ahead and fill the cache it looks at)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        mapped = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY)
    pages = (ctypes.c_ubyte * -(-size // mmap.PAGESIZE))()
    start = ctypes.c_char.from_buffer(mapped)
    try:
        if libc.mincore(ctypes.addressof(start), size, pages):
            raise OSError(ctypes.get_errno(), f"mincore of {path}")
    finally:
        del start  # the map cannot close while a pointer into it lives
        mapped.close()
    return sum(flag & 1 for flag in pages)


def drop_cached_pages(paths):
    """Drop the files' pages from the page cache (no root needed): the next reads wait for the
    disk. Pages not yet written back cannot be dropped, so each file is synced first, and a
    page the kernel still holds (busy for a moment) is asked for again, up to 20 times; then the
    premise is checked (a page still cached fails here, not in a later assertion)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        for _ in range(20):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if not cached_pages(path):
                break
            time.sleep(0.05)
        os.close(fd)
        assert cached_pages(path) == 0, f"{path}: pages still in the page cache"


def test_a_batch_from_a_cold_cache_gives_the_same_records(tmp_path):
    """Each batch from a cache just emptied, by a view that has mapped no page yet (a mapped page
    cannot be dropped): the records read one by one."""
    paths = write_sharded(tmp_path / "x", [bytes([i % 256]) * (i % 9) for i in range(3_000)], 3)
    order = np.random.default_rng(1).permutation(3_000)
    with RecordView(paths) as view:
        one_by_one = [view[int(i)] for i in order]
    for size in (3_000, 300, 40, 1):
        with RecordView(paths) as view:
            drop_cached_pages(paths)
            assert view[order[:size]] == one_by_one[:size]


def test_a_batch_the_cache_lacks_is_read_by_threads_from_32_records_on(tmp_path, monkeypatch):
    """Whether the cache lacks a page is the kernel's answer to a read that must not wait, and a
    fast disk may answer "cached" for a page it has just fetched: here the answer is "lacking"."""
    paths = write_sharded(tmp_path / "x", [bytes([i % 256]) * (i % 9) for i in range(3_000)], 3)
    order = np.random.default_rng(1).permutation(3_000)
    pools = []
    real_map = ThreadPoolExecutor.map
    monkeypatch.setattr(
        ThreadPoolExecutor, "map", lambda pool, *work: pools.append(pool) or real_map(pool, *work)
    )
    with RecordView(paths) as view:
        one_by_one = [view[int(i)] for i in order]
        for module in (index, _spans):  # the view's choice of maps, and read_each's of threads
            monkeypatch.setattr(module, "all_cached", lambda fds, starts, sizes: False)
        for size, threaded in ((3_000, True), (300, True), (40, True), (31, False), (1, False)):
            pools.clear()
            assert view[order[:size]] == one_by_one[:size]
            assert bool(pools) == threaded, size


_WORKER = """
import pickle, sys
view = pickle.loads(sys.stdin.buffer.read())
print(view.index_nbytes, view[[len(view) - 1, 0]] == [bytes(100)] * 2)
"""


def test_a_pickled_view_carries_paths_not_the_index(tmp_path):
    paths = write_sharded(tmp_path / "x", [bytes(100)] * 20_000, 2, index=True)
    with RecordView(paths) as view:
        blob = pickle.dumps(view)
    assert len(blob) < 2_000  # 160 KB of index stay behind
    worker = subprocess.run([sys.executable, "-c", _WORKER], input=blob, capture_output=True)
    assert (worker.returncode, worker.stdout) == (0, b"0 True\n"), worker.stderr.decode()
    binary_of(paths[1]).unlink()  # without the binary form the worker parses the text index
    with RecordView(paths) as view:
        blob = pickle.dumps(view)
    assert len(blob) < 2_000
    worker = subprocess.run([sys.executable, "-c", _WORKER], input=blob, capture_output=True)
    assert (worker.returncode, worker.stdout) == (0, b"80008 True\n"), worker.stderr.decode()
    write_records(paths[0], [b"other"], overwrite=True)  # replaced before the worker opened it
    worker = subprocess.run([sys.executable, "-c", _WORKER], input=blob, capture_output=True)
    assert worker.returncode == 1 and b"was replaced since the view opened it" in worker.stderr


_ANONYMOUS = """
import pickle, sys
def anonymous():  # the process's private memory that no file backs, in KiB
    with open("/proc/self/smaps_rollup") as rollup:
        return next(int(line.split()[1]) for line in rollup if line.startswith("Anonymous:"))
blob = sys.stdin.buffer.read()
before = anonymous()
view = pickle.loads(blob)
view[list(range(0, len(view), max(1, len(view) // 256)))]
print((anonymous() - before) * 1024)
"""


def worker_anonymous_growth(view):
    """The anonymous memory (private, backed by no file) a worker process adds by unpickling
    ``view`` and reading a batch. The file pages the view maps are not in it: those are page
    cache, which the kernel can drop and which a ``pread`` fills as well."""
    done = subprocess.run(
        [sys.executable, "-c", _ANONYMOUS], input=pickle.dumps(view), capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    return int(done.stdout)


def test_a_worker_holding_a_big_mapped_view_holds_no_more_private_memory(tmp_path):
    big = write_sharded(tmp_path / "big", (bytes(100) for _ in range(1_000_000)), 2, index=True)
    small = write_sharded(tmp_path / "small", [bytes(100)] * 1_000, 2, index=True)
    with RecordView(big) as view, RecordView(small) as other:  # the opener maps them too
        mapped = worker_anonymous_growth(view) - worker_anonymous_growth(other)
        for path in big:  # the control: the same view without its binary form, private arrays
            binary_of(path).unlink()
        with RecordView(big) as private_view:
            private = worker_anonymous_growth(private_view) - worker_anonymous_growth(other)
    assert private > 6 << 20  # 8 MB of index in private arrays: the test can see it
    assert mapped < 3 << 20, (mapped, private)


def test_a_replaced_file_of_the_same_size_and_time_keeps_no_trusted_index(tmp_path):
    """The one "same file" rule (inode, size, st_mtime_ns) for the binary index and for a view:
    a file put in another's place is another file, whatever its size and time say."""
    path, other = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    write_records(path, [b"x" * 10, b"y" * 20])
    write_index(path)
    write_records(other, [b"x" * 20, b"y" * 10])  # the same size, other boundaries
    stat = path.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time (cp -p, rsync)
    with RecordView(path) as view:
        os.replace(other, path)
        with pytest.raises(RecordError, match="the file was replaced since the view opened it"):
            view[0]
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    text_of(path).unlink()  # the binary index alone, made for the file that was replaced
    with pytest.warns(
        UserWarning, match="made for another version of the file, which was replaced"
    ):
        with RecordView(path) as view:  # walked, not misread by the old boundaries
            assert view[[0, 1]] == [b"x" * 20, b"y" * 10] and view.index_nbytes == 24


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "not an index: not a NumPy array file"),
        (b"0 16\n", "not an index: not a NumPy array file"),  # a text index by that name
        (np.arange(9, dtype=np.int32), "not an index: int32 of shape (9,), not int64 numbers"),
        (np.zeros((3, 3), np.int64), "not an index: int64 of shape (3, 3), not int64 numbers"),
        (np.zeros(3, np.int64), "not an index: int64 of shape (3,), not int64 numbers"),
    ],
)
def test_a_malformed_binary_index_is_named_once_and_the_file_read_without_it(
    tfrecord, content, says
):
    if isinstance(content, bytes):
        binary_of(tfrecord).write_bytes(content)
    else:
        np.save(binary_of(tfrecord), content)
    with pytest.warns(UserWarning) as warned, RecordView(tfrecord) as view:
        assert view[list(range(40))] == PAYLOADS and view.index_nbytes == 8 * 41  # walked
    assert len(warned) == 1, [str(w.message) for w in warned]
    message = str(warned[0].message)
    assert message.startswith(f"ignored {binary_of(tfrecord)}: {says}")
    assert message.endswith(f". Rebuild it: python -m helpers index {tfrecord}")
    assert warned[0].filename == __file__  # it points at the line that opened the view


def test_check_index_says_no_index_before_reading_the_file(tfrecord, monkeypatch):
    monkeypatch.setattr(index, "build_index", lambda path: pytest.fail(f"walked {path}"))
    with pytest.raises(FileNotFoundError, match="no index: write one"):
        check_index(tfrecord)


def test_writing_and_checking_an_index_hold_no_python_object_per_record(tmp_path):
    """400,000 records: the text index built whole (two ints and a line per record) took about
    52 MiB, the check one bytes object per header about 76 MiB. Now: the boundaries' arrays
    (3.2 MB each), the text a few thousand lines at a time, the check a mebibyte at a time."""
    path = tmp_path / "many.tfrecord"
    write_records(path, (b"" for _ in range(400_000)))
    assert python_peak_mib(lambda: write_index(path)) < 24
    assert python_peak_mib(lambda: check_index(path)) < 8  # the binary index, mapped
    binary_of(path).unlink()
    assert python_peak_mib(lambda: check_index(path)) < 16  # the text index, parsed by NumPy
    assert check_index(path) == [400_000]


def test_records_read_in_order_come_in_runs_and_a_cut_inside_a_run_is_named(tmp_path, monkeypatch):
    """Consecutive records are read as one span; a file cut inside that span (after the view's
    check of its size, which is made to miss it here) names the first record it cut short."""
    paths = write_sharded(
        tmp_path / "x", [bytes([i % 256]) * 300 for i in range(400)], 1, index=True
    )
    reads = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda *args: reads.append(args[1]) or real_pread(*args))
    monkeypatch.setattr(index, "all_cached", lambda *spans: False)  # read, not sliced from maps
    with RecordView(paths) as view:
        reads.clear()  # the headers read at opening
        assert view[list(range(100, 356))] == [bytes([i % 256]) * 300 for i in range(100, 356)]
        assert reads == [256 * 316]  # one read for the run of 256 records
        monkeypatch.setattr(index, "changed", lambda then, now: None)  # the check sees nothing
        os.truncate(paths[0], 200 * 316 + 100)  # record 200 keeps 100 of its 316 bytes
        with pytest.raises(RecordError) as caught:
            view[list(range(150, 250))]
    assert (caught.value.index, caught.value.offset) == (200, 200 * 316)
    assert caught.value.reason == "file ends inside the payload (88 of 300 bytes)"


def test_a_batch_from_a_warm_cache_is_sliced_from_maps_and_a_cut_file_is_named_first(
    tmp_path, monkeypatch
):
    """Warm batches make no read call; a file cut before a batch is named by the check that
    precedes every batch, before any slice of its map could touch a page past its end."""
    paths = write_sharded(tmp_path / "x", [bytes([i % 256]) * 300 for i in range(400)], 2)
    with RecordView(paths) as view:
        order = np.random.default_rng(2).permutation(len(view))
        expected = [view[int(i)] for i in order]  # single reads use pread
        monkeypatch.setattr(os, "pread", lambda *args: pytest.fail("a warm batch used pread"))
        assert view[order] == expected
        monkeypatch.undo()
        os.truncate(paths[1], 1_000)
        with pytest.raises(
            RecordError,
            match=r"x-00001-of-00002.tfrecord: record 0 at byte 0: the file is now 1000 bytes since",
        ):
            view[order]


def test_a_view_that_cannot_open_closes_the_files_it_had_opened(tmp_path):
    """A GZIP file second in the list: the first file, opened and mapped, is closed again."""
    plain = write_sharded(tmp_path / "plain", [b"x"] * 10, 1)[0]
    packed = tmp_path / "packed.tfrecord.gz"
    write_records(packed, [b"y"], compression="GZIP")
    gc.collect()  # what earlier tests left unclosed warns now, not inside the block below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="cannot be indexed"):
            RecordView([plain, packed])
        gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not [str(w.message) for w in leaks if str(tmp_path) in str(w.message)], leaks


def test_an_opening_view_shares_its_header_checks_among_its_files(tmp_path, monkeypatch):
    """4,096 headers in all: 100 shards of 1,000 records get 40 each, first and last among them,
    so a cold open reads about 4,000 headers instead of 100,000."""
    paths = write_sharded(tmp_path / "x", [b"r"] * 100_000, 100, index=True)
    checked = []
    real_check = index.check_records
    monkeypatch.setattr(
        index,
        "check_records",
        lambda path, b, s, picks, *rest: (
            checked.append(picks.tolist()) or real_check(path, b, s, picks, *rest)
        ),
    )
    with RecordView(paths):
        pass
    assert len(checked) == 100 and {len(picks) for picks in checked} == {40}
    assert all(picks[0] == 0 and picks[-1] == 999 for picks in checked)
