"""helpers.arrays: .npy bytes keep dtype and shape, and bad bytes get a clear ValueError."""

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

from helpers.arrays import pack, unpack

DTYPES = [
    "|u1",
    "|i1",
    "<u2",
    ">u2",
    "<i4",
    ">i4",
    "<i8",
    ">u8",
    "<f2",
    ">f4",
    "<f8",
    ">f8",
    "<c8",
    ">c16",
    "|b1",
    "|S5",
    "<U3",
    ">U3",
    "<M8[s]",
    ">m8[ns]",
    "|V4",
]


def sample(dtype: str, shape=(3, 4, 5)) -> np.ndarray:
    """Varied, NaN-free values of ``dtype`` (so equality is meaningful)."""
    dtype = np.dtype(dtype)
    values = np.random.default_rng(7).integers(0, 120, size=shape)
    if dtype.kind == "b":
        return values % 2 == 1
    if dtype.kind in "SU":
        return np.char.add("v", values.astype("U3")).astype(dtype)
    if dtype.kind == "V":
        return values.astype("<u4").view(dtype)
    if dtype.kind in "Mm":
        unit = np.datetime_data(dtype)[0]
        return values.astype(f"{dtype.kind}8[{unit}]").astype(dtype)
    if dtype.kind == "c":
        return (values - 1j * values[::-1]).astype(dtype)
    if dtype.kind in "if":
        return (values - 60).astype(dtype)
    return values.astype(dtype)


LAYOUTS = {
    "contiguous": lambda a: a,
    "fortran": np.asfortranarray,
    "slice": lambda a: a[1:, ::2, 1:4],
    "transpose": lambda a: a.transpose(2, 0, 1),
    "reversed": lambda a: a[::-1, :, ::-2],
    "broadcast": lambda a: np.broadcast_to(a[:1], (4, 4, 5)),
}


def assert_same_array(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype.str == want.dtype.str
    assert got.shape == want.shape
    assert np.array_equal(got, want)


def npy_with_header(text: str, data: bytes = b"") -> bytes:
    """Version-1.0 .npy bytes with a hand-written header ``text`` (padded like NumPy's)."""
    header = text.encode("latin1")
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


# --- round trips --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pack_unpack_round_trip(dtype, layout):
    array = LAYOUTS[layout](sample(dtype))
    assert_same_array(unpack(pack(array)), array)


def test_pack_is_exactly_what_np_save_writes():
    array = np.arange(12, dtype=">i4").reshape(3, 4)
    buffer = io.BytesIO()
    np.save(buffer, array)
    assert pack(array) == buffer.getvalue()
    assert_same_array(np.load(io.BytesIO(pack(array))), array)


def test_header_carries_dtype_and_shape_as_text():
    blob = pack(np.zeros((300, 451, 3), dtype=np.uint8))
    assert blob.startswith(b"\x93NUMPY\x01\x00")
    assert b"'descr': '|u1'" in blob[:128] and b"'shape': (300, 451, 3)" in blob[:128]
    assert len(blob) == 128 + 300 * 451 * 3


def test_big_endian_dtype_is_kept():
    back = unpack(pack(np.array([1, 258], dtype=">u2")))
    assert back.dtype.str == ">u2" and back.tolist() == [1, 258]


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 0), ()])
@pytest.mark.parametrize("dtype", ["|u1", ">f8", "|b1", "<U4"])
def test_zero_size_and_zero_d_arrays_keep_their_shape(shape, dtype):
    array = np.zeros(shape, dtype=dtype)
    back = unpack(pack(array))
    assert back.ndim == array.ndim
    assert_same_array(back, array)


def test_pack_accepts_lists_and_scalars():
    assert unpack(pack([[1, 2], [3, 4]])).tolist() == [[1, 2], [3, 4]]
    assert unpack(pack(2.5)).item() == 2.5


def test_unpack_returns_a_writable_array_that_does_not_share_the_blob():
    blob = bytearray(pack(np.arange(4, dtype="|u1")))
    array = unpack(blob)
    blob[-1] = 42
    array[0] = 9
    assert array.flags.writeable and array.tolist() == [9, 1, 2, 3]


def test_unpack_accepts_bytearray_and_memoryview():
    blob = pack(np.arange(5, dtype=">i4"))
    for form in (bytearray(blob), memoryview(blob)):
        assert unpack(form).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("version", [(2, 0), (3, 0)])
def test_format_versions_2_and_3_read_back(version):
    name = "ω" if version == (3, 0) else "w"  # 3.0 exists for names beyond latin-1
    array = np.arange(6).astype([(name, "<i4"), ("b", ">f8")]).reshape(2, 3)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warns that old versions cannot read 2.0 or 3.0
        np.lib.format.write_array(buffer, array, version=version)
    assert buffer.getvalue()[6:8] == bytes(version)
    assert_same_array(unpack(buffer.getvalue()), array)


# --- refusals -----------------------------------------------------------------------


def test_object_arrays_are_refused_both_ways():
    objects = np.array([{"a": 1}, None])
    refusal = (  # the whole sentence: why, and what to store instead
        r"^cannot pack an array of dtype object: it holds Python objects, not values "
        r"\(store numbers, bools or fixed-width strings\)$"
    )
    with pytest.raises(ValueError, match=refusal):
        pack(objects)
    buffer = io.BytesIO()
    np.save(buffer, objects, allow_pickle=True)
    with pytest.raises(ValueError, match="pickled Python objects"):
        unpack(buffer.getvalue())


def test_non_npy_bytes_say_what_was_expected_and_found():
    with pytest.raises(
        ValueError,
        match=r"not \.npy bytes \(12 bytes\): expected the magic "
        r"b'\\x93NUMPY', found b'\\x89PNG\\r\\n'$",  # the first 6 bytes, as many as the magic
    ):
        unpack(b"\x89PNG\r\n\x1a\n" + bytes(4))
    raw = np.arange(6, dtype="|u1").tobytes()
    with pytest.raises(ValueError, match="not .npy bytes"):
        unpack(raw)


def test_a_zip_archive_is_not_loaded_as_npz():
    with pytest.raises(ValueError, match="not .npy bytes"):
        unpack(b"PK\x03\x04" + bytes(40))


@pytest.mark.parametrize("length", [0, 1, 5])
def test_bytes_that_end_inside_the_magic_are_truncated(length):
    with pytest.raises(ValueError, match=rf"truncated \.npy bytes \({length} bytes\).*magic"):
        unpack(b"\x93NUMPY"[:length])


@pytest.mark.parametrize("length", [9, 20])  # inside the header's length, inside its text
def test_bytes_that_end_inside_the_header_are_a_truncated_header(length):
    """The message starts with the word "truncated", NumPy's EOF reason after it."""
    blob = pack(np.arange(3, dtype="|u1"))[:length]
    with pytest.raises(ValueError, match=rf"^truncated \.npy header \({length} bytes\): EOF"):
        unpack(blob)


def test_every_truncation_is_reported_as_truncated():
    blob = pack(np.arange(6, dtype="<i2").reshape(2, 3))
    for length in range(len(blob)):
        with pytest.raises(ValueError, match="truncated"):
            unpack(blob[:length])


def test_truncated_data_names_the_header_and_the_counts():
    blob = pack(np.zeros((300, 451, 3), dtype=np.uint8))
    message = (
        r"truncated \.npy bytes \(405,928 bytes\): the header says dtype \|u1 and shape "
        r"\(300, 451, 3\), so 405,900 data bytes after byte 128; found 405,800"
    )
    with pytest.raises(ValueError, match=message):
        unpack(blob[:-100])


def test_extra_bytes_are_reported():
    with pytest.raises(
        ValueError, match="too long .npy bytes.*3 data bytes after byte 128; found 4"
    ):
        unpack(pack(np.arange(3, dtype="|u1")) + b"\x00")


def test_a_header_claiming_a_huge_shape_is_refused_before_allocating():
    blob = npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (10**6, 10**9), }")
    with pytest.raises(ValueError, match="unreadable .npy header"):
        unpack(blob)  # NumPy's parser refuses expressions; now a plain number:
    blob = npy_with_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000000), }"
    )
    with pytest.raises(
        ValueError, match=r"8,000,000,000,000,000 data bytes after byte 128; found 0"
    ):
        unpack(blob)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{'descr': 'zz?', 'fortran_order': False, 'shape': (1,), }", "descr"),
        ("{'descr': '<i4', 'shape': (1,), }", "keys"),
        ("not a dictionary", "unreadable"),
        ("{'descr': '<i4', 'fortran_order': False, 'shape': (1,", "unreadable"),
    ],
)
def test_bad_headers_are_unreadable(text, message):
    with pytest.raises(ValueError, match=message):
        unpack(npy_with_header(text, bytes(4)))


def test_unknown_format_version_is_reported():
    blob = bytearray(pack(np.arange(3, dtype="|u1")))
    blob[6] = 7
    with pytest.raises(ValueError, match=r"unreadable .npy header.*version \(7, 0\)"):
        unpack(bytes(blob))


def test_any_single_damaged_header_byte_gives_a_value_error_or_the_same_array():
    """Never a silent wrong answer: a damaged header byte is refused with a ValueError (anything
    else, TokenError, SyntaxError, MemoryError..., fails the test) or it changed nothing that
    matters (a space of the padding for a newline, say) and the array comes back whole."""
    original = np.arange(6, dtype=">i2").reshape(2, 3)
    blob = pack(original)
    returned = []  # (position, value) of each damage that gave an array
    for position in range(8, 128):  # after the magic and version, up to the data
        for value in (0, 10, 32, 40, 41, 44, 48, 57, 123, 125, 200, 255):
            damaged = blob[:position] + bytes([value]) + blob[position + 1 :]
            try:
                array = unpack(damaged)
            except ValueError:
                continue
            returned.append((position, value))
            assert (array.dtype, array.shape) == (original.dtype, original.shape), (position, value)
            np.testing.assert_array_equal(array, original, err_msg=f"byte {position} = {value}")
    assert 0 < len(returned) < 120 * 12 // 4, returned  # mostly refused, some harmless


def test_unpack_wants_bytes():
    with pytest.raises(TypeError, match="expected .npy bytes, got str"):
        unpack("\x93NUMPY")


def test_importing_arrays_imports_no_tensorflow():
    code = "import sys, helpers.arrays; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
