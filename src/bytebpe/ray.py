"""Tokenizing Ray Data datasets with bytebpe: the ids of the local encoders, on every node of a cluster.

    import ray, bytebpe.ray
    ds = ray.data.read_json("s3://bucket/docs/")                   # any dataset with a text column
    ds = bytebpe.ray.tokenize(ds, "o200k_base", eot=True)           # + a "tokens" column: list<uint32>
    bytebpe.ray.write_token_files(ds_of_texts, "out/train", encoding="o200k_base")    # `bytebpe encode`'s files

`tokenize` runs `map_batches` with a callable class, so each Ray worker builds the encoding once: a named
encoding travels as its name (the worker loads its bundled vocabulary), any other by value. Batches go in and
out as Arrow tables; the token column is an Arrow list array made from the flat ids and offsets of
`encode_batch_to_numpy`, with no Python object per token (uint16 when the vocabulary fits, else uint32).

`write_token_files` streams a dataset of texts through `tokenize` to the driver, in the dataset's order, and
writes exactly the files `bytebpe encode` writes (PREFIX.tokens.npy or .bin, PREFIX.offsets.npy,
PREFIX.meta.json), committed together: for the same documents in the same order the arrays are byte for byte
the local command's. If the job fails, nothing that looks complete is left.

Ray is an optional dependency (`pip install 'bytebpe[ray]'`), imported only when these are called.
"""
from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._version import __version__
from .atomic_write import locked_output
from .encoded_documents import Encoded, cut_documents, document_token_id, select_documents, wrap_documents
from .encoding import Encoding, load
from .readers import BadDocumentError
from .registry import get_encoding
from .tokens.arrays import fsync_folder, token_dtype
from .tokens.layout import (OutputOptions, TokenFilesMeta, output_prefix, tokenizer_sha256, utc_timestamp,
                            vocabulary_sha256)
from .tokens.writer import SetCounts, TokenSetWriter, remove_stale_partial_files_of_set

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = ["encode_input_files", "settle_fsspec_http_import", "tokenize", "write_token_files"]

# The column of UTF-8 byte counts that write_token_files asks of the workers (for the metadata), dropped after.
_BYTES_COLUMN = "__bytebpe_bytes"


def _import_ray() -> Any:
    try:
        import ray.data
    except ImportError:
        raise ImportError("bytebpe.ray needs Ray Data: pip install 'bytebpe[ray]' (ray[data])") from None
    return ray


def settle_fsspec_http_import() -> None:
    """Import fsspec's http filesystem once, and cache its absence (None in sys.modules) when aiohttp is missing.

    Ray 2.60's file listing asks on several threads at once whether a path is on an HTTP filesystem, each
    importing `fsspec.implementations.http` and catching only ModuleNotFoundError: a thread that meets
    another's half-done import gets "cannot import name 'HTTPFileSystem'" and the read fails (seen in CI).
    Call it in the driver and, through ``ray.init(runtime_env={"worker_process_setup_hook":
    "bytebpe.ray.settle_fsspec_http_import"})``, in every worker.
    """
    import sys

    try:
        import fsspec.implementations.http  # noqa: F401
    except ImportError:
        sys.modules["fsspec.implementations.http"] = None    # every later import: ModuleNotFoundError at once


def _encoding(encoding: str | os.PathLike[str] | Encoding) -> Encoding:
    """An Encoding from a name, a file saved by Encoding.save / `bytebpe train`, or an Encoding."""
    if isinstance(encoding, Encoding):
        return encoding
    if isinstance(encoding, os.PathLike) or (isinstance(encoding, str) and Path(encoding).is_file()):
        return load(encoding)
    if isinstance(encoding, str):
        return get_encoding(encoding)
    raise TypeError(f"encoding must be a name, a saved encoding's path or an Encoding, got {type(encoding).__name__}")


class _TokenizeBatch:
    """What each Ray worker runs: built once per worker (so the encoding loads once), called per batch.

    The output keeps the input's columns (`keep_input`; `drop_text` leaves out the text column itself)."""

    def __init__(self, encoding: Encoding, column: str, output_column: str, eot_id: int | None,
                 allowed_special: Literal["all"] | Collection[str], num_threads: int, keep_input: bool,
                 count_bytes: bool, drop_text: bool = False) -> None:
        import pyarrow as pa

        self.encoding = encoding
        self.column, self.output_column = column, output_column
        self.eot_id, self.allowed_special, self.num_threads = eot_id, allowed_special, num_threads
        self.bos_id: int | None = None      # (encode_input_files sets it; tokenize and write_token_files: none)
        self.max_tokens: int | None = None  # (encode_input_files sets it: each document's first N ids)
        self.keep_input, self.count_bytes, self.drop_text = keep_input, count_bytes, drop_text
        value_type = pa.uint16() if encoding.max_token_value < 2**16 else pa.uint32()
        self.list_type, self.value_dtype = pa.list_(value_type), value_type.to_pandas_dtype()

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        if self.column not in batch.column_names:
            raise KeyError(f"bytebpe.ray.tokenize: the dataset has no column {self.column!r} "
                           f"(its columns: {', '.join(batch.column_names)})")
        texts = batch.column(self.column).to_pylist()
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"bytebpe.ray.tokenize: column {self.column!r} holds a "
                                f"{type(text).__name__} in row {row} of a batch, not a str")
        # Special-token text is ordinary text in a dataset (as `bytebpe encode` and encode_ordinary treat it),
        # unless allowed_special names tokens to encode as themselves.
        ids, offsets = self.encoding.encode_batch_to_numpy(
            texts, num_threads=self.num_threads, allowed_special=self.allowed_special, disallowed_special=())
        if self.max_tokens is not None:
            ids, offsets = cut_documents(ids, offsets, self.max_tokens)
        if self.eot_id is not None or self.bos_id is not None:
            ids, offsets = wrap_documents(ids, offsets, self.bos_id, self.eot_id)
        if offsets[-1] >= 2**31:
            raise ValueError("bytebpe.ray.tokenize: a batch holds 2**31 tokens or more; use a smaller batch_size")
        tokens = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)),
                                          pa.array(ids.astype(self.value_dtype, copy=False)), type=self.list_type)
        out = batch if self.keep_input else pa.table({})
        if self.drop_text and self.column in out.column_names:
            out = out.drop_columns([self.column])
        if self.output_column in out.column_names:
            out = out.drop_columns([self.output_column])
        out = out.append_column(self.output_column, tokens) if out.num_columns else pa.table(
            {self.output_column: tokens})
        if self.count_bytes:
            out = out.append_column(_BYTES_COLUMN, pa.array(
                [len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass")) for text in texts],
                pa.int64()))
        return out


def tokenize(
    ds: ray.data.Dataset,
    encoding: str | os.PathLike[str] | Encoding,
    *,
    column: str = "text",
    output_column: str = "tokens",
    eot: bool = False,
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    batch_size: int = 1024,
    num_cpus: float = 1,
    concurrency: int | tuple[int, int] | None = None,
) -> ray.data.Dataset:
    """`ds` with an `output_column` of token ids (Arrow list<uint16> or list<uint32>) for its `column` of text.

    Each document's ids are the local `Encoding`'s, special-token text encoded as ordinary text unless named in
    `allowed_special` ("all", or a set of tokens); ``eot=True`` appends the end-of-text id. `encoding` is a
    name (loaded on each worker), the path of a saved encoding, or an Encoding (sent by value unless it is a
    named one). Each worker runs `num_cpus` encoding threads; `concurrency` is Ray's (workers, or a range).
    """
    ray = _import_ray()
    enc = _encoding(encoding)
    return ds.map_batches(
        _TokenizeBatch,
        fn_constructor_kwargs=_worker_kwargs(enc, column, output_column, eot, allowed_special, num_cpus,
                                             keep_input=True, count_bytes=False),
        batch_format="pyarrow", batch_size=batch_size, num_cpus=num_cpus, compute=_actor_pool(ray, concurrency))


def _actor_pool(ray: Any, concurrency: int | tuple[int, int] | None) -> Any:
    """Ray's pool of workers for the callable class: `concurrency` workers, a (min, max) range, or autoscaling
    from one up to what the cluster has (None)."""
    if concurrency is None:
        return ray.data.ActorPoolStrategy(min_size=1, max_size=None)
    if isinstance(concurrency, int):
        return ray.data.ActorPoolStrategy(size=concurrency)
    low, high = concurrency
    return ray.data.ActorPoolStrategy(min_size=low, max_size=high)


def _worker_kwargs(enc: Encoding, column: str, output_column: str, eot: bool,
                   allowed_special: Literal["all"] | Collection[str], num_cpus: float, *, keep_input: bool,
                   count_bytes: bool, drop_text: bool = False) -> dict[str, Any]:
    if not isinstance(column, str) or not column or not isinstance(output_column, str) or not output_column:
        raise ValueError("column and output_column must be non-empty strings")
    if allowed_special != "all":
        allowed_special = frozenset(allowed_special)
        unknown = allowed_special - enc.special_tokens_set
        if unknown:
            raise ValueError(f"allowed_special names tokens {sorted(unknown)} that {enc.name} does not have")
    if num_cpus <= 0:
        raise ValueError(f"num_cpus must be positive, got {num_cpus!r}")
    return {"encoding": enc, "column": column, "output_column": output_column,
            "eot_id": document_token_id(enc, eot, "eot"), "allowed_special": allowed_special,
            "num_threads": max(1, int(num_cpus)), "keep_input": keep_input, "count_bytes": count_bytes,
            "drop_text": drop_text}


def write_token_files(
    ds: ray.data.Dataset,
    output: str | os.PathLike[str] | OutputOptions,
    *,
    encoding: str | os.PathLike[str] | Encoding,
    column: str = "text",
    eot: bool = False,
    format: Literal["npy", "bin"] = "npy",
    shard_tokens: int | None = None,
    batch_size: int = 1024,
    num_cpus: float = 1,
    concurrency: int | tuple[int, int] | None = None,
    fsync: bool = False,
) -> Any:
    """Tokenize `ds` on the cluster and write `bytebpe encode`'s files for it at `output` (a prefix, as there):
    the ids of every document in the dataset's order, the offsets, and the metadata sidecar — or with
    `shard_tokens` the same shards and index as ``bytebpe encode --shard-tokens``. Returns the
    `TokenFilesMeta` of the whole set. The files appear together when complete; a failure leaves none.
    `output` may be an `OutputOptions` holding the prefix, `format`, `shard_tokens` and `fsync` (a dataset is
    not split: its `val_fraction` must be unset)."""
    ray = _import_ray()
    out = OutputOptions.resolve(output, format=format, shard_tokens=shard_tokens, fsync=fsync)
    if out.val_fraction is not None:
        raise ValueError("write_token_files writes one set: split the dataset first (ds.split_proportionately) "
                         "and write each part, instead of val_fraction")
    output, format, shard_tokens, fsync = out.prefix, out.format, out.shard_tokens, out.fsync
    enc = _encoding(encoding)
    prefix = output_prefix(output, format)
    kwargs = _worker_kwargs(enc, column, "tokens", eot, frozenset(), num_cpus, keep_input=False, count_bytes=True)
    dtype = token_dtype(enc.max_token_value)
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    with locked_output(prefix):     # one job per output, or a clear refusal
        remove_stale_partial_files_of_set(prefix)
        sha256 = vocabulary_sha256(enc)
        input_files = list(ds.input_files())

        def meta_for(counts: SetCounts, extra: dict[str, Any]) -> TokenFilesMeta:
            return TokenFilesMeta(
                encoding=enc.name, vocabulary_sha256=sha256, n_vocab=enc.n_vocab, dtype=dtype.name, format=format,
                documents=counts.documents, tokens=counts.tokens, bytes=counts.bytes, skipped=0, eot=eot,
                eot_token=kwargs["eot_id"], field=column, lines=False, inputs=(), bytebpe_version=__version__,
                created=utc_timestamp(), tokenizer_sha256=tokenizer_sha256(enc),
                extra={"engine": "ray", "input_files": input_files, **extra})

        tokenized = ds.map_batches(_TokenizeBatch, fn_constructor_kwargs=kwargs, batch_format="pyarrow",
                                   batch_size=batch_size, num_cpus=num_cpus, compute=_actor_pool(ray, concurrency))
        # The files hold the documents in the dataset's order. A dataset keeps the DataContext it was made with
        # (shared with `ds`, not the global one), so the option is set there, and put back afterwards.
        options = tokenized.context.execution_options
        preserved = options.preserve_order
        options.preserve_order = True
        try:
            with TokenSetWriter(prefix, dtype=dtype, format=format, fsync=fsync, shard_tokens=shard_tokens) as out:
                for batch in tokenized.iter_batches(batch_format="pyarrow", batch_size=None):
                    lists = batch.column("tokens").combine_chunks()
                    offsets = lists.offsets.to_numpy().astype(np.int64)
                    ids = lists.values.to_numpy()[offsets[0]:offsets[-1]]
                    out.write(ids, offsets - offsets[0], np.asarray(batch.column(_BYTES_COLUMN).to_numpy(), np.int64))
                meta = out.finish(meta_for)
                out.commit()
                out.remove_earlier_output()
        finally:
            options.preserve_order = preserved
    if fsync:
        fsync_folder(Path(prefix).parent)
    return meta


# ==== `bytebpe encode --engine ray`: bytebpe's reader in Ray's read tasks ========================

# What a read task puts beside each document: its input file, what the row is (a document, or the notice of
# one skipped or with bytes replaced: those travel in order with the data and are counted by the driver),
# the notice's text and bytes, and how far into its file the reader was when the block was cut (progress).
_FILE, _KIND, _NOTE, _AMOUNT, _POSITION = "__bytebpe_file", "__bytebpe_kind", "__bytebpe_note", \
    "__bytebpe_amount", "__bytebpe_position"
_DOCUMENT, _SKIPPED, _REPLACED = 0, 1, 2


def _read_input_file(index: int, file: Any, options: dict[str, Any], batch_bytes: int) -> Iterator[pa.Table]:
    """A read task: the documents of one input file, read as the local command reads them, as Arrow tables of
    about `batch_bytes` of text. A bad document raises `BadDocumentError` naming file and line, unless
    skipped: then it is a row of kind _SKIPPED carrying the message."""
    import pyarrow as pa

    position = 0
    rows: dict[str, list[Any]] = {"text": [], _KIND: [], _NOTE: [], _AMOUNT: []}
    weight = 0

    def add(text: str, kind: int, note: str | None = None, amount: int = 0) -> None:
        rows["text"].append(text)
        rows[_KIND].append(kind)
        rows[_NOTE].append(note)
        rows[_AMOUNT].append(amount)

    def advance(n: int) -> None:
        nonlocal position
        position += n

    def table() -> pa.Table:
        n = len(rows["text"])
        return pa.table({"text": pa.array(rows["text"], pa.large_string()),
                         _FILE: pa.array(np.full(n, index, np.int32)),
                         _KIND: pa.array(rows[_KIND], pa.int8()), _NOTE: pa.array(rows[_NOTE], pa.string()),
                         _AMOUNT: pa.array(rows[_AMOUNT], pa.int64()),
                         _POSITION: pa.array(np.full(n, position, np.int64))})

    for text, _line in file.documents(**options, on_skip=lambda error: add("", _SKIPPED, str(error)),
                                      on_replace=lambda notice, n: add("", _REPLACED, str(notice), n),
                                      on_progress=advance):
        add(text, _DOCUMENT)
        weight += len(text) + 64
        if weight >= batch_bytes:
            yield table()
            rows = {key: [] for key in rows}
            weight = 0
    if rows["text"]:
        yield table()


def _tokenize_in_task(batch: pa.Table, tokenizer: _TokenizeBatch) -> pa.Table:
    return tokenizer(batch)


def _input_files_datasource(files: list[Any], options: dict[str, Any], batch_bytes: int) -> Any:
    """A Ray Data datasource of `files`, one read task per file, in input order."""
    import functools

    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class InputFilesDatasource(Datasource):     # defined here: Ray is imported only when used
        def estimate_inmemory_data_size(self) -> int | None:
            return sum(file.size for file in files) or None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[ReadTask]:
            return [ReadTask(functools.partial(_read_input_file, index, file, options, batch_bytes),
                             BlockMetadata(num_rows=None, size_bytes=file.size, input_files=[str(file.path)],
                                           exec_stats=None))
                    for index, file in enumerate(files)]

        def get_name(self) -> str:
            return "bytebpe_read"

    return InputFilesDatasource()


def encode_input_files(
    files: list[Any],
    enc: Encoding,
    *,
    address: str | None,
    field: str,
    lines: bool,
    eot_id: int | None,
    workers: int | None,
    skip_bad: bool,
    errors: str,
    on_skip: Any,
    on_replace: Any,
    batch_bytes: int,
    bos_id: int | None = None,
    max_tokens: int | None = None,
) -> Iterator[Any]:
    """The Ray engine of `encode_files` (``engine="ray"``): `encoded_documents.Encoded` batches, in input order.

    Ray's read tasks run bytebpe's own reader (so the documents, and the errors naming file and line, are
    the local command's), actors encode (`workers` of them, or as many as the cluster offers), and the
    driver — this generator — receives the ids in order. Skipped documents and replaced bytes travel as rows
    beside the documents and are counted here, across all workers. Connects to the cluster at `address`
    (or the one ``ray.init()`` finds, or a new local one) unless Ray is already initialized; a cluster it
    started is shut down at the end.
    """
    import logging

    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    context = ray.data.DataContext.get_current()
    saved = (context.enable_progress_bars, context.print_on_execution_start, context.execution_options.preserve_order)
    data_logger = logging.getLogger("ray.data")
    level = data_logger.level
    try:
        # The command draws its own progress bar and summary: Ray Data's bars and notes would interleave.
        context.enable_progress_bars = context.print_on_execution_start = False
        data_logger.setLevel(logging.CRITICAL)   # a worker's error is raised here, not also logged
        context.execution_options.preserve_order = True     # the files hold the documents in input order
        options = {"field": field, "lines": lines, "skip_bad": skip_bad, "errors": errors}
        # Encoding runs in the read tasks themselves (Ray fuses a task-based map_batches into the read), not in
        # an actor pool: actors holding every CPU would starve the read tasks feeding them (seen: a job on
        # 2 CPUs with 2 actors waited forever). A named encoding travels as its name and each worker process
        # loads it once (the registry's cache); `workers` caps the tasks running at once.
        tokenizer = _TokenizeBatch(**_worker_kwargs(enc, "text", "tokens", False, frozenset(), 1, keep_input=True,
                                                    count_bytes=True, drop_text=True))
        tokenizer.eot_id, tokenizer.bos_id, tokenizer.max_tokens = eot_id, bos_id, max_tokens
        ds = ray.data.read_datasource(_input_files_datasource(files, options, batch_bytes), concurrency=workers)
        tokenized = ds.map_batches(_tokenize_in_task, fn_kwargs={"tokenizer": tokenizer}, batch_format="pyarrow",
                                   batch_size=None)
        file_starts = np.concatenate([[0], np.cumsum([file.size for file in files])])
        try:
            for table in tokenized.iter_batches(batch_format="pyarrow", batch_size=None):
                if not table.num_rows:
                    continue
                kind = table.column(_KIND).to_numpy()
                file_index = table.column(_FILE).to_numpy().astype(np.intp)
                if (kind != _DOCUMENT).any():
                    notes, amounts = table.column(_NOTE).to_pylist(), table.column(_AMOUNT).to_numpy()
                    for row in np.flatnonzero(kind != _DOCUMENT):
                        if kind[row] == _SKIPPED:
                            on_skip(int(file_index[row]), notes[row])
                        else:
                            on_replace(notes[row], int(amounts[row]))
                lists = table.column("tokens").combine_chunks()
                offsets = lists.offsets.to_numpy().astype(np.int64)
                ids = lists.values.to_numpy()[offsets[0]:offsets[-1]]
                position = int(file_starts[file_index[-1]] + table.column(_POSITION).to_numpy()[-1])
                batch = Encoded(ids, offsets - offsets[0], table.column(_BYTES_COLUMN).to_numpy().astype(np.int64),
                                file_index, position)
                yield batch if (kind == _DOCUMENT).all() else select_documents(batch, kind == _DOCUMENT)
        except Exception as error:
            # Ray wraps an error raised on a worker; a bad document is shown as the local command shows it.
            cause = _root_cause(error)
            if isinstance(cause, BadDocumentError):
                raise cause from None
            raise
    finally:
        context.enable_progress_bars, context.print_on_execution_start, context.execution_options.preserve_order \
            = saved
        data_logger.setLevel(level)
        if started:
            ray.shutdown()


def _root_cause(error: BaseException) -> BaseException:
    """The exception a worker raised, under the layers Ray wraps it in."""
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        inner = getattr(error, "cause", None) or error.__cause__
        if not isinstance(inner, BaseException):
            break
        error = inner
    return error
