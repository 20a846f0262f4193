"""Files that appear whole or not at all: written under a temporary name beside the final one, then renamed
(`os.replace`, atomic within one file system). The temporary names carry the writer's process id, so that
the next write of the same file removes what a killed earlier one left, and never a live writer's file.
`write_bytes_atomically` for a file written in one go; tokens.arrays.PartialFile for a stream.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["OutputInUseError", "create_temporary_file", "locked_output", "remove_stale_partial_files",
           "remove_stale_partial_files_matching", "write_bytes_atomically"]


class OutputInUseError(OSError):
    """Another job is writing the same output (`locked_output`)."""


def create_temporary_file(final_path: Path, suffix: str = ".partial") -> tuple[int, Path]:
    """Create ``.NAME.<pid>.<random><suffix>`` beside `final_path`; returns (open file descriptor, its path).

    Beside it, so that the final rename cannot cross file systems; a dot name, so that it is not taken for
    a result; the process id, so that a later run can tell a dead run's leftovers from a live run's files
    (`remove_stale_partial_files`). Unlike `tempfile.mkstemp` (always 0600) the mode is the usual 0666
    less the umask, so the finished file has the permissions any other new file would have.
    """
    import secrets  # imported where needed: it imports hashlib (OpenSSL, ~4 MB resident), see registry.py

    while True:
        temp = final_path.with_name(f".{final_path.name}.{os.getpid()}.{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), temp
        except FileExistsError:
            continue


def remove_stale_partial_files(final_path: Path, suffix: str = ".partial") -> list[Path]:
    """Delete the temporary files of `final_path` (see `create_temporary_file`) whose process is gone.

    A killed run (SIGKILL, a crash, a power cut) cannot clean up after itself; the next run of the same
    output does. A file whose process is alive, or may be (another user's), is never touched; so is a
    name without a process id, which is not ours to judge. Returns the paths removed.
    """
    return remove_stale_partial_files_matching(final_path.parent, re.escape(final_path.name), suffix)


def remove_stale_partial_files_matching(folder: Path, name_regex: str, suffix: str = ".partial") -> list[Path]:
    """`remove_stale_partial_files` for every final name in `folder` that matches `name_regex` (whole)."""
    pattern = re.compile(r"\.(?:" + name_regex + r")\.(?P<pid>\d+)\.[0-9a-f]+" + re.escape(suffix) + r"\Z")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or _process_alive(int(match.group("pid"))):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except FileNotFoundError:   # another run cleaned it meanwhile
            pass
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)     # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True         # it exists but is not ours, or the number is odd: leave the file alone
    return True



def write_bytes_atomically(path: str | os.PathLike[str], contents: bytes) -> None:
    """Writes `contents` to `path` so that readers see the old file or the new one, never a part.

    The temporary file (`create_temporary_file`, suffix ``.partial`` plus the path's own suffix) sits in the
    same folder and gets ordinary file permissions; the leftovers of a killed earlier write of `path` are
    removed first.
    """
    path = Path(path)
    suffix = ".partial" + path.suffix
    remove_stale_partial_files(path, suffix)
    fd, temporary = create_temporary_file(path, suffix)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(contents)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def locked_output(prefix: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock of the output `prefix` (``.NAME.bytebpe-lock`` beside it) for the block, or raise
    `OutputInUseError` at once if another job holds it: two jobs writing one output would mix their files.

    An `fcntl.flock` on the lock file: the system drops it when its holder dies, so a killed job never
    leaves the output locked. The file is removed while still locked (then closed), and a lock taken on a
    file that is no longer the one at the path (removed between our open and our lock) is taken again, so
    two jobs can never both hold a lock for one path. Where there is no `fcntl` (Windows), no lock is taken.
    """
    try:
        import fcntl
    except ImportError:     # pragma: no cover - Windows
        yield
        return
    path = Path(prefix)
    lock_path = path.with_name(f".{path.name}.bytebpe-lock")
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = ""
            try:
                with open(lock_path, encoding="ascii") as file:
                    holder = f" (process {int(file.read().strip())})"
            except (OSError, ValueError):
                pass
            raise OutputInUseError(f"another bytebpe job is writing {os.fspath(path)!r}{holder}: wait for it to "
                                   "finish, or give this one another output") from None
        except BaseException:
            os.close(fd)
            raise
        try:
            if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)     # removed by its last holder after we opened it: take the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield
    finally:
        try:
            os.unlink(lock_path)
        except FileNotFoundError:
            pass
        os.close(fd)
