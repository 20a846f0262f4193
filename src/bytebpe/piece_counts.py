"""Counted pre-tokens on disk: count a large corpus once, then train several vocabulary sizes from the file,
or add the counts that several machines made.

    counts = bytebpe.count_pieces(texts, pattern="o200k_base")            # a PieceCounts
    counts = bytebpe.count_pieces_from_files(["a.jsonl", "b.txt.gz"])    # or of files, as train_from_files
    bytebpe.save_piece_counts(counts, "part1.counts")
    counts = bytebpe.load_piece_counts("part1.counts", "part2.counts")    # the sum
    enc = bytebpe.train_from_counts(counts, 32768)                        # the pattern comes with the counts

A file is one JSON line — format, version, the split pattern the pieces were cut with, how many distinct
pieces and occurrences, what pruning dropped (`max_distinct_pieces`), the bytebpe version, the BLAKE2b
digest and size of the payload — then the payload:
`PieceCounts.to_bytes()` (piece count, then a count and length per piece, then the pieces' bytes). Counts
made with different patterns cannot be added (their pieces are not the same kind of thing), and a damaged
file is an error naming it, never different counts.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from . import _train, training
from ._version import __version__
from .atomic_write import write_bytes_atomically
from .bundled import blake2b
from .readers import ReadOptions

if TYPE_CHECKING:
    from .readers import ReadTally

__all__ = ["PieceCounts", "count_pieces", "count_pieces_from_files", "load_piece_counts", "save_piece_counts",
           "train_from_counts"]

PieceCounts = _train.PieceCounts
FORMAT = "bytebpe piece counts"
VERSION = 1
# What pruning dropped, recorded in the header (0 when nothing was) and added up on loading.
PRUNING = ("prune_passes", "pruned_pieces", "pruned_occurrences")


def count_pieces(texts: Iterable[str], *, pattern: str | None = "cl100k_base", pat_str: str | None = None,
                 progress: bool = False, max_distinct_pieces: int | None = None,
                 workers: int | None = None) -> PieceCounts:
    """The distinct pre-tokens of `texts` with their counts, cut by a named encoding's `pattern` or by your own
    regex `pat_str` (as in `bytebpe.train`); the counts remember the pattern (`counts.pat_str`).

    `max_distinct_pieces=N` bounds memory: the table never holds 2N pieces, and the result at most N. The
    rule (deterministic, the same however the texts are batched): whenever an addition brings the table to
    2N distinct pieces, and once more at the end if it holds more than N, every piece whose count is at most
    t is dropped, t being the smallest count that leaves at most N pieces — pieces of equal count go
    together, so fewer than N may remain. `counts.prune_passes`, `pruned_pieces` and `pruned_occurrences`
    say what was dropped; without the bound nothing ever is. Counting runs on `workers` threads (default: one
    per usable core) unless pruning or a pattern without a compiled scanner makes it serial; the counts are
    the same either way.
    """
    resolved = training.resolve_pattern(None if pat_str is not None else pattern, pat_str)
    counts = training.count_split_pieces(texts, training.pretokenizer_for(resolved), progress=progress,
                                   max_distinct_pieces=max_distinct_pieces, workers=workers)
    counts.pat_str = resolved
    return counts


def count_pieces_from_files(
    paths: Union[str, os.PathLike[str], Iterable[Union[str, os.PathLike[str]]]], *, pattern: str | None = "cl100k_base",
    pat_str: str | None = None, field: str = "text", lines: bool = False, skip_bad: bool = False,
    errors: str = "strict", ignore_unknown: bool = False, stdin_format: str = "txt", tally: ReadTally | None = None,
    progress: bool = False, max_distinct_pieces: int | None = None, workers: int | None = None,
    read: ReadOptions | None = None,
) -> PieceCounts:
    """`count_pieces` of the documents of files, read exactly as `bytebpe.train_from_files` reads them (the
    same options; the counts are those `train_from_files` trains on). Everything is checked before any
    work. What was skipped or replaced is counted into `tally` when one is given, else reported as a
    `UserWarning`. The progress bar counts bytes of the files, with their total size as its total."""
    resolved = training.resolve_pattern(None if pat_str is not None else pattern, pat_str)
    training.check_max_distinct_pieces(max_distinct_pieces)
    # One set of reading options, as `read=` or as keywords (ReadOptions.resolve checks and refuses both).
    field, lines, skip_bad, errors, ignore_unknown, stdin_format = ReadOptions.resolve(
        read, field=field, lines=lines, skip_bad=skip_bad, errors=errors, ignore_unknown=ignore_unknown,
        stdin_format=stdin_format).keywords().values()
    counts = training.count_files_pieces(
        paths, training.pretokenizer_for(resolved), field=field, lines=lines, skip_bad=skip_bad, errors=errors,
        ignore_unknown=ignore_unknown, stdin_format=stdin_format, tally=tally, progress=progress,
        max_distinct_pieces=max_distinct_pieces, workers=workers)
    counts.pat_str = resolved
    return counts


def save_piece_counts(counts: PieceCounts, path: str | os.PathLike[str], *, pat_str: str | None = None) -> None:
    """Write `counts` to `path` (atomically). `pat_str` defaults to the pattern they were counted with."""
    pat_str = pat_str if pat_str is not None else counts.pat_str
    if not isinstance(pat_str, str) or not pat_str:
        raise ValueError("save_piece_counts needs the pattern the pieces were cut with: pass pat_str=")
    payload = counts.to_bytes()
    header = {"format": FORMAT, "version": VERSION, "pat_str": pat_str, "pieces": len(counts),
              "occurrences": counts.total_pieces, "max_distinct_pieces": counts.max_distinct_pieces,
              **{key: getattr(counts, key) for key in PRUNING}, "payload_bytes": len(payload),
              "payload_blake2b": blake2b(payload).hexdigest(), "bytebpe_version": __version__}
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
        for key in PRUNING:
            setattr(counts, key, getattr(counts, key) + header.get(key, 0))
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
    if not all(isinstance(header.get(key, 0), int) and 0 <= header.get(key, 0) < 2**63 for key in PRUNING):
        raise ValueError(f"{label}: damaged header (pruning figures {[header.get(key) for key in PRUNING]})")
    return header, payload


def train_from_counts(counts: PieceCounts, vocab_size: int, *, pat_str: str | None = None,
                      special_tokens: Sequence[str] | Mapping[str, int] | None = None, min_frequency: int = 1,
                      max_token_length: int | None = None, name: str | None = None, progress: bool = False) -> Any:
    """`bytebpe.train` from counted pieces (consumed: `counts` is empty afterwards); the pattern is the one the
    counts were made with unless `pat_str` is given."""
    pat_str = pat_str if pat_str is not None else counts.pat_str
    if pat_str is None:
        raise ValueError("train_from_counts needs the pattern the pieces were cut with: pass pat_str=")
    return training.train_from_counts(counts, vocab_size, pat_str=pat_str, special_tokens=special_tokens,
                                      min_frequency=min_frequency, max_token_length=max_token_length, name=name,
                                      progress=progress)


