"""Documents out of dataset files — the one reader of `encode`, `count`, `verify` and `train`, in the library
and on the command line alike.

Formats, by suffix (case-insensitive): `.txt` (the whole file is one document; ``lines=True``: one per line),
`.jsonl` / `.ndjson` (one JSON object a line, its `field`), `.json` (a top-level array of objects, their
`field`, or of strings), `.parquet` (the `field` column); the text formats may be compressed (`.gz`, `.bz2`,
`.xz` from the standard library, `.zst` with the `zstd` extra). ``-`` is standard input (`.txt` unless
`stdin_format` says otherwise). A UTF-8 byte order mark at the start of a text file is dropped. A folder
stands for its files, recursively, sorted by path; hidden names (starting with ".") are never read, and a
file of any other kind is an error unless ``ignore_unknown`` (then it is listed in `InputFiles.ignored`).

Every reader yields ``(text, line)`` pairs — `line` is the 1-based line (row for Parquet) where the document
starts — and reports how far into the file (in bytes as stored on disk) it has read, for progress bars.
Reading streams: only the current line, Parquet record batch, or `.txt` document is in memory (a `.json`
array is read whole: JSON has no line structure to stream by).

Bad input — a line that is not JSON, a missing or non-string field — raises `BadDocumentError` naming the
file and line, or, with ``skip_bad=True``, is passed to `on_skip` and left out. Bytes that are not UTF-8 are
decided by `errors`: "strict" treats them so too; "replace" reads each bad sequence as U+FFFD and reports
the document to `on_replace`. A `.txt` document is never skipped for a bad byte: that would drop a whole
file for one byte (use ``errors="replace"``).

``cut=True`` (training) reads a `.txt` as documents of about `CUT_CHARS` characters, cut only where no
pre-token of the known patterns crosses, so memory stays bounded and pre-token counts equal those of the
whole file. Encoding never cuts: a `.txt` is one document there, and its ids are those of the whole text.
"""
from __future__ import annotations

import bz2
import codecs
import functools
import gzip
import io
import json
import lzma
import operator
import os
import re
import sys
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import IO, Any

from ._textio import read_ascii
from .progress import counted

__all__ = [
    "BadDocumentError",
    "InputChangedError",
    "COMPRESSIONS",
    "FORMATS",
    "InputFile",
    "InputFiles",
    "PathLike",
    "ReadOptions",
    "ReadTally",
    "STDIN",
    "check_read_options",
    "find_input_files",
    "read_texts",
]

# Suffix -> format.
# An input or output path as the API takes it.
PathLike = str | os.PathLike[str]

FORMATS = {".txt": "txt", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet"}
# Compression suffix -> codec name; Parquet takes none (it compresses its columns itself).
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}
# The input name that stands for standard input.
STDIN = "-"
STDIN_FORMATS = ("txt", "jsonl", "json")
ERRORS = ("strict", "replace")


@dataclass(frozen=True)
class ReadOptions:
    """How the documents of input files are read: the one definition of these options and their defaults,
    taken as ``read=`` by every entry point that reads files (`encode_files`, `count_files`,
    `count_pieces_from_files`, `train_from_files`, `bytebpe.ray.encode_input_files`) and built once by the
    command line from its options (--field, --lines, --skip-bad, --errors, --ignore-unknown, --stdin-format).
    The entry points also take each option as a keyword of its own; one call gives one or the other."""

    field: str = "text"             # the JSON field / Parquet column of the text
    lines: bool = False             # .txt files: each line is a document
    skip_bad: bool = False          # skip (and count) bad documents instead of stopping at the first
    errors: str = "strict"          # bytes that are not UTF-8: "strict" stops naming file:line, "replace" U+FFFD
    ignore_unknown: bool = False    # skip (and count) files of other kinds inside folders
    stdin_format: str = "txt"       # what - (standard input) holds

    def __post_init__(self) -> None:
        if not isinstance(self.field, str):
            raise TypeError(f"field must be a str, got {type(self.field).__name__}")
        for name in ("lines", "skip_bad", "ignore_unknown"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        if self.errors not in ERRORS:
            raise ValueError(f"errors must be one of {', '.join(ERRORS)}, got {self.errors!r}")
        if self.stdin_format not in STDIN_FORMATS:
            raise ValueError(f"stdin_format must be one of {', '.join(STDIN_FORMATS)}, got {self.stdin_format!r}")

    def keywords(self) -> dict[str, Any]:
        """The options as the keyword arguments of the entry points."""
        return {name: getattr(self, name) for name in _READ_OPTION_NAMES}

    @classmethod
    def resolve(cls, read: ReadOptions | None, **given: Any) -> ReadOptions:
        """An entry point's options: `read`, or its keywords `given` (their defaults included), not both."""
        if read is None:
            return cls(**given)
        if not isinstance(read, ReadOptions):
            raise TypeError(f"read must be a ReadOptions, got {type(read).__name__}")
        changed = [name for name, value in given.items() if value != getattr(_DEFAULT_READ, name)]
        if changed:
            raise TypeError(f"give the reading options as read=ReadOptions(...) or as keywords, not both "
                            f"({changed[0]}= was given too)")
        return read


_READ_OPTION_NAMES = ("field", "lines", "skip_bad", "errors", "ignore_unknown", "stdin_format")
_DEFAULT_READ = ReadOptions()
# Parquet rows read at a time: bounded memory for big files, few Python calls for small documents.
PARQUET_BATCH_ROWS = 1024
# With cut=True, a `.txt` is read in documents of about this many characters (the cut needs a line break, so
# a single longer line is one longer document). 1 Mi characters: the trainer counts texts in batches of
# 64 Ki characters, so larger documents only cost memory.
CUT_CHARS = 1 << 20
BOM = b"\xef\xbb\xbf"


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
        self.unit = unit

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole (not as its message only), so that it crosses process boundaries (multiprocessing,
        # Ray workers) as itself.
        return type(self), (self.path, self.line, self.reason, self.unit)


class InputChangedError(OSError):
    """An input file changed while a job read it: what was read is not the file, so nothing is written."""


def check_inputs_unchanged(files: Sequence[InputFile]) -> None:
    """Raise InputChangedError if any of `files` differs now from when it was found."""
    for file in files:
        change = file.change_since_found()
        if change is not None:
            raise InputChangedError(f"{file.label} changed while it was read ({change}): the output would not be "
                                    "the file's tokens, so none was written; run again once the file is complete")


@dataclass(frozen=True)
class InputFile:
    """One input and how to read it: format, compression, size on disk (0 for standard input)."""

    path: Path
    format: str                 # "txt", "jsonl", "json" or "parquet"
    compression: str | None     # a value of COMPRESSIONS, or None
    size: int                   # bytes on disk (compressed size): the progress total
    mtime_ns: int = 0           # its modification time when found (0 for standard input)

    def change_since_found(self) -> str | None:
        """How the file differs now from when it was found (size or modification time), or None."""
        if self.is_stdin:
            return None
        try:
            now = self.path.stat()
        except OSError as error:
            return f"it can no longer be read ({error.strerror})"
        if now.st_size != self.size:
            return f"its size went from {self.size:,} to {now.st_size:,} bytes"
        if now.st_mtime_ns != self.mtime_ns:
            return "it was modified"
        return None

    @property
    def gzipped(self) -> bool:
        return self.compression == "gzip"

    @property
    def is_stdin(self) -> bool:
        return str(self.path) == STDIN

    @property
    def label(self) -> str:
        """How messages name it."""
        return "<stdin>" if self.is_stdin else str(self.path)

    @classmethod
    def of(cls, path: Path) -> InputFile:
        """The InputFile of `path`, checked: it exists and its name ends in a known suffix."""
        if not path.is_file():
            raise FileNotFoundError(f"input file not found: {path}")
        kind = _kind_of(path.name)
        if kind is None:
            raise ValueError(f"{path}: unknown input format: expected a name ending in {', '.join(FORMATS)} "
                             f"(the text formats optionally followed by {', '.join(COMPRESSIONS)})")
        format, compression = kind
        if format == "parquet" and compression:
            # Parquet needs random access and compresses its columns itself.
            raise ValueError(f"{path}: a compressed .parquet is not supported: Parquet files are compressed "
                             f"inside; decompress it or write it with a Parquet codec")
        if compression == "zstd":
            import_zstandard()
        status = path.stat()
        return cls(path, format, compression, status.st_size, status.st_mtime_ns)

    @classmethod
    def stdin(cls, format: str = "txt") -> InputFile:
        if format not in STDIN_FORMATS:
            raise ValueError(f"stdin format must be one of {', '.join(STDIN_FORMATS)}, got {format!r}")
        return cls(Path(STDIN), format, None, 0)

    def documents(
        self,
        *,
        field: str = "text",
        lines: bool = False,
        skip_bad: bool = False,
        errors: str = "strict",
        cut: bool = False,
        on_skip: Callable[[BadDocumentError], None] | None = None,
        on_replace: Callable[[BadDocumentError, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        utf8: bool = False,
    ) -> Iterator[tuple[str | bytes, int]]:
        """Yield ``(text, line)`` for each document, in file order.

        With `cut` and `utf8`, the documents of a `.txt` are its UTF-8 bytes, checked (or, with
        ``errors="replace"``, repaired) as the text would be, for counters that scan bytes (training).

        `on_replace(notice, n_bytes)` is called for a document in which ``errors="replace"`` replaced
        `n_bytes` bad bytes (the notice names the line of the first). `on_progress(n)` is called with the
        number of bytes (as stored) read since its last call. A file that cannot be read at all (a damaged
        compressed stream, a missing Parquet column, a `.json` that is not an array) raises whatever
        `skip_bad` says: skipping is for single documents.
        """
        if errors not in ERRORS:
            raise ValueError(f"errors must be one of {', '.join(ERRORS)}, got {errors!r}")
        decoder = _Decoder(self.label, errors, on_replace)
        if self.format == "parquet":
            reader: Iterator[tuple[str, int] | BadDocumentError] = _parquet_documents(
                self.path, field, self.size, on_progress)
        elif self.format == "json":
            reader = _json_documents(self, field, decoder, on_progress)
        else:
            reader = _text_documents(self, field, lines, cut, decoder, on_progress, utf8)
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
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as error:   # ValueError: ArrowInvalid
            raise BadDocumentError(self.label, None, f"cannot read the file after line {line} "
                                   f"({type(error).__name__}: {error})") from error


class InputFiles(list):  # type: ignore[type-arg]
    """The input files of a job, in order, and the files of unknown kind that folders held and that
    ``ignore_unknown`` left out (`ignored`)."""

    def __init__(self, files: Sequence[InputFile] = (), ignored: Sequence[Path] = ()) -> None:
        super().__init__(files)
        self.ignored: list[Path] = list(ignored)


def find_input_files(
    paths: PathLike | Sequence[PathLike],
    *,
    ignore_unknown: bool = False,
    stdin_format: str = "txt",
) -> InputFiles:
    """The input files named by `paths`, in order; a folder stands for its files (recursive, sorted by path).

    Everything is checked here, before any work: a missing path, a file of unknown format (given by name, or
    in a folder unless `ignore_unknown`), a folder without any input file, or ``-`` twice raise
    (`FileNotFoundError` / `ValueError`).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = InputFiles()
    for raw in paths:
        if os.fspath(raw) == STDIN:
            if any(file.is_stdin for file in files):
                raise ValueError("standard input (-) is given twice")
            files.append(InputFile.stdin(stdin_format))
            continue
        path = Path(raw)
        if path.is_dir():
            found, unknown, notes = _folder_files(path)
            if unknown and not ignore_unknown:
                shown = ", ".join(str(p) for p in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
                raise ValueError(f"{path}: folder holds {len(unknown)} file(s) of unknown format ({shown}): "
                                 f"inputs end in {', '.join(FORMATS)} (optionally {', '.join(COMPRESSIONS)}); "
                                 f"give --ignore-unknown (ignore_unknown=True) to skip them")
            if not found:
                raise ValueError(f"{path}: folder holds no input files ({', '.join(FORMATS)}, optionally "
                                 f"compressed)")
            files.extend(InputFile.of(p) for p in found)
            files.ignored.extend(unknown + notes)
        elif path.exists():
            files.append(InputFile.of(path))
        else:
            raise FileNotFoundError(f"input not found: {path}")
    if not files:
        raise ValueError("no input files given")
    return files


def check_read_options(files: Sequence[InputFile], *, lines: bool = False, errors: str = "strict") -> None:
    """Options that contradict the inputs are errors, not silently ignored."""
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    if lines:
        other = [file for file in files if file.format != "txt"]
        if other:
            raise ValueError(f"--lines (lines=True) applies to .txt files only, and {other[0].label} is "
                             f"{other[0].format}: its documents are its records already")
    if any(file.format == "parquet" for file in files):
        import_pyarrow_parquet()


def _kind_of(name: str) -> tuple[str, str | None] | None:
    """(format, compression) by the name's suffixes, or None for a name of unknown kind."""
    name = name.lower()
    compression = None
    for suffix, codec in COMPRESSIONS.items():
        if name.endswith(suffix):
            name, compression = name[: -len(suffix)], codec
            break
    for suffix, format in FORMATS.items():
        if name.endswith(suffix):
            return format, compression
    return None


# Files that describe a dataset beside its data (README.md, PROVENANCE.md, LICENSE, SHA256SUMS): a folder's
# inputs may sit next to them; they are not read, and a job reports them among the files it ignored.
_NOTES_SUFFIXES = (".md", ".rst", ".sha256", ".md5")
_NOTES_NAMES = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "SHA256SUMS", "MD5SUMS", "README")


def _is_notes(name: str) -> bool:
    return name.lower().endswith(_NOTES_SUFFIXES) or name.split(".")[0].upper() in _NOTES_NAMES


def _folder_files(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(input files, files of unknown kind, files of notes) under `folder`, sorted by path; hidden names are
    passed over."""
    found: list[Path] = []
    unknown: list[Path] = []
    notes: list[Path] = []
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).parts):
        if any(part.startswith(".") for part in path.relative_to(folder).parts) or not path.is_file():
            continue
        if _kind_of(path.name) is not None:
            found.append(path)
        else:
            (notes if _is_notes(path.name) else unknown).append(path)
    return found, unknown, notes


# ==== all the documents of a job ==================================================================


@dataclass
class ReadTally:
    """What `read_texts` left out or changed: bad documents skipped, documents with bytes replaced."""

    documents: int = 0
    skipped: int = 0
    replaced: int = 0               # documents in which bad bytes were replaced
    replaced_bytes: int = 0
    examples: list[str] = dataclass_field(default_factory=list)   # "file:line: reason" of the first few
    max_examples: int = 10

    def skip(self, error: BadDocumentError) -> None:
        self.skipped += 1
        self._example(str(error))

    def replace(self, notice: BadDocumentError, n_bytes: int) -> None:
        self.replaced += 1
        self.replaced_bytes += n_bytes
        self._example(str(notice))

    def _example(self, text: str) -> None:
        if len(self.examples) < self.max_examples:
            self.examples.append(text)

    def describe(self) -> str:
        """One line per kind of loss, or "" when nothing was skipped or replaced."""
        lines = []
        if self.skipped:
            lines.append(f"skipped {self.skipped:,} bad documents")
        if self.replaced:
            lines.append(f"replaced {self.replaced_bytes:,} invalid UTF-8 bytes with U+FFFD in "
                         f"{counted(self.replaced, 'document')}")
        if lines and self.examples:
            lines.append("first ones:")
            lines.extend(f"  {example}" for example in self.examples)
        return "\n".join(lines)


def read_texts(
    files: Sequence[InputFile],
    tally: ReadTally,
    *,
    field: str = "text",
    lines: bool = False,
    skip_bad: bool = False,
    errors: str = "strict",
    cut: bool = False,
    on_progress: Callable[[int], None] | None = None,
    utf8: bool = False,
) -> Iterator[str | bytes]:
    """The texts of every document of `files` in turn, counting into `tally` what was skipped or replaced;
    `on_progress` and `utf8` as in `InputFile.documents` (bytes as stored, over all the files)."""
    for file in files:
        for text, _line in file.documents(field=field, lines=lines, skip_bad=skip_bad, errors=errors, cut=cut,
                                          on_skip=tally.skip, on_replace=tally.replace, on_progress=on_progress,
                                          utf8=utf8):
            tally.documents += 1
            yield text


# ==== bytes -> text =================================================================================


_replaced = threading.local()


def _count_and_replace(error: UnicodeError) -> tuple[str, int]:
    # What the "replace" handler does (one U+FFFD per maximal bad sequence), counting the bytes.
    assert isinstance(error, UnicodeDecodeError)
    _replaced.count = getattr(_replaced, "count", 0) + error.end - error.start
    return "\ufffd", error.end


codecs.register_error("bytebpe.count_and_replace", _count_and_replace)


class _Decoder:
    """UTF-8 bytes -> str as `errors` says, naming the file and line of the first bad byte."""

    def __init__(self, label: str, errors: str, on_replace: Callable[[BadDocumentError, int], None] | None):
        self.label = label
        self.errors = errors
        self.on_replace = on_replace

    def __call__(self, data: bytes, first_line: int) -> str:
        """Raises BadDocumentError for bad UTF-8 when strict."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            bad = error.start
        line = first_line + data.count(b"\n", 0, bad)
        reason = f"invalid UTF-8 (byte 0x{data[bad]:02x})"
        if self.errors == "strict":
            raise BadDocumentError(self.label, line, reason)
        _replaced.count = 0
        text = data.decode("utf-8", "bytebpe.count_and_replace")
        if self.on_replace is not None:
            self.on_replace(BadDocumentError(self.label, line, f"{reason}: {_replaced.count:,} bad bytes in the "
                                             f"document replaced with U+FFFD"), _replaced.count)
        return text


# ==== text formats =================================================================================


class _CountingReader(io.RawIOBase):
    """A raw file that counts the bytes read from it, so progress can follow the compressed position."""

    def __init__(self, raw: IO[bytes], on_progress: Callable[[int], None] | None, close: bool = True) -> None:
        self._raw = raw
        self._on_progress = on_progress
        self._close_raw = close

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n and self._on_progress is not None:
            self._on_progress(n)
        return n

    def close(self) -> None:
        if self._close_raw:
            self._raw.close()
        super().close()


def import_zstandard() -> Any:
    """zstandard, or an ImportError saying how to install it (it is the optional `zstd` extra)."""
    try:
        import zstandard
    except ImportError:
        raise ImportError("reading .zst files needs zstandard: pip install 'bytebpe[zstd]'") from None
    return zstandard


def _open_bytes(file: InputFile, on_progress: Callable[[int], None] | None) -> IO[bytes]:
    if file.is_stdin:
        if sys.stdin is None:   # the program was started with stdin closed (`bytebpe encode - <&-`)
            raise OSError("'-' reads standard input, which is closed")
        source: IO[bytes] = sys.stdin.buffer
        raw = io.BufferedReader(_CountingReader(source, on_progress, close=False), 1 << 20)
    else:
        raw = io.BufferedReader(_CountingReader(open(file.path, "rb", buffering=0), on_progress), 1 << 20)
    if file.compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if file.compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if file.compression == "xz":
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    if file.compression == "zstd":
        stream = import_zstandard().ZstdDecompressor().stream_reader(raw, closefd=True)
        return io.BufferedReader(stream, 1 << 20)  # type: ignore[arg-type, return-value]
    return raw  # type: ignore[return-value]


def _text_documents(
    file: InputFile, field: str, lines: bool, cut: bool, decode: _Decoder,
    on_progress: Callable[[int], None] | None, utf8: bool = False,
) -> Iterator[tuple[str | bytes, int] | BadDocumentError]:
    if file.format == "txt" and not lines and not cut and file.compression is None and not file.is_stdin:
        text = _read_ascii_file(file.path, on_progress)
        if text is not None:
            yield text, 1
            return
    with _open_bytes(file, on_progress) as stream:
        if file.format == "txt" and not lines:
            if cut:
                yield from _cut_documents(stream, decode, utf8)
                return
            try:
                yield decode(_without_bom(stream.read()), 1), 1
            except BadDocumentError as error:
                # Not a document to skip: one bad byte would drop the whole file (errors="replace" keeps it).
                raise BadDocumentError(error.path, error.line, error.reason + " (errors='replace', "
                                       "--errors replace on the command line, reads it as U+FFFD)") from None
            return
        for number, line in enumerate(stream, start=1):
            if number == 1:
                line = _without_bom(line)
            try:
                if file.format == "txt":
                    # One document per line, without its line terminator (\n or \r\n); an empty line is an
                    # empty document, so that document i is always line i + 1.
                    text = decode(line.rstrip(b"\r\n") if line.endswith(b"\n") else line, number)
                else:
                    document = _jsonl_document(line, decode, number, field)
                    if document is None:
                        continue
                    text = document
            except BadDocumentError as error:
                yield error
                continue
            yield text, number


def _read_ascii_file(path: Path, on_progress: Callable[[int], None] | None) -> str | None:
    """The whole file as a str read in place when it is all ASCII (no bytes object beside it, as a read and a
    decode would have), else None."""
    with open(path, "rb", buffering=0) as raw:
        size = os.fstat(raw.fileno()).st_size
        text = read_ascii(raw, size) if size else ""
        if text is not None and raw.read(1):
            text = None     # the file grew meanwhile: read it the ordinary way
    if text is not None and on_progress is not None:
        on_progress(size)
    return text


def _without_bom(data: bytes) -> bytes:
    return data[len(BOM):] if data.startswith(BOM) else data


def _cut_documents(stream: IO[bytes], decode: _Decoder, utf8: bool = False) -> Iterator[tuple[str | bytes, int]]:
    r"""The stream in documents of about CUT_CHARS characters, cut only between a line that ends in one
    non-space character + "\n" and a line that starts with a letter or digit. No pre-token of the known
    patterns crosses such a cut, and none depends on what lies beyond it (a longer whitespace run would:
    gpt2's ``\s+(?!\S)`` looks ahead), so the counts equal those of the whole file.

    Read and decoded in blocks of CUT_CHARS bytes up to their last newline (a newline byte is never inside
    a multi-byte character), the cut found by a regex: per-line Python work made this reader slower than
    iterating a text file's lines (29.9 s against 24.1 s for 1 GB)."""
    if utf8:
        # The same documents as UTF-8 bytes, for a compiled scanner: each block checked by decoding it, and
        # only a block with bad bytes goes through `decode` (which raises, or repairs it as U+FFFD).
        take: Callable[[bytes, int], Any] = functools.partial(_checked_utf8, decode)
        cut_point: Callable[[Any, int], int] = _cut_point_utf8
        newlines: Callable[[Any], int] = _count_newlines
    else:
        take, cut_point, newlines = decode, _cut_point, operator.methodcaller("count", "\n")
    carry: Any = b"" if utf8 else ""     # read, not yet yielded; starts at line `start`
    start = line = 1    # `line`: the line at which the unread bytes start
    pending = b""
    searched = CUT_CHARS    # no cut point in carry before this (searching again is quadratic)
    first = True
    while True:
        raw = stream.read(max(CUT_CHARS, len(BOM)) if first else CUT_CHARS)    # the BOM whole, if any
        block, first = (_without_bom(raw), False) if first else (raw, False)
        data = pending + block if pending else block
        end = data.rfind(b"\n") + 1 if raw else len(data)
        if end:
            text = take(data[:end], line)
            line += newlines(text)
            carry = carry + text if carry else text
            pending = data[end:]
        else:
            pending = data
        while len(carry) > searched:
            cut = cut_point(carry, searched)
            if cut < 0:
                searched = max(CUT_CHARS, len(carry) - 1)
                break
            document = carry[:cut]
            yield document, start
            start += newlines(document)
            carry, searched = carry[cut:], CUT_CHARS
        if not raw:
            break
    if carry:
        yield carry, start


def _checked_utf8(decode: _Decoder, data: bytes, line: int) -> bytes:
    """`data` if it is valid UTF-8, else its text as `decode` repairs it (or the error it raises)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return decode(data, line).encode("utf-8")
    return data


def _count_newlines(data: bytes) -> int:
    """The number of newline bytes in `data`: numpy compares the block at once, where bytes.count loops over
    its matches."""
    import numpy

    return int(numpy.count_nonzero(numpy.frombuffer(data, numpy.uint8) == 10))


# In UTF-8: a newline before an ASCII letter or digit, or before the lead byte of a longer character
# (checked with str.isalnum() by _cut_point_utf8).
_NEWLINE_BEFORE_WORD_BYTE = re.compile(rb"\n(?=[0-9A-Za-z\xc2-\xf4])")


def _cut_point_utf8(data: bytes, start: int) -> int:
    """`_cut_point` on valid UTF-8: the first byte position >= `start` after a newline that follows a
    non-space character and precedes a letter or digit, or -1."""
    for match in _NEWLINE_BEFORE_WORD_BYTE.finditer(data, max(start - 1, 1)):
        after = match.end()
        if not data[after:after + 4].decode("utf-8", "ignore")[:1].isalnum():
            continue
        before = match.start() - 1
        while before > 0 and 0x80 <= data[before] < 0xC0:     # back to the lead byte of that character
            before -= 1
        if not data[before:match.start()].decode("utf-8", "replace").isspace():
            return after
    return -1


# A newline before a letter or digit ([^\W_] is str.isalnum()). A pattern that starts with a literal is
# searched for that character first, fast; a lookbehind for the non-space before it would search far
# slower.
_NEWLINE_BEFORE_ALNUM = re.compile(r"\n(?=[^\W_])")


def _cut_point(text: str, start: int) -> int:
    """The first position >= `start` where _cut_documents may cut `text`, or -1."""
    for match in _NEWLINE_BEFORE_ALNUM.finditer(text, max(start - 1, 1)):
        if not text[match.start() - 1].isspace():
            return match.end()
    return -1


def _jsonl_document(line: bytes, decode: _Decoder, number: int, field: str) -> str | None:
    """The `field` of one JSONL line; None for a blank line (a trailing newline is not a document)."""
    if not line.strip():
        return None
    text = decode(line, number)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadDocumentError(decode.label, number, f"not valid JSON ({error.msg} at column {error.colno})") from None
    except ValueError as error:     # an integer of more than 4,300 digits (Python's int conversion limit)
        raise BadDocumentError(decode.label, number, f"not readable JSON ({error})") from None
    except RecursionError:
        raise BadDocumentError(decode.label, number, "JSON nested more deeply than Python reads (~1,000 levels)") \
            from None
    return _text_of(record, decode.label, number, field, strings=False)


def _text_of(record: Any, label: str, number: int, field: str, *, strings: bool) -> str:
    if strings and isinstance(record, str):
        return record
    if not isinstance(record, dict):
        raise BadDocumentError(label, number, f"expected a JSON object{' or string' if strings else ''}, "
                               f"got {type(record).__name__}")
    if field not in record:
        raise BadDocumentError(label, number, f"no field {field!r} (fields: {', '.join(map(repr, record))})")
    value = record[field]
    if not isinstance(value, str):
        raise BadDocumentError(label, number, f"field {field!r} is {type(value).__name__}, not a string")
    return value


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _json_documents(
    file: InputFile, field: str, decode: _Decoder, on_progress: Callable[[int], None] | None
) -> Iterator[tuple[str, int] | BadDocumentError]:
    """The items of a top-level JSON array: strings, or objects' `field`; `line` is where each item starts."""
    with _open_bytes(file, on_progress) as stream:
        text = decode(_without_bom(stream.read()), 1)
    decoder = json.JSONDecoder()
    line, counted = 1, 0

    def line_at(position: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, position)
        counted = position
        return line

    position = _JSON_SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", position):
        raise BadDocumentError(file.label, line_at(position), "a .json input must hold one array (of objects or "
                               "strings); for one object a line, name the file .jsonl")
    position = _JSON_SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
    if text.startswith("]", position):
        return
    while True:
        number = line_at(position)
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise BadDocumentError(file.label, error.lineno, f"not valid JSON ({error.msg} at column "
                                   f"{error.colno})") from None
        try:
            yield _text_of(item, file.label, number, field, strings=True), number
        except BadDocumentError as error:
            yield error
        position = _JSON_SPACE.match(text, position).end()  # type: ignore[union-attr]
        if text.startswith("]", position):
            break
        if not text.startswith(",", position):
            raise BadDocumentError(file.label, line_at(position), "not valid JSON (expected ',' or ']' after "
                                   "an array item)")
        position = _JSON_SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
    if _JSON_SPACE.match(text, position + 1).end() != len(text):  # type: ignore[union-attr]
        raise BadDocumentError(file.label, line_at(position + 1), "not valid JSON (text after the array)")


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
