"""Token files written as a stream load with numpy (np.load, mmap, np.memmap) and appear only when complete."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from bytebpe.tokens.arrays import (
    NPY_HEADER_BYTES,
    TokenFileWriter,
    npy_header,
    remove_stale_partial_files,
    token_dtype,
)


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


# ==== temporary names, leftovers of dead runs, fsync ===============================================


def a_dead_pid() -> int:
    """The id of a process that has exited and been reaped (its number is free again)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_temporary_file_carries_the_process_id_in_its_name(tmp_path):
    with TokenFileWriter(tmp_path / "ids.npy", np.uint16) as writer:
        name = writer.temp_path.name
        assert name.startswith(f".ids.npy.{os.getpid()}.") and name.endswith(".partial")
        assert [p.name for p in tmp_path.iterdir()] == [name]


def test_only_the_leftovers_of_dead_processes_are_removed(tmp_path):
    final = tmp_path / "o.tokens.npy"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "dead": f".o.tokens.npy.{a_dead_pid()}.0123456789ab.partial",
            "live": f".o.tokens.npy.{live.pid}.0123456789ab.partial",
            "mine": f".o.tokens.npy.{os.getpid()}.0123456789ab.partial",
            "no pid": ".o.tokens.npy.0123456789ab.partial",          # an older bytebpe's name: not judged
            "other output": f".other.npy.{a_dead_pid()}.0123456789ab.partial",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"x")
        assert remove_stale_partial_files(final) == [tmp_path / names["dead"]]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            name for what, name in names.items() if what != "dead")
    finally:
        live.kill()
        live.wait()


def test_a_folder_that_does_not_exist_yet_has_no_leftovers(tmp_path):
    assert remove_stale_partial_files(tmp_path / "missing" / "o.bin") == []


@pytest.mark.parametrize("fsync", [False, True])
def test_fsync_flushes_the_file_before_the_rename_only_when_asked(tmp_path, monkeypatch, fsync):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b)))
    with TokenFileWriter(tmp_path / "ids.npy", np.uint16, fsync=fsync) as writer:
        writer.write(np.arange(5))
        writer.commit()
    assert events == (["fsync", "replace"] if fsync else ["replace"])
    assert np.load(tmp_path / "ids.npy").tolist() == [0, 1, 2, 3, 4]
