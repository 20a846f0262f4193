"""Token arrays on disk, written as a stream: `.npy` files whose length is only known at the end, raw `.bin`.

A `.npy` file is a header (magic, version, a Python-literal dict with dtype and shape, padded with spaces to
a multiple of 64 bytes) followed by the raw array. The writer reserves a header of fixed size
(`NPY_HEADER_BYTES`), streams the data after it, and at the end rewrites the header with the final shape,
padded to exactly the same size — so the data is written once and never copied. Every file is written under
a temporary name in the destination folder and only renamed to its final name (`os.replace`, atomic on one
file system) once complete: a failed or interrupted run never leaves a file that looks finished.
"""
from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ..atomic_write import (  # re-exported: writer.py and the tests import them from here
    create_temporary_file,
    remove_stale_partial_files,
    remove_stale_partial_files_matching,
)

__all__ = [
    "NPY_HEADER_BYTES",
    "PartialFile",
    "TokenFileWriter",
    "create_temporary_file",
    "fsync_folder",
    "npy_header",
    "remove_stale_partial_files",
    "remove_stale_partial_files_matching",
    "token_dtype",
]

# The whole reserved header: magic (6) + version (2) + header length (2) + the dict, padded. 128 bytes keep
# the data 64-byte aligned (as numpy's own writer does) and leave room for any 1-D shape: the longest
# possible dict text is ~80 characters (a 20-digit length).
NPY_HEADER_BYTES = 128
_NPY_MAGIC = b"\x93NUMPY\x01\x00"   # format version 1.0: a 2-byte little-endian header length follows

_Partial = TypeVar("_Partial", bound="PartialFile")


def token_dtype(max_token_value: int) -> np.dtype:
    """uint16 when every id fits (vocabularies below 65,536 ids: gpt2, r50k, p50k), else uint32."""
    return np.dtype(np.uint16) if max_token_value < 2**16 else np.dtype(np.uint32)


def npy_header(dtype: npt.DTypeLike, length: int) -> bytes:
    """The `.npy` v1.0 header of a 1-D little-endian array of `length` items, exactly NPY_HEADER_BYTES long.

    The dict text is what numpy itself writes (`np.lib.format.header_data_from_array_1_0`), so any reader
    of the format accepts it.
    """
    dtype = np.dtype(dtype).newbyteorder("<")
    text = "{'descr': %r, 'fortran_order': False, 'shape': (%d,), }" % (np.lib.format.dtype_to_descr(dtype),
                                                                         length)
    room = NPY_HEADER_BYTES - len(_NPY_MAGIC) - 2
    if len(text) + 1 > room:
        raise ValueError(f"a .npy header for shape ({length},) does not fit in {NPY_HEADER_BYTES} bytes")
    padded = text.ljust(room - 1).encode("latin1") + b"\n"
    return _NPY_MAGIC + room.to_bytes(2, "little") + padded


def fsync_folder(folder: Path) -> None:
    """Make the renames inside `folder` durable (POSIX: the directory entry lives in the folder)."""
    if os.name != "posix":  # Windows cannot open a folder; NTFS journals renames itself
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PartialFile:
    """A file written under a temporary name beside its final one; `commit` gives it the final name.

    Use as a context manager: leaving the block without `commit` (an error, Ctrl-C, SIGTERM) deletes the
    temporary file, and nothing is left under the final name. With ``fsync=True`` the data reaches the
    disk before the rename, so that a power cut after it cannot leave a complete-looking empty file.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        fd, self.temp_path = create_temporary_file(self.path)
        self._file = os.fdopen(fd, "wb")

    def write_bytes(self, data: bytes | memoryview) -> None:
        self._file.write(data)

    def _finish(self) -> None:
        """What a subclass writes last, just before the file is closed and renamed."""

    def commit(self) -> Path:
        """Finish the file and rename it to its final name; returns that path."""
        self._finish()
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.temp_path, self.path)
        return self.path

    def discard(self) -> None:
        """Close and delete the temporary file (safe to call more than once, and after `commit`)."""
        if not self._file.closed:
            self._file.close()
        try:
            os.unlink(self.temp_path)
        except FileNotFoundError:
            pass

    def __enter__(self: _Partial) -> _Partial:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None or not self._file.closed:
            self.discard()


class TokenFileWriter(PartialFile):
    """Appends 1-D arrays of one dtype to a temporary file; `commit` gives it its final name.

    ``kind="npy"`` writes a `.npy` file (header reserved now, finalized in `commit`); ``kind="bin"`` writes
    the raw little-endian items only (nanoGPT's `train.bin`: read back with ``np.memmap(path, dtype)``).
    """

    def __init__(self, path: str | os.PathLike[str], dtype: npt.DTypeLike,
                 kind: Literal["npy", "bin"] = "npy", *, fsync: bool = False) -> None:
        if kind not in ("npy", "bin"):
            raise ValueError(f"kind must be 'npy' or 'bin', got {kind!r}")
        super().__init__(path, fsync=fsync)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.kind = kind
        self.length = 0     # items written so far
        if kind == "npy":
            self._file.write(npy_header(self.dtype, 0))

    def write(self, items: npt.ArrayLike) -> None:
        """Append `items` (converted to this file's dtype; the caller guarantees they fit)."""
        array = np.ascontiguousarray(items, dtype=self.dtype)
        if array.ndim != 1:
            raise ValueError(f"expected a 1-D array, got shape {array.shape}")
        self._file.write(memoryview(array).cast("B"))
        self.length += len(array)

    def _finish(self) -> None:
        if self.kind == "npy":
            self._file.seek(0)
            self._file.write(npy_header(self.dtype, self.length))
