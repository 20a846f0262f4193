"""Writing one output set of token files — whole, or in numbered shards with an index — committed together.

Without shards a set is `tokens.layout`'s three files, ``PREFIX.tokens.npy`` (or ``.bin``),
``PREFIX.offsets.npy`` and ``PREFIX.meta.json``. With ``shard_tokens=N`` it is numbered shards, each such a
set of its own (``PREFIX.00000.*``, ``PREFIX.00001.*``, ... — each loads, decodes and describes itself), and
``PREFIX.index.json`` (`ShardIndex`) listing them with the totals.

How documents are packed (the rule is the same whatever the batches are): documents go into the current shard
in input order while they fit whole; a document that does not fit in what is left starts the next shard; a
document longer than a whole shard starts a shard and is cut every N tokens, its parts in consecutive
shards. A shard therefore never holds more than N tokens, and a document is cut only when it must be. A cut
document appears in each shard's offsets as one span; the index marks a shard whose first span continues the
last span of the shard before (``continues``), so a reader can join them (`TokenShards.documents`).

Every file is written under a temporary name and renamed when the whole job succeeds, the index (or
the metadata) last: a failed or interrupted run leaves nothing that looks complete. A successful run replaces
what an earlier run wrote under the same prefix, shards included, so no stale shard survives beside a new
index.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from .arrays import PartialFile, TokenFileWriter, remove_stale_partial_files_matching
from .layout import (
    INDEX_SUFFIX,
    META_SUFFIX,
    Format,
    ShardIndex,
    ShardRecord,
    TokenFilesMeta,
    output_paths,
    read_index,
    read_meta,
    shard_prefix,
)

__all__ = ["SetCounts", "TokenSetWriter", "commit_together", "remove_set", "remove_stale_partial_files_of_set"]


@dataclass
class SetCounts:
    """What went into a set or one shard: totals, and per input file (arrays indexed like the inputs)."""

    n_inputs: int
    documents: int = 0      # spans: a document cut over shards counts once in each
    tokens: int = 0
    bytes: int = 0          # UTF-8 bytes of the documents' text, counted where each document starts
    file_documents: npt.NDArray[np.int64] = field(init=False)
    file_bytes: npt.NDArray[np.int64] = field(init=False)
    file_tokens: npt.NDArray[np.int64] = field(init=False)

    def __post_init__(self) -> None:
        self.file_documents, self.file_bytes, self.file_tokens = (np.zeros(self.n_inputs, np.int64)
                                                                  for _ in range(3))

    def add(self, lengths: npt.NDArray[np.int64], doc_bytes: npt.NDArray[np.int64],
            doc_file: npt.NDArray[np.intp] | None, starts: npt.NDArray[np.bool_]) -> None:
        """Count spans of `lengths` tokens; `starts` marks those that begin their document (their bytes count)."""
        self.documents += len(lengths)
        self.tokens += int(lengths.sum())
        counted_bytes = np.where(starts, doc_bytes, 0)
        self.bytes += int(counted_bytes.sum())
        if doc_file is not None and self.n_inputs:
            self.file_documents += np.bincount(doc_file, minlength=self.n_inputs)
            self.file_bytes += np.bincount(doc_file, weights=counted_bytes, minlength=self.n_inputs).astype(np.int64)
            self.file_tokens += np.bincount(doc_file, weights=lengths, minlength=self.n_inputs).astype(np.int64)


class _Part:
    """One shard (or the whole set) being written: its three files under temporary names, and its counts."""

    def __init__(self, prefix: str, dtype: np.dtype[Any], format: Format, fsync: bool, n_inputs: int,
                 first_document: int, continues: bool) -> None:
        self.prefix = prefix
        self.paths = output_paths(prefix, format)
        self.counts = SetCounts(n_inputs)
        self.first_document, self.continues = first_document, continues
        with contextlib.ExitStack() as stack:   # a failure opening one file deletes those already open
            self.tokens_out = stack.enter_context(TokenFileWriter(self.paths.tokens, dtype, format, fsync=fsync))
            self.offsets_out = stack.enter_context(TokenFileWriter(self.paths.offsets, np.int64, fsync=fsync))
            self.meta_out = stack.enter_context(PartialFile(self.paths.meta, fsync=fsync))
            stack.pop_all()
        self.offsets_out.write(np.zeros(1, np.int64))

    @property
    def writers(self) -> tuple[PartialFile, ...]:
        return self.tokens_out, self.offsets_out, self.meta_out

    def append(self, ids: npt.NDArray[Any], ends: npt.NDArray[np.int64]) -> None:
        """Append the spans whose ids are `ids`, ending at `ends` (relative to ids[0])."""
        self.offsets_out.write(ends + self.tokens_out.length)
        self.tokens_out.write(ids)


def remove_set(prefix: str, split: str | None = None) -> list[Path]:
    """Delete the set an earlier run wrote at `prefix`: its three files (as its sidecar says) or its shards and
    index (as its index lists them). With `split` ("train" or "val"), only a set whose metadata says it is
    that part of a split run: a run of its own that was given ``-o data.train`` is never touched."""
    meta, index = read_meta(prefix), read_index(prefix)
    candidates: list[Path] = []
    if meta is not None and (split is None or meta.extra.get("split") == split):
        candidates += list(output_paths(prefix, meta.format))  # type: ignore[arg-type]
    if index is not None and (split is None or index.meta.extra.get("split") == split):
        folder = Path(prefix).parent
        for shard in index.shards:
            candidates += list(output_paths(os.fspath(folder / shard.name), index.meta.format))  # type: ignore[arg-type]
        candidates.append(Path(prefix + INDEX_SUFFIX))
    removed = []
    for path in candidates:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed


class TokenSetWriter:
    """Writes the set `prefix` (whole, or in shards of at most `shard_tokens` tokens) under temporary names.

    Feed it with `write`; then `finish` writes each metadata sidecar (and the index), and `commit` renames
    every file to its final name. Use as a context manager: leaving it without `commit` deletes everything
    it wrote. `n_inputs` is how many input files the per-file counts are kept for (0: none).
    """

    def __init__(self, prefix: str, *, dtype: npt.DTypeLike, format: Format, fsync: bool = False,
                 n_inputs: int = 0, shard_tokens: int | None = None) -> None:
        if shard_tokens is not None and (not isinstance(shard_tokens, int) or isinstance(shard_tokens, bool)
                                         or shard_tokens < 1):
            raise ValueError(f"shard_tokens must be a positive int, got {shard_tokens!r}")
        self.prefix, self.format, self.fsync = prefix, format, fsync
        self.dtype = np.dtype(dtype)
        self.n_inputs, self.shard_tokens = n_inputs, shard_tokens
        self.counts = SetCounts(n_inputs)      # the whole set: documents counted once each
        self.parts: list[_Part] = []
        self._index_out: PartialFile | None = None
        self._committed = False
        # What an earlier run left under this prefix, read before this run's files replace its index.
        self._earlier_index = _quietly(read_index, prefix)
        self._earlier_whole = _quietly(read_meta, prefix)
        self._open_part(0, continues=False)

    # ---- writing ----

    def write(self, ids: npt.NDArray[Any], offsets: npt.NDArray[np.int64], doc_bytes: npt.NDArray[np.int64],
              doc_file: npt.NDArray[np.intp] | None = None) -> None:
        """Append documents: their ids back to back, `offsets` (documents + 1, from 0), each document's UTF-8
        size, and (when input files are counted) the index of the input file each came from."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.diff(offsets)
        doc_bytes = np.asarray(doc_bytes, np.int64)
        before = self.counts.documents      # the set's index of this batch's first document
        self.counts.add(lengths, doc_bytes, doc_file, np.ones(len(lengths), bool))
        if self.shard_tokens is None:
            self._append(ids, offsets, 0, len(lengths), doc_bytes, doc_file)
            return
        first, pos = 0, 0       # the next document, and the next token to place (inside document `first`)
        n = len(lengths)
        while first < n:
            part = self.parts[-1]
            room = self.shard_tokens - part.tokens_out.length
            # How many whole documents from `first` on fit: their cumulative ends against the room left.
            fit = int(np.searchsorted(offsets[first + 1:] - pos, room, side="right"))
            if pos > offsets[first]:    # the rest of a cut document: it fits (the shard is new) or is cut again
                take = min(int(offsets[first + 1]) - pos, room)
                self._append_span(ids, pos, take, first, doc_bytes, doc_file, starts=False)
                pos += take
                if pos == offsets[first + 1]:
                    first += 1
                else:
                    self._open_part(before + first, continues=True)
            elif fit:
                self._append(ids, offsets, first, first + fit, doc_bytes, doc_file)
                first += fit
                pos = int(offsets[first])
            elif part.tokens_out.length:    # does not fit in what is left: the next shard
                self._open_part(before + first, continues=False)
            else:                           # longer than a whole shard: cut it
                self._append_span(ids, pos, room, first, doc_bytes, doc_file, starts=True)
                pos += room
                self._open_part(before + first, continues=True)

    def _append(self, ids: npt.NDArray[Any], offsets: npt.NDArray[np.int64], first: int, stop: int,
                doc_bytes: npt.NDArray[np.int64], doc_file: npt.NDArray[np.intp] | None) -> None:
        """Documents first..stop-1, whole."""
        start = int(offsets[first])
        part = self.parts[-1]
        part.append(ids[start:int(offsets[stop])], offsets[first + 1:stop + 1] - start)
        files = None if doc_file is None else doc_file[first:stop]
        part.counts.add(np.diff(offsets[first:stop + 1]), doc_bytes[first:stop], files, np.ones(stop - first, bool))

    def _append_span(self, ids: npt.NDArray[Any], start: int, length: int, doc: int,
                     doc_bytes: npt.NDArray[np.int64], doc_file: npt.NDArray[np.intp] | None, *,
                     starts: bool) -> None:
        """`length` ids of document `doc` from `start`: a part of a document cut over shards."""
        part = self.parts[-1]
        part.append(ids[start:start + length], np.array([length], np.int64))
        files = None if doc_file is None else doc_file[doc:doc + 1]
        part.counts.add(np.array([length], np.int64), doc_bytes[doc:doc + 1], files, np.array([starts]))

    def _open_part(self, first_document: int, *, continues: bool) -> None:
        prefix = self.prefix if self.shard_tokens is None else shard_prefix(self.prefix, len(self.parts))
        self.parts.append(_Part(prefix, self.dtype, self.format, self.fsync, self.n_inputs, first_document,
                                continues))

    # ---- finishing ----

    def finish(self, meta_for: Callable[[SetCounts, dict[str, Any]], TokenFilesMeta]) -> TokenFilesMeta:
        """Write every part's metadata, ``meta_for(its counts, extra fields)``, and when sharded the index: the
        whole set's metadata, ``meta_for(the set's counts, {})``, with the list of shards. Returns the whole
        set's metadata as written."""
        n_parts = len(self.parts)
        for number, part in enumerate(self.parts):
            extra = {} if self.shard_tokens is None else {
                "shard": number, "shards": n_parts, "shard_tokens": self.shard_tokens,
                "continues": part.continues, "index": os.path.basename(self.prefix) + INDEX_SUFFIX}
            meta = meta_for(part.counts, extra)
            part.meta_out.write_bytes(meta.to_json().encode("utf-8"))
        if self.shard_tokens is None:
            return meta
        records = tuple(ShardRecord(os.path.basename(part.prefix), part.counts.documents, part.counts.tokens,
                                    part.counts.bytes, part.first_document, part.continues)
                        for part in self.parts)
        index = ShardIndex(meta_for(self.counts, {}), self.shard_tokens, records)
        self._index_out = PartialFile(self.prefix + INDEX_SUFFIX, fsync=self.fsync)
        self._index_out.write_bytes(index.to_json().encode("utf-8"))
        return index.meta

    @property
    def writers(self) -> list[PartialFile]:
        """Every file, in the order to commit them: the arrays, then each sidecar, the index last."""
        writers: list[PartialFile] = [w for part in self.parts for w in (part.tokens_out, part.offsets_out)]
        writers += [part.meta_out for part in self.parts]
        if self._index_out is not None:
            writers.append(self._index_out)
        return writers

    @property
    def paths(self) -> list[Path]:
        """The final paths of every file of the set (the index last)."""
        return [writer.path for writer in self.writers]

    def remove_earlier_output(self) -> list[Path]:
        """Delete what an earlier run wrote under this prefix and this run does not replace, after the commit:
        the shards its index listed (when it was sharded), or its three files (when this run is sharded and
        it was not). Only files the earlier run's own index or sidecar vouches for: a set of yours that merely
        looks like a shard (``-o data.00001``) is never touched."""
        mine = {os.fspath(path) for path in self.paths}
        candidates: list[Path] = []
        earlier = self._earlier_index
        if earlier is not None:
            folder = Path(self.prefix).parent
            for shard in earlier.shards:
                candidates += list(output_paths(os.fspath(folder / shard.name), earlier.meta.format))  # type: ignore[arg-type]
            if self.shard_tokens is None:
                candidates.append(Path(self.prefix + INDEX_SUFFIX))
        if self.shard_tokens is not None and self._earlier_whole is not None:
            candidates += list(output_paths(self.prefix, self._earlier_whole.format))  # type: ignore[arg-type]
        removed = []
        for path in candidates:
            if os.fspath(path) in mine:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
        return removed

    def commit(self) -> None:
        commit_together(*self.writers)
        self._committed = True

    def discard(self) -> None:
        for writer in self.writers:
            writer.discard()

    def __enter__(self) -> TokenSetWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._committed:
            self.discard()


def _quietly(read: Callable[[str], Any], prefix: str) -> Any:
    """`read(prefix)`, or None when there is nothing readable (a damaged file is not ours to judge)."""
    try:
        return read(prefix)
    except (OSError, ValueError):
        return None


def commit_together(*writers: PartialFile) -> None:
    """Rename every writer's file to its final name; if one rename fails, take back those already done."""
    done: list[Path] = []
    try:
        for writer in writers:
            done.append(writer.commit())
    except BaseException:
        for path in done:
            path.unlink(missing_ok=True)
        raise


def remove_stale_partial_files_of_set(prefix: str) -> list[Path]:
    """Delete the temporary files that dead earlier runs left for the set `prefix`, shards included."""
    name = re.escape(os.path.basename(prefix))
    suffixes = "|".join(re.escape(s) for s in (".tokens.npy", ".offsets.npy", ".bin", META_SUFFIX, INDEX_SUFFIX))
    return remove_stale_partial_files_matching(Path(prefix).parent, name + r"(\.\d{5,})?(" + suffixes + ")")

