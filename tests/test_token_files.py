"""Token files written as a stream load with numpy (np.load, mmap, np.memmap) and appear only when complete."""
from __future__ import annotations

import os

import numpy as np
import pytest

from bytebpe.token_files import NPY_HEADER_BYTES, TokenFileWriter, npy_header, token_dtype


@pytest.mark.parametrize("length", [0, 1, 65_535, 2**32 + 7, 10**19])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.int64])
def test_the_npy_header_has_a_fixed_size_and_numpy_reads_the_shape_and_dtype_back(tmp_path, dtype, length):
    header = npy_header(dtype, length)
    assert len(header) == NPY_HEADER_BYTES and NPY_HEADER_BYTES % 64 == 0
    path = tmp_path / "h.npy"
    path.write_bytes(header)
    with open(path, "rb") as file:
        assert np.lib.format.read_magic(file) == (1, 0)
        shape, fortran_order, read_dtype = np.lib.format.read_array_header_1_0(file)
        assert file.tell() == NPY_HEADER_BYTES
    assert (shape, fortran_order, read_dtype) == ((length,), False, np.dtype(dtype))


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.int64])
def test_chunks_written_one_after_another_load_as_one_array_also_memory_mapped(tmp_path, dtype):
    rng = np.random.default_rng(0)
    chunks = [rng.integers(0, np.iinfo(dtype).max, size=n, dtype=dtype) for n in (0, 1, 1000, 77, 0, 4096)]
    path = tmp_path / "ids.npy"
    with TokenFileWriter(path, dtype) as writer:
        for chunk in chunks:
            writer.write(chunk)
        assert not path.exists()            # not before commit
        writer.commit()
    expected = np.concatenate(chunks)
    loaded = np.load(path)
    assert loaded.dtype == np.dtype(dtype) and np.array_equal(loaded, expected)
    mapped = np.load(path, mmap_mode="r")
    assert mapped.offset == NPY_HEADER_BYTES and np.array_equal(mapped, expected)


def test_an_empty_npy_file_loads_as_an_empty_array(tmp_path):
    with TokenFileWriter(tmp_path / "empty.npy", np.uint32) as writer:
        writer.commit()
    loaded = np.load(tmp_path / "empty.npy", mmap_mode="r")
    assert loaded.shape == (0,) and loaded.dtype == np.uint32


def test_a_bin_file_is_the_raw_little_endian_items_for_np_memmap(tmp_path):
    ids = np.arange(50_000, 50_300, dtype=np.uint16)
    with TokenFileWriter(tmp_path / "train.bin", np.uint16, "bin") as writer:
        writer.write(ids[:100])
        writer.write(ids[100:])
        writer.commit()
    assert (tmp_path / "train.bin").read_bytes() == ids.astype("<u2").tobytes()
    assert np.array_equal(np.memmap(tmp_path / "train.bin", dtype=np.uint16, mode="r"), ids)


def test_leaving_without_commit_or_with_an_error_leaves_no_file_at_all(tmp_path):
    with TokenFileWriter(tmp_path / "a.npy", np.uint16) as writer:
        writer.write(np.arange(10))
    with pytest.raises(KeyboardInterrupt):
        with TokenFileWriter(tmp_path / "b.npy", np.uint16) as writer:
            writer.write(np.arange(10))
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_replaced_only_at_commit(tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.array([1, 2, 3], np.uint16))
    with TokenFileWriter(path, np.uint16) as writer:
        writer.write(np.array([9, 9], np.uint16))
        assert np.array_equal(np.load(path), [1, 2, 3])
        writer.commit()
    assert np.array_equal(np.load(path), [9, 9])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.npy"]


def test_a_finished_file_gets_the_usual_permissions_not_those_of_a_private_temporary(tmp_path):
    old_umask = os.umask(0o022)
    try:
        with TokenFileWriter(tmp_path / "ids.npy", np.uint16) as writer:
            writer.commit()
    finally:
        os.umask(old_umask)
    assert (tmp_path / "ids.npy").stat().st_mode & 0o777 == 0o644


def test_a_two_dimensional_array_is_refused(tmp_path):
    with TokenFileWriter(tmp_path / "ids.npy", np.uint16) as writer, pytest.raises(ValueError, match="1-D"):
        writer.write(np.zeros((2, 2)))


@pytest.mark.parametrize(("max_token_value", "dtype"),
                         [(255, np.uint16), (65_535, np.uint16), (65_536, np.uint32), (201_087, np.uint32)])
def test_ids_are_uint16_when_the_vocabulary_fits_else_uint32(max_token_value, dtype):
    assert token_dtype(max_token_value) == np.dtype(dtype)
