"""Counted pre-tokens on disk: count a large corpus once, then train several vocabulary sizes from the file,
or add the counts that several machines made.

    counts = bytebpe.count_pieces(texts, pattern="o200k_base")            # a PieceCounts
    bytebpe.save_piece_counts(counts, "part1.counts")
    counts = bytebpe.load_piece_counts("part1.counts", "part2.counts")    # the sum
    enc = bytebpe.train_from_counts(counts, 32768)                        # the pattern comes with the counts

A file is one JSON line — format, version, the split pattern the pieces were cut with, how many distinct
pieces and occurrences, the bytebpe version, the BLAKE2b digest and size of the payload — then the payload:
`PieceCounts.to_bytes()` (piece count, then a count and length per piece, then the pieces' bytes). Counts
made with different patterns cannot be added (their pieces are not the same kind of thing), and a damaged
file is an error naming it, never different counts.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _train
from .bundled import blake2b
from .vocab_io import write_bytes_atomically

__all__ = ["PieceCounts", "count_pieces", "load_piece_counts", "save_piece_counts", "train_from_counts"]

PieceCounts = _train.PieceCounts
FORMAT = "bytebpe piece counts"
VERSION = 1


def count_pieces(texts: Iterable[str], *, pattern: str | None = "cl100k_base", pat_str: str | None = None,
                 progress: bool = False) -> PieceCounts:
    """The distinct pre-tokens of `texts` with their counts, cut by a named encoding's `pattern` or by your own
    regex `pat_str` (as in `bytebpe.train`); the counts remember the pattern (`counts.pat_str`)."""
    from . import training

    resolved = training.resolve_pattern(None if pat_str is not None else pattern, pat_str)
    counts = training.count_pieces(texts, training.pretokenizer_for(resolved), progress=progress)
    counts.pat_str = resolved
    return counts


def save_piece_counts(counts: PieceCounts, path: str | os.PathLike[str], *, pat_str: str | None = None) -> None:
    """Write `counts` to `path` (atomically). `pat_str` defaults to the pattern they were counted with."""
    pat_str = pat_str if pat_str is not None else counts.pat_str
    if not isinstance(pat_str, str) or not pat_str:
        raise ValueError("save_piece_counts needs the pattern the pieces were cut with: pass pat_str=")
    payload = counts.to_bytes()
    header = {"format": FORMAT, "version": VERSION, "pat_str": pat_str, "pieces": len(counts),
              "occurrences": counts.total_pieces, "payload_bytes": len(payload),
              "payload_blake2b": blake2b(payload).hexdigest(), "bytebpe_version": _version()}
    write_bytes_atomically(path, json.dumps(header, ensure_ascii=False).encode("utf-8") + b"\n" + payload)


def load_piece_counts(*paths: str | os.PathLike[str]) -> PieceCounts:
    """The counts of one or more files, added up; all must have been cut with the same pattern."""
    if not paths:
        raise ValueError("load_piece_counts needs at least one file")
    counts = PieceCounts()
    pattern = None
    for path in paths:
        header, payload = _read(path)
        if pattern is not None and header["pat_str"] != pattern:
            raise ValueError(f"{os.fspath(path)}: its pieces were cut with another pattern than those of "
                             f"{os.fspath(paths[0])}; counts of different patterns cannot be added")
        pattern = header["pat_str"]
        try:
            counts.add_bytes(payload)
        except ValueError as error:
            raise ValueError(f"{os.fspath(path)}: {error}") from None
    counts.pat_str = pattern
    return counts


def _read(path: str | os.PathLike[str]) -> tuple[Mapping[str, Any], memoryview]:
    with open(path, "rb") as file:
        data = file.read()
    label = os.fspath(path)
    newline = data.find(b"\n")
    try:
        header = json.loads(data[:newline]) if newline > 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{label}: not a bytebpe piece counts file")
    if header.get("version") != VERSION:
        raise ValueError(f"{label}: piece counts version {header.get('version')!r}; this bytebpe reads {VERSION}")
    payload = memoryview(data)[newline + 1:]
    if len(payload) != header.get("payload_bytes") or blake2b(payload).hexdigest() != header.get("payload_blake2b"):
        raise ValueError(f"{label}: damaged or truncated ({len(payload):,} bytes of counts, the header says "
                         f"{header.get('payload_bytes')!r} with another digest)")
    if not isinstance(header.get("pat_str"), str):
        raise ValueError(f"{label}: no pattern recorded")
    return header, payload


def train_from_counts(counts: PieceCounts, vocab_size: int, *, pat_str: str | None = None,
                      special_tokens: Sequence[str] | Mapping[str, int] | None = None, min_frequency: int = 1,
                      max_token_length: int | None = None, name: str | None = None, progress: bool = False) -> Any:
    """`bytebpe.train` from counted pieces (consumed: `counts` is empty afterwards); the pattern is the one the
    counts were made with unless `pat_str` is given."""
    from . import training

    pat_str = pat_str if pat_str is not None else counts.pat_str
    if pat_str is None:
        raise ValueError("train_from_counts needs the pattern the pieces were cut with: pass pat_str=")
    return training.train_from_counts(counts, vocab_size, pat_str=pat_str, special_tokens=special_tokens,
                                      min_frequency=min_frequency, max_token_length=max_token_length, name=name,
                                      progress=progress)


def _version() -> str:
    from . import __version__

    return __version__
