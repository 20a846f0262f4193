"""Encode whole datasets to token arrays on disk: streaming, on all cores, safe to interrupt.

The pipeline: a reader thread parses documents (`readers`) into batches of about `batch_bytes` of text and
keeps up to `PREFETCH_BATCHES` ready; the calling thread encodes each batch with
`Encoding.encode_batch_to_numpy` on the shared thread pool (documents in parallel, output in input order) and
appends the ids to a temporary file (`tokens.arrays`). Memory is a few batches whatever the input size. Once
the last batch is written the files get their final names; an error or Ctrl-C deletes them instead.

Reading overlaps encoding because the encoder leaves the GIL for the whole document when the encoding's
pattern has a compiled scanner (every named encoding), and while it merges otherwise.
"""
from __future__ import annotations

import contextlib
import functools
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from . import batching
from ._version import __version__
from .atomic_write import locked_output
from .encoded_documents import (Encoded, append_eot, cut_documents, document_token_id, select_documents,
                                wrap_documents)
from .encoding import Encoding
from .progress import counted, progress_bar
from .ray import encode_input_files
from .readers import (BadDocumentError, InputFile, PathLike, ReadOptions, check_inputs_unchanged,
                      check_read_options, find_input_files)
from .registry import get_encoding
from .tokens.arrays import fsync_folder, token_dtype
from .tokens.layout import (InputRecord, OutputOptions, TokenFilesMeta, output_paths, output_prefix, tokenizer_sha256,
                            utc_timestamp, vocabulary_sha256)
from .tokens.writer import SetCounts, TokenSetWriter, commit_together, remove_set, remove_stale_partial_files_of_set

__all__ = [
    "BadDocumentError",
    "EncodeSummary",
    "Encoded",
    "FileStats",
    "append_eot",
    "document_token_id",
    "wrap_documents",
    "count_files",
    "encode_files",
    "iter_batches",
    "output_paths",
    "select_documents",
]

# About this much UTF-8 text per batch. Each batch in flight costs several times its size (the texts, the
# pieces, the ids and their copies), so the batch size bounds a job's memory whatever the input's size; at
# this size each thread still gets chunks of ~256 KB, and the per-batch overhead is well under 1%.
DEFAULT_BATCH_BYTES = 2 * 1024 * 1024
PREFETCH_BATCHES = 2
# The first few skipped documents are named in the summary; the rest are only counted.
SKIPPED_EXAMPLES = 10
# What a document weighs in a batch beyond its bytes (about a str object and a list slot).
DOCUMENT_WEIGHT = 64

Format = Literal["npy", "bin"]
Engine = Literal["local", "ray"]


@dataclass
class FileStats:
    """What one input file held."""

    path: Path
    documents: int = 0
    bytes: int = 0          # UTF-8 bytes of the documents' text (not of the file)
    tokens: int = 0         # ids written for it, end-of-text ids included
    skipped: int = 0
    longest: int = 0        # the most ids of one of its documents
    over_budget: int = 0    # its documents of more ids than the summary's `budget`

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0


@dataclass
class EncodeSummary:
    """The result of `encode_files` / `count_files`: totals, per-file figures, where the output went."""

    documents: int = 0
    bytes: int = 0
    tokens: int = 0
    skipped: int = 0
    skipped_examples: list[str] = field(default_factory=list)  # "file:line: reason" of the first few
    replaced: int = 0               # documents in which errors="replace" replaced bad bytes with U+FFFD
    replaced_bytes: int = 0
    replaced_examples: list[str] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)          # files of unknown kind in folders (ignore_unknown)
    seconds: float = 0.0
    files: list[FileStats] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)          # tokens (.npy or .bin), offsets, metadata
    removed_leftovers: list[Path] = field(default_factory=list)  # temporary files of dead earlier runs
    removed_earlier: list[Path] = field(default_factory=list)    # an earlier run's files this one replaced
    shards: dict[str, int] = field(default_factory=dict)         # shard_tokens: set prefix -> its shards
    dtype: str = ""
    splits: dict[str, EncodeSummary] = field(default_factory=dict)  # val_fraction: "train"/"val" -> its counts
    longest: int = 0                # the most ids of one document
    budget: int | None = None       # count_files(budget=N): documents of more than N ids are counted ...
    over_budget: int = 0            # ... here (and per file)

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    def losses(self) -> list[str]:
        """What was left out or changed (skipped documents, replaced bytes, ignored files), one line each plus
        examples: the command line prints these even with --quiet."""
        lines = []
        if self.skipped:
            lines.append(f"skipped {self.skipped:,} bad documents, first ones:")
            lines.extend(f"  {example}" for example in self.skipped_examples)
        if self.replaced:
            lines.append(f"replaced {self.replaced_bytes:,} invalid UTF-8 bytes with U+FFFD in {self.replaced:,} "
                         f"documents, first ones:")
            lines.extend(f"  {example}" for example in self.replaced_examples)
        if self.ignored:
            lines.append(f"ignored {counted(len(self.ignored), 'file')} that "
                         f"{'is not an input' if len(self.ignored) == 1 else 'are not inputs'} (notes, other formats): "
                         + ", ".join(map(str, self.ignored[:SKIPPED_EXAMPLES]))
                         + (", ..." if len(self.ignored) > SKIPPED_EXAMPLES else ""))
        return lines

    def describe(self) -> str:
        """A few human-readable lines: what `bytebpe encode` prints at the end."""
        rate = self.bytes / self.seconds / 1e6 if self.seconds else 0.0
        lines = [
            f"{counted(self.documents, 'document')}, {counted(self.bytes, 'byte')} of text (UTF-8), "
            f"{counted(self.tokens, 'token')} ({self.bytes_per_token:.3f} bytes/token) in {self.seconds:.2f} s "
            f"({rate:.1f} MB/s)"
        ]
        lines += self.losses()
        for name, part in self.splits.items():
            lines.append(f"{name}: {counted(part.documents, 'document')}, {counted(part.tokens, 'token')}")
        for name, count in self.shards.items():
            lines.append(f"{name}: {count:,} shards, listed in {name}.index.json")
        if self.removed_leftovers:
            lines.append(f"removed {len(self.removed_leftovers)} temporary files that a stopped earlier run left")
        if self.removed_earlier:
            lines.append(f"removed {len(self.removed_earlier)} files of an earlier output of the same name that "
                         f"this one replaces: " + ", ".join(map(str, self.removed_earlier[:SKIPPED_EXAMPLES]))
                         + (", ..." if len(self.removed_earlier) > SKIPPED_EXAMPLES else ""))
        lines.extend(f"wrote {path}" for path in self.outputs)
        return "\n".join(lines)


@dataclass
class _Batch:
    texts: list[str]
    file_runs: list[tuple[int, int, int]]  # (file index, documents, UTF-8 bytes) of consecutive runs, in order
    bytes: int
    read_position: int                    # bytes (as stored) read from all inputs when the batch closed
    sizes: list[int] = field(default_factory=list)  # UTF-8 bytes of each document


def encode_files(
    paths: PathLike | Sequence[PathLike],
    *,
    encoding: str | Encoding,
    output: PathLike | OutputOptions,
    field: str = "text",
    lines: bool = False,
    eot: bool | str | int = False,
    bos: bool | str | int = False,
    workers: int | None = None,
    format: Format = "npy",
    skip_bad: bool = False,
    progress: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    fsync: bool = False,
    errors: str = "strict",
    ignore_unknown: bool = False,
    stdin_format: str = "txt",
    val_fraction: float | None = None,
    seed: int = 0,
    shard_tokens: int | None = None,
    engine: Engine = "local",
    ray_address: str | None = None,
    max_tokens: int | None = None,
    read: ReadOptions | None = None,
) -> EncodeSummary:
    """Encode every document of the input files into ``PREFIX.tokens.npy`` + ``PREFIX.offsets.npy``, described
    by ``PREFIX.meta.json`` (`TokenFilesMeta`; `load_token_files` reads the three back).

    Inputs are read by `readers` (see there): `.txt` (one document; ``lines=True``: one per line), `.jsonl` /
    `.ndjson` (one per line, its `field`), `.json` (an array of objects or strings), `.parquet` (the `field`
    column), the text formats optionally `.gz`/`.bz2`/`.xz`/`.zst`, ``-`` for standard input (as
    `stdin_format`), or folders of them (a file of another kind is an error unless `ignore_unknown`).
    Bad UTF-8 is an error, or with ``errors="replace"`` U+FFFD, counted in the summary. The tokens array holds every
    document's ids in input order — uint16 when the vocabulary fits, else uint32 — and offsets (int64,
    documents + 1) bound document i as ``tokens[offsets[i]:offsets[i + 1]]``. Special-token text in the
    documents is encoded as ordinary text; ``eot=True`` appends the encoding's end-of-text id to each document
    (the first of END_OF_TEXT_TOKENS it has: <|endoftext|>, Llama 3's <|end_of_text|>, Mistral's </s>,
    DeepSeek's), ``eot="<|im_end|>"`` or an id appends that token; `bos` likewise puts one before each
    document (BEGIN_OF_TEXT_TOKENS). ``max_tokens=N`` keeps each document's first N ids (``encode(text)[:N]``,
    before `bos` and `eot` are added; the metadata records N).
    ``format="bin"`` writes nanoGPT's raw ``PREFIX.bin`` instead of the tokens `.npy`. `output` is the
    prefix, or an `OutputOptions` holding it with `format`, `shard_tokens`, `val_fraction`, `seed` and `fsync`
    (then those keywords stay unset), or the name of one of the files (``val.bin`` with format "bin"; see `output_prefix`); a folder is
    a ValueError. The metadata records the encoding's name and vocabulary sha256, the counts, the inputs
    (path, size), the options, the bytebpe version and the time.

    Everything that can be checked is checked before work starts (inputs exist, formats, the encoding,
    `eot`); a bad document raises `BadDocumentError` naming file and line unless `skip_bad`. The output
    files appear only when complete, all three together: until then they are ``.NAME.<pid>.<random>.partial``
    files, deleted on an error or Ctrl-C; those a killed run left behind (its process gone) are deleted when
    the next run writes the same output. ``fsync=True`` flushes the files and their folder to disk too.

    ``val_fraction=F`` splits by documents: each goes to ``PREFIX.val.*`` with probability F, else to
    ``PREFIX.train.*`` (three files each, with their own metadata), drawn from a generator seeded with `seed`
    in document order -- the same inputs, F and seed give the same split, whatever the batch size or
    worker count. The summary counts both; its `splits` give each set's own counts. Each sidecar records
    the split, F and the seed.

    ``shard_tokens=N`` writes each set as numbered shards of at most N tokens (``PREFIX.00000.tokens.npy``,
    ... each with its own offsets and sidecar) and ``PREFIX.index.json`` listing them (`tokens.writer` has the
    packing rule: documents whole unless longer than a shard); `load_token_shards` reads them back. Either
    way, a finished run replaces every file an earlier run wrote under the same prefix.

    ``engine="ray"`` reads and encodes on a Ray cluster (`bytebpe.ray.encode_input_files`: the cluster at
    `ray_address`, or the one ``ray.init()`` finds or starts; `workers` encoding workers, default: as many as
    the cluster offers) and writes here, in input order: the files are byte for byte the local engine's. The
    inputs must be paths every node can read (a shared file system).
    """
    # One set of output options, as `output=OutputOptions(...)` or as a prefix and keywords (checked there).
    out = OutputOptions.resolve(output, format=format, shard_tokens=shard_tokens, val_fraction=val_fraction,
                                seed=seed, fsync=fsync)
    output, format, shard_tokens, val_fraction, seed, fsync = (out.prefix, out.format, out.shard_tokens,
                                                               out.val_fraction, out.seed, out.fsync)
    prefix = output_prefix(output, format)
    if engine not in ("local", "ray"):
        raise ValueError(f"engine must be 'local' or 'ray', got {engine!r}")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    # One set of reading options, as `read=` or as keywords (ReadOptions.resolve checks and refuses both).
    field, lines, skip_bad, errors, ignore_unknown, stdin_format = ReadOptions.resolve(
        read, field=field, lines=lines, skip_bad=skip_bad, errors=errors, ignore_unknown=ignore_unknown,
        stdin_format=stdin_format).keywords().values()
    files, enc, workers = _prepare(paths, encoding, field, workers, batch_bytes, lines=lines, errors=errors,
                                   ignore_unknown=ignore_unknown, stdin_format=stdin_format,
                                   default_workers=engine == "local")
    if engine == "ray" and any(file.is_stdin for file in files):
        raise ValueError("engine 'ray' reads files on the cluster's nodes: standard input cannot be one")
    eot_id, bos_id = document_token_id(enc, eot, "eot"), document_token_id(enc, bos, "bos")
    dtype = token_dtype(enc.max_token_value)
    names = [prefix] if val_fraction is None else [f"{prefix}.train", f"{prefix}.val"]
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    sha256 = vocabulary_sha256(enc)

    summary = EncodeSummary(dtype=dtype.name)
    with contextlib.ExitStack() as stack:
        stack.enter_context(locked_output(prefix))      # one job per output, or a clear refusal
        for name in names:
            summary.removed_leftovers += remove_stale_partial_files_of_set(name)
        sets = [stack.enter_context(TokenSetWriter(name, dtype=dtype, format=format, fsync=fsync,
                                                   n_inputs=len(files), shard_tokens=shard_tokens))
                for name in names]
        choose = _TrainValSplitter(val_fraction, seed) if val_fraction is not None else None

        def write(batch: Encoded) -> None:
            if choose is None:
                sets[0].write(batch.ids, batch.offsets, batch.sizes, batch.doc_file)
                return
            in_val = choose(len(batch.offsets) - 1)
            for output_set, keep in zip(sets, (~in_val, in_val)):
                part = select_documents(batch, keep)
                output_set.write(part.ids, part.offsets, part.sizes, part.doc_file)

        _run(files, enc, summary, write, field=field, lines=lines, eot_id=eot_id, bos_id=bos_id, workers=workers,
             skip_bad=skip_bad, errors=errors, progress=progress, batch_bytes=batch_bytes, desc="encode",
             engine=engine, ray_address=ray_address, max_tokens=max_tokens)
        # Before anything is committed: a file truncated or rewritten during the run would leave a dataset
        # that is not the file's (and metadata that records the size it had at the start).
        check_inputs_unchanged(files)
        for name, output_set in zip(("train", "val"), sets):
            split = {} if val_fraction is None else {"split": name, "val_fraction": val_fraction, "seed": seed}
            if max_tokens is not None:
                split["max_tokens"] = max_tokens
            meta_for = functools.partial(_meta, files=files, summary=summary, enc=enc, sha256=sha256,
                                         format=format, eot_id=eot_id, field=field, lines=lines,
                                         split=split if bos_id is None else {**split, "bos_token": bos_id})
            output_set.finish(meta_for)
        # All sets together, each one's sidecars (and index) last: once one is there, so are its arrays.
        commit_together(*(writer for output_set in sets for writer in output_set.writers))
        for output_set in sets:
            summary.removed_earlier += output_set.remove_earlier_output()
        # An earlier run's other layout under this prefix goes too: split sets when this one is whole, the
        # whole set when this one is split.
        if val_fraction is None:
            summary.removed_earlier += remove_set(f"{prefix}.train", "train") + remove_set(f"{prefix}.val", "val")
        else:
            summary.removed_earlier += remove_set(prefix)
    if fsync:
        fsync_folder(Path(prefix).parent)   # the renames themselves
    summary.outputs = [path for output_set in sets for path in output_set.paths]
    if val_fraction is not None:
        summary.splits = {name: _part_summary(output_set, summary)
                          for name, output_set in zip(("train", "val"), sets)}
    summary.shards = {name: len(output_set.parts) for name, output_set in zip(names, sets)} if shard_tokens else {}
    return summary


class _TrainValSplitter:
    """Document -> train or val: a seeded generator drawn in document order (deterministic whatever the
    batches: PCG64 gives the same numbers drawn in one call or in many)."""

    def __init__(self, fraction: float, seed: int) -> None:
        self._fraction = fraction
        self._random = np.random.default_rng(seed)

    def __call__(self, n_documents: int) -> npt.NDArray[np.bool_]:
        return self._random.random(n_documents) < self._fraction


def _part_summary(output_set: TokenSetWriter, summary: EncodeSummary) -> EncodeSummary:
    counts = output_set.counts
    return EncodeSummary(documents=counts.documents, bytes=counts.bytes, tokens=counts.tokens,
                         skipped=summary.skipped, dtype=summary.dtype)


def _meta(counts: SetCounts, extra: dict[str, Any], *, files: list[InputFile], summary: EncodeSummary,
          enc: Encoding, sha256: str, format: Format, eot_id: int | None, field: str, lines: bool,
          split: dict[str, Any]) -> TokenFilesMeta:
    """The sidecar of a set or of one shard (`extra` has the shard's fields): a shard lists only the inputs
    that went into it, and counts no skipped documents (the set's index does)."""

    shard = "shard" in extra
    inputs = tuple(InputRecord(file.label if file.is_stdin else os.path.abspath(file.path), file.size,
                               int(counts.file_documents[i]), int(counts.file_tokens[i]),
                               0 if shard else summary.files[i].skipped)
                   for i, file in enumerate(files) if not shard or counts.file_documents[i])
    return TokenFilesMeta(
        encoding=enc.name, vocabulary_sha256=sha256, n_vocab=enc.n_vocab, dtype=summary.dtype, format=format,
        documents=counts.documents, tokens=counts.tokens, bytes=counts.bytes,
        skipped=0 if shard else summary.skipped, eot=eot_id is not None, eot_token=eot_id, field=field,
        lines=lines, inputs=inputs, bytebpe_version=__version__, created=utc_timestamp(),
        tokenizer_sha256=tokenizer_sha256(enc), extra={**split, **extra})


def count_files(
    paths: PathLike | Sequence[PathLike],
    *,
    encoding: str | Encoding,
    field: str = "text",
    lines: bool = False,
    workers: int | None = None,
    skip_bad: bool = False,
    progress: bool = False,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    errors: str = "strict",
    ignore_unknown: bool = False,
    stdin_format: str = "txt",
    budget: int | None = None,
    read: ReadOptions | None = None,
) -> EncodeSummary:
    """Like `encode_files` without writing anything: documents, bytes and tokens, per file and in total, and
    the most tokens of one document (`longest`); with ``budget=N`` also how many documents have more than N
    (`over_budget`), as a context window of N would have to cut them."""
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 0):
        raise ValueError(f"budget must be a non-negative int, got {budget!r}")
    # One set of reading options, as `read=` or as keywords (ReadOptions.resolve checks and refuses both).
    field, lines, skip_bad, errors, ignore_unknown, stdin_format = ReadOptions.resolve(
        read, field=field, lines=lines, skip_bad=skip_bad, errors=errors, ignore_unknown=ignore_unknown,
        stdin_format=stdin_format).keywords().values()
    files, enc, workers = _prepare(paths, encoding, field, workers, batch_bytes, lines=lines, errors=errors,
                                   ignore_unknown=ignore_unknown, stdin_format=stdin_format)
    summary = EncodeSummary(dtype=token_dtype(enc.max_token_value).name, budget=budget)
    _run(files, enc, summary, None, field=field, lines=lines, eot_id=None, workers=workers,
         skip_bad=skip_bad, errors=errors, progress=progress, batch_bytes=batch_bytes, desc="count")
    return summary


def iter_batches(
    files: Sequence[InputFile],
    *,
    field: str = "text",
    lines: bool = False,
    skip_bad: bool = False,
    on_skip: Callable[[BadDocumentError], None] | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    errors: str = "strict",
) -> Iterator[tuple[list[str], list[tuple[int, int]]]]:
    """Documents of `files` in batches of about `batch_bytes`: ``(texts, [(file index, line), ...])``.

    For tools that need every document's location (`bytebpe verify`); reads on the calling thread.
    """
    texts: list[str] = []
    where: list[tuple[int, int]] = []
    size = 0
    for index, file in enumerate(files):
        for text, line in file.documents(field=field, lines=lines, skip_bad=skip_bad, errors=errors,
                                         on_skip=on_skip):
            texts.append(text)
            where.append((index, line))
            size += len(text)
            if size >= batch_bytes:
                yield texts, where
                texts, where, size = [], [], 0
    if texts:
        yield texts, where


# ==== the pipeline ================================================================================


def _prepare(
    paths: PathLike | Sequence[PathLike], encoding: str | Encoding, field: str, workers: int | None,
    batch_bytes: int, *, lines: bool, errors: str, ignore_unknown: bool, stdin_format: str,
    default_workers: bool = True,
) -> tuple[list[InputFile], Encoding, Any]:
    """Every check that can be made before work starts; returns (input files, encoding, workers: None stays
    None unless `default_workers`, which makes it the thread pool's size)."""
    files = find_input_files(paths, ignore_unknown=ignore_unknown, stdin_format=stdin_format)
    check_read_options(files, lines=lines, errors=errors)
    if isinstance(encoding, str):
        enc = get_encoding(encoding)
    elif isinstance(encoding, Encoding):
        enc = encoding
    else:
        raise TypeError(f"encoding must be a name or an Encoding, got {type(encoding).__name__}")
    if not isinstance(field, str) or not field:
        raise ValueError("field must be a non-empty string")
    if workers is None and default_workers:
        workers = batching.pool_size()
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if batch_bytes < 1:
        raise ValueError(f"batch_bytes must be positive, got {batch_bytes!r}")
    return files, enc, workers


def _run(
    files: list[InputFile],
    enc: Encoding,
    summary: EncodeSummary,
    write: Callable[[Encoded], None] | None,
    *,
    field: str,
    lines: bool,
    eot_id: int | None,
    workers: int | None,
    skip_bad: bool,
    errors: str,
    progress: bool,
    batch_bytes: int,
    desc: str,
    engine: Engine = "local",
    ray_address: str | None = None,
    bos_id: int | None = None,
    max_tokens: int | None = None,
) -> None:
    """Read, encode (and `write`) every batch, filling `summary`; the reader is always stopped."""
    summary.files = [FileStats(file.path) for file in files]
    summary.ignored = list(getattr(files, "ignored", []))
    start = time.perf_counter()
    # Standard input has no size: the bar then counts bytes without a total.
    total = None if any(file.is_stdin for file in files) else sum(file.size for file in files)
    # The bar counts the input files' bytes (compressed, JSON-quoted); the summary the documents' text bytes.
    bar = progress_bar(progress, total=total, desc=f"{desc}, file bytes", unit="B", unit_scale=True, unit_divisor=1000,
                       file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

    def on_skip(index: int, error: BadDocumentError) -> None:      # called on the reader thread
        summary.skipped += 1
        summary.files[index].skipped += 1
        if len(summary.skipped_examples) < SKIPPED_EXAMPLES:
            summary.skipped_examples.append(str(error))

    def on_replace(notice: BadDocumentError, n_bytes: int) -> None:     # called on the reader thread
        summary.replaced += 1
        summary.replaced_bytes += n_bytes
        if len(summary.replaced_examples) < SKIPPED_EXAMPLES:
            summary.replaced_examples.append(str(notice))

    options = dict(field=field, lines=lines, eot_id=eot_id, bos_id=bos_id, workers=workers, skip_bad=skip_bad,
                   errors=errors, on_skip=on_skip, on_replace=on_replace, batch_bytes=batch_bytes,
                   max_tokens=max_tokens)
    if engine == "local":
        batches = _encode_locally(files, enc, **options)    # type: ignore[arg-type]
    else:
        batches = encode_input_files(files, enc, address=ray_address, **options)  # type: ignore[arg-type]
    shown = 0
    try:
        with contextlib.closing(batches):
            for batch in batches:
                if write is not None:
                    write(batch)
                _tally(summary, batch)
                if bar is not None:
                    bar.update(batch.read_position - shown)
                    shown = batch.read_position
                    elapsed = time.perf_counter() - start
                    bar.set_postfix_str(f"{summary.tokens / elapsed / 1e6:.2f} Mtok/s", refresh=False)
    finally:
        if bar is not None:
            bar.close()
    summary.seconds = time.perf_counter() - start


def _encode_locally(
    files: list[InputFile], enc: Encoding, *, field: str, lines: bool, eot_id: int | None, bos_id: int | None,
    workers: int,
    skip_bad: bool, errors: str, on_skip: Callable[[int, BadDocumentError], None],
    on_replace: Callable[[BadDocumentError, int], None], batch_bytes: int, max_tokens: int | None = None,
) -> Iterator[Encoded]:
    """The local engine: a reader thread parses batches, this thread encodes each on the shared pool."""
    reader = _BatchReader(files, field=field, lines=lines, skip_bad=skip_bad, errors=errors, on_skip=on_skip,
                          on_replace=on_replace, batch_bytes=batch_bytes)
    try:
        for batch in reader:
            # Special-token text is ordinary text in a dataset (as with tiktoken's encode_ordinary).
            ids, offsets = enc.encode_batch_to_numpy(batch.texts, num_threads=workers, disallowed_special=())
            # Free the text before the ids are copied (eot) and written: one huge document then peaks at its
            # text plus its ids, not plus two copies of them.
            batch.texts = []
            if max_tokens is not None:
                ids, offsets = cut_documents(ids, offsets, max_tokens)
            if eot_id is not None or bos_id is not None:
                ids, offsets = wrap_documents(ids, offsets, bos_id, eot_id)
            doc_file = np.repeat(np.array([run[0] for run in batch.file_runs], np.intp),
                                 [run[1] for run in batch.file_runs])
            yield Encoded(ids, offsets, np.asarray(batch.sizes, np.int64), doc_file, batch.read_position)
    finally:
        reader.close()


def _tally(summary: EncodeSummary, batch: Encoded) -> None:
    n_files = len(summary.files)
    summary.documents += len(batch.sizes)
    summary.bytes += int(batch.sizes.sum())
    summary.tokens += int(batch.offsets[-1])
    lengths = np.diff(batch.offsets)
    counts = (np.bincount(batch.doc_file, minlength=n_files),
              np.bincount(batch.doc_file, weights=batch.sizes, minlength=n_files),
              np.bincount(batch.doc_file, weights=lengths, minlength=n_files))
    longest = np.zeros(n_files, np.int64)
    np.maximum.at(longest, batch.doc_file, lengths)
    over = np.bincount(batch.doc_file, weights=lengths > summary.budget, minlength=n_files) \
        if summary.budget is not None else np.zeros(n_files)
    summary.longest = max(summary.longest, int(lengths.max(initial=0)))
    summary.over_budget += int(over.sum())
    for index in np.flatnonzero(counts[0]):
        stats = summary.files[index]
        stats.documents += int(counts[0][index])
        stats.bytes += int(counts[1][index])
        stats.tokens += int(counts[2][index])
        stats.longest = max(stats.longest, int(longest[index]))
        stats.over_budget += int(over[index])


def _utf8_length(text: str) -> int:
    # isascii() reads a flag of the str object: no scan, and most documents of most corpora are ASCII.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _BatchReader:
    """Reads batches on a thread of its own, at most PREFETCH_BATCHES ahead; iterate to get them in order.

    An error on the reader thread is raised again in the iterating thread. `close` stops the thread even
    when it is blocked on a full queue (after an error or Ctrl-C in the consumer).
    """

    _DONE = object()

    def __init__(self, files: list[InputFile], *, field: str, lines: bool, skip_bad: bool, errors: str,
                 on_skip: Callable[[int, BadDocumentError], None],
                 on_replace: Callable[[BadDocumentError, int], None], batch_bytes: int) -> None:
        self._files = files
        self._options = dict(field=field, lines=lines, skip_bad=skip_bad, errors=errors, on_replace=on_replace)
        self._on_skip = on_skip
        self._batch_bytes = batch_bytes
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=PREFETCH_BATCHES)
        self._stop = threading.Event()
        self._read_position = 0
        # A daemon, so that a stuck read can never keep the interpreter from exiting.
        self._thread = threading.Thread(target=self._work, name="bytebpe-reader", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[_Batch]:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:    # make room, so that a put blocked on the full queue returns and sees the stop
                self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)

    def _advance(self, n: int) -> None:
        self._read_position += n

    def _put(self, item: Any) -> bool:
        """Queue `item`, waiting for room; False when asked to stop meanwhile."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        try:
            for batch in self._batches():
                if not self._put(batch):
                    return
            self._put(self._DONE)
        except BaseException as error:  # handed to the consumer, which raises it
            self._put(error)

    def _batches(self) -> Iterator[_Batch]:
        texts: list[str] = []
        sizes: list[int] = []
        runs: list[tuple[int, int, int]] = []
        size = weight = 0
        for index, file in enumerate(self._files):
            count = run_size = 0
            on_skip = functools.partial(self._on_skip, index)
            for text, _line in file.documents(**self._options, on_skip=on_skip,  # type: ignore[arg-type]
                                              on_progress=self._advance):
                if self._stop.is_set():
                    return
                texts.append(text)
                length = _utf8_length(text)
                sizes.append(length)
                count += 1
                run_size += length
                # Each document also weighs a little on its own, so that a batch of many empty documents
                # is bounded too.
                weight += length + DOCUMENT_WEIGHT
                if weight >= self._batch_bytes:
                    runs.append((index, count, run_size))
                    size += run_size
                    yield _Batch(texts, runs, size, self._read_position, sizes)
                    texts, runs, size, weight, count, run_size, sizes = [], [], 0, 0, 0, 0, []
            if count:
                runs.append((index, count, run_size))
                size += run_size
        if texts:
            yield _Batch(texts, runs, size, self._read_position, sizes)
