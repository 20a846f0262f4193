"""Documents out of dataset files: `.txt`, `.jsonl`, `.parquet`, each optionally gzip-compressed, or folders.

Every reader yields ``(text, line)`` pairs — `line` is the 1-based line (JSONL, `.txt` with ``lines=True``),
row (Parquet) or 1 (a whole `.txt` file) where the document is — and reports how far into the file (in bytes
as stored on disk, so compressed bytes for `.gz`) it has read, for progress bars. Reading is streaming: only
the current line (or Parquet record batch) is in memory.

Bad input — a line that is not JSON, a missing or non-string field, bytes that are not UTF-8 — raises
`BadDocumentError` naming the file and line, or, with ``skip_bad=True``, is passed to the `on_skip` callback
and left out.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "BadDocumentError",
    "SUFFIXES",
    "InputFile",
    "find_input_files",
]

# The formats a folder is searched for, and that a file may be named with.
SUFFIXES = (".txt", ".jsonl", ".parquet")
# Parquet rows read at a time: bounded memory for big files, few Python calls for small documents.
PARQUET_BATCH_ROWS = 1024


class BadDocumentError(ValueError):
    """A document could not be read: the message names the file and line (or row)."""

    def __init__(self, path: Path | str, line: int | None, reason: str, unit: str = "line") -> None:
        if line is None:
            where = f"{path}"
        elif unit == "line":
            where = f"{path}:{line}"        # the file:line form editors and terminals link to
        else:
            where = f"{path}: {unit} {line}"
        super().__init__(f"{where}: {reason}")
        self.path = str(path)
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class InputFile:
    """One input file and how to read it: format (by suffix), gzip or not, size on disk."""

    path: Path
    format: str         # "txt", "jsonl" or "parquet"
    gzipped: bool
    size: int           # bytes on disk (compressed size for .gz): the progress total

    @classmethod
    def of(cls, path: Path) -> InputFile:
        """The InputFile of `path`, checked: it exists and its name ends in a known suffix."""
        if not path.is_file():
            raise FileNotFoundError(f"input file not found: {path}")
        name = path.name.lower()
        gzipped = name.endswith(".gz")
        if gzipped:
            name = name[:-3]
        for suffix in SUFFIXES:
            if name.endswith(suffix):
                if suffix == ".parquet" and gzipped:
                    # Parquet needs random access and compresses its columns itself.
                    raise ValueError(f"{path}: .parquet.gz is not supported: Parquet files are compressed "
                                     f"inside; decompress it or write it with a Parquet codec")
                return cls(path, suffix[1:], gzipped, path.stat().st_size)
        raise ValueError(f"{path}: unknown input format: expected a name ending in "
                         f"{', '.join(SUFFIXES)} (optionally followed by .gz)")

    def documents(
        self,
        *,
        field: str = "text",
        lines: bool = False,
        skip_bad: bool = False,
        on_skip: Callable[[BadDocumentError], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> Iterator[tuple[str, int]]:
        """Yield ``(text, line)`` for each document, in file order.

        `on_progress(n)` is called with the number of bytes (as stored) read since its last call. A file
        that cannot be read at all (a damaged gzip stream, a missing Parquet column) raises whatever
        `skip_bad` says: skipping is for single documents.
        """
        if self.format == "parquet":
            reader: Iterator[tuple[str, int] | BadDocumentError] = _parquet_documents(
                self.path, field, self.size, on_progress)
        else:
            reader = _text_documents(self, field, lines, on_progress)
        line = 0
        try:
            # The readers yield a bad document's error instead of raising it, so that they can go on.
            for item in reader:
                if isinstance(item, BadDocumentError):
                    if not skip_bad:
                        raise item
                    if on_skip is not None:
                        on_skip(item)
                else:
                    line = item[1]
                    yield item
        except BadDocumentError:
            raise
        except (OSError, EOFError, zlib.error, ValueError) as error:     # ValueError: pyarrow's ArrowInvalid
            raise BadDocumentError(self.path, None, f"cannot read the file after line {line} "
                                   f"({type(error).__name__}: {error})") from error


def find_input_files(paths: Sequence[str | os.PathLike[str]]) -> list[InputFile]:
    """The input files named by `paths`, in order; a folder stands for its files (recursive, sorted by path).

    Everything is checked here, before any work: a missing path, a file of unknown format, or a folder
    without any input file raises (`FileNotFoundError` / `ValueError`).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[InputFile] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.is_file() and _has_input_suffix(p.name)),
                key=lambda p: p.relative_to(path).parts,
            )
            if not found:
                raise ValueError(f"{path}: folder holds no input files ({', '.join(SUFFIXES)}, optionally .gz)")
            files.extend(InputFile.of(p) for p in found)
        elif path.exists():
            files.append(InputFile.of(path))
        else:
            raise FileNotFoundError(f"input not found: {path}")
    if not files:
        raise ValueError("no input files given")
    return files


def _has_input_suffix(name: str) -> bool:
    name = name.lower().removesuffix(".gz")
    return not name.startswith(".") and name.endswith(SUFFIXES)


# ==== text formats =================================================================================


class _CountingReader(io.RawIOBase):
    """A raw file that counts the bytes read from it, so progress can follow the compressed position."""

    def __init__(self, raw: IO[bytes], on_progress: Callable[[int], None] | None) -> None:
        self._raw = raw
        self._on_progress = on_progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n and self._on_progress is not None:
            self._on_progress(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_bytes(file: InputFile, on_progress: Callable[[int], None] | None) -> IO[bytes]:
    raw = io.BufferedReader(_CountingReader(open(file.path, "rb", buffering=0), on_progress), 1 << 20)
    if file.gzipped:
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw  # type: ignore[return-value]


def _text_documents(
    file: InputFile, field: str, lines: bool, on_progress: Callable[[int], None] | None
) -> Iterator[tuple[str, int] | BadDocumentError]:
    with _open_bytes(file, on_progress) as stream:
        if file.format == "txt" and not lines:
            try:
                yield _decode(stream.read(), file.path, first_line=1), 1
            except BadDocumentError as error:
                yield error
            return
        for number, line in enumerate(stream, start=1):
            try:
                if file.format == "txt":
                    # One document per line, without its line terminator (\n or \r\n); an empty line is an
                    # empty document, so that document i is always line i + 1.
                    text = _decode(line.rstrip(b"\r\n") if line.endswith(b"\n") else line, file.path, number)
                else:
                    document = _jsonl_document(line, file.path, number, field)
                    if document is None:
                        continue
                    text = document
            except BadDocumentError as error:
                yield error
                continue
            yield text, number


def _decode(data: bytes, path: Path, first_line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = first_line + data.count(b"\n", 0, error.start)
        raise BadDocumentError(path, line, f"invalid UTF-8 (byte 0x{data[error.start]:02x})") from None


def _jsonl_document(line: bytes, path: Path, number: int, field: str) -> str | None:
    """The `field` of one JSONL line; None for a blank line (a trailing newline is not a document)."""
    if not line.strip():
        return None
    text = _decode(line, path, number)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadDocumentError(path, number, f"not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise BadDocumentError(path, number, f"expected a JSON object, got {type(record).__name__}")
    if field not in record:
        raise BadDocumentError(path, number, f"no field {field!r} (fields: {', '.join(map(repr, record))})")
    value = record[field]
    if not isinstance(value, str):
        raise BadDocumentError(path, number, f"field {field!r} is {type(value).__name__}, not a string")
    return value


# ==== Parquet ======================================================================================


def import_pyarrow_parquet() -> Any:
    """pyarrow.parquet, or an ImportError saying how to install it (it is the optional `parquet` extra)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("reading .parquet files needs pyarrow: pip install 'bytebpe[parquet]'") from None
    return pq


def _parquet_documents(
    path: Path, field: str, size: int, on_progress: Callable[[int], None] | None
) -> Iterator[tuple[str, int] | BadDocumentError]:
    pq = import_pyarrow_parquet()
    with pq.ParquetFile(path) as parquet:
        if field not in parquet.schema_arrow.names:
            raise BadDocumentError(path, None, f"no column {field!r} (columns: "
                                   f"{', '.join(map(repr, parquet.schema_arrow.names))})")
        total_rows = max(1, parquet.metadata.num_rows)
        row = reported = 0
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[field]):
            for value in batch.column(0).to_pylist():
                row += 1
                if isinstance(value, str):
                    yield value, row
                else:
                    kind = "null" if value is None else type(value).__name__
                    yield BadDocumentError(path, row, f"column {field!r} is {kind}, not a string", unit="row")
            # Progress in proportion to rows read: Parquet has no meaningful byte position.
            position = size * row // total_rows
            if on_progress is not None:
                on_progress(position - reported)
            reported = position
