"""An encoded dataset on disk: its file names, the metadata sidecar that says what made it, loading it back.

`bytebpe encode -o PREFIX` / `encode_files(output=PREFIX)` write three files, committed together:

    PREFIX.tokens.npy (or PREFIX.bin)   every document's ids, back to back (uint16 or uint32)
    PREFIX.offsets.npy                  int64, documents + 1: document i is tokens[offsets[i]:offsets[i + 1]]
    PREFIX.meta.json                    `TokenFilesMeta`: encoding, vocabulary sha256, counts, inputs, ...

or, with ``--shard-tokens N`` (`tokens.writer` packs them), numbered shards that are each such a set
(``PREFIX.00000.tokens.npy``, ...) and ``PREFIX.index.json`` (`ShardIndex`): the whole set's metadata and
the list of shards. `load_token_files` loads one set (or shard), `load_token_shards` a sharded one.

Ids mean nothing without the vocabulary that made them, so the sidecar records the encoding's name and the
sha256 of its mergeable ranks in tiktoken's text format (`vocabulary_sha256`): for the named encodings that is
the sha256 of the official `.tiktoken` file, so the record can be checked against tiktoken's own pins.
"""
from __future__ import annotations

import bisect
import datetime
import functools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from .. import registry
from ..progress import counted
from ..vocab_io import dump_tiktoken_bpe_bytes

if TYPE_CHECKING:
    from ..encoding import Encoding

__all__ = [
    "EncodingMismatchError",
    "InputRecord",
    "OutputOptions",
    "OutputPaths",
    "ShardIndex",
    "ShardRecord",
    "TokenFiles",
    "TokenFilesMeta",
    "TokenShards",
    "check_encoding",
    "tokenizer_sha256",
    "load_token_files",
    "load_token_shards",
    "load_tokens",
    "output_paths",
    "output_prefix",
    "prefix_of",
    "ranks_sha256",
    "read_index",
    "read_meta",
    "shard_prefix",
    "utc_timestamp",
    "vocabulary_sha256",
]

Format = Literal["npy", "bin"]
META_SUFFIX = ".meta.json"
INDEX_SUFFIX = ".index.json"
# The sidecar's own format: a reader refuses a newer one rather than misread it.
META_VERSION = 1
# Suffixes of the files of a set, longest first: any of them names the set (for decode, info, the loader).
_SET_SUFFIXES = (".tokens.npy", ".offsets.npy", META_SUFFIX, INDEX_SUFFIX, ".bin")


@dataclass(frozen=True)
class OutputOptions:
    """Where and how a run writes its token files: the one definition of these options, their defaults and
    checks, taken by `encode_files` as its ``output=`` (instead of a prefix and the keywords of its own) and
    built once by the command line (-o, --format, --shard-tokens, --val-fraction, --seed, --fsync)."""

    prefix: str | os.PathLike[str]          # -o PREFIX (or the name of one of the set's files)
    format: Format = "npy"                  # "npy", or "bin": nanoGPT's raw PREFIX.bin
    shard_tokens: int | None = None         # numbered shards of at most this many tokens, and an index
    val_fraction: float | None = None       # each document goes to PREFIX.val.* with this probability
    seed: int = 0                           # the seed of that split
    fsync: bool = False                     # flush the files and their folder to disk before committing

    def __post_init__(self) -> None:
        if self.format not in ("npy", "bin"):
            raise ValueError(f"format must be 'npy' or 'bin', got {self.format!r}")
        if self.val_fraction is not None and not (isinstance(self.val_fraction, (int, float))
                                                  and not isinstance(self.val_fraction, bool)
                                                  and 0 < self.val_fraction < 1):
            raise ValueError(f"val_fraction must be a number between 0 and 1 (exclusive), got {self.val_fraction!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        if self.shard_tokens is not None and (not isinstance(self.shard_tokens, int)
                                              or isinstance(self.shard_tokens, bool) or self.shard_tokens < 1):
            raise ValueError(f"shard_tokens must be a positive int, got {self.shard_tokens!r}")
        if not isinstance(self.fsync, bool):
            raise TypeError(f"fsync must be a bool, got {type(self.fsync).__name__}")

    @classmethod
    def resolve(cls, output: str | os.PathLike[str] | OutputOptions, **given: Any) -> OutputOptions:
        """An entry point's options: `output` itself when it is an OutputOptions (then the keywords `given`
        must be left at their defaults), else `output` as the prefix with the keywords."""
        if not isinstance(output, OutputOptions):
            return cls(output, **given)
        defaults = cls(output.prefix)
        changed = [name for name, value in given.items() if value != getattr(defaults, name)]
        if changed:
            raise TypeError(f"give the output options in output=OutputOptions(...) or as keywords, not both "
                            f"({changed[0]}= was given too)")
        return output


class OutputPaths(NamedTuple):
    tokens: Path        # PREFIX.tokens.npy or PREFIX.bin
    offsets: Path       # PREFIX.offsets.npy
    meta: Path          # PREFIX.meta.json


def output_prefix(output: str | os.PathLike[str], format: Format = "npy") -> str:
    """The prefix that `-o OUTPUT` / `output=` names: OUTPUT itself, less the name of a file of the set.

    A trailing ``.tokens.npy``, ``.offsets.npy`` or ``.meta.json``, or the tokens file's own suffix (``.bin``
    for format "bin", ``.npy`` for "npy"), is dropped, so that a suffix is never doubled: ``-o val.bin --format
    bin`` writes val.bin. The other format's suffix is an error (``-o val.bin`` with format "npy"), and so is
    a folder (an existing one, or a name ending in a separator): it says what to give instead.

    >>> output_prefix("out/val.bin", "bin"), output_prefix("out/val.npy"), output_prefix("out/val.v2")
    ('out/val', 'out/val', 'out/val.v2')
    """
    text = os.fspath(output)
    if not text:
        raise ValueError("output must not be empty: give a prefix such as out/train")
    if text.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)) or os.path.isdir(text):
        example = os.path.join(text.rstrip("/" + os.sep) or "/", "train")
        raise ValueError(f"output {text!r} is a folder: give a prefix for the file names in it, e.g. {example} "
                         f"(writes {example}{_tokens_suffix(format)}, {example}.offsets.npy and "
                         f"{example}{META_SUFFIX})")
    own = (".tokens.npy", ".offsets.npy", META_SUFFIX, f".{format}")   # longest first
    other = ".npy" if format == "bin" else ".bin"
    lowered = text.lower()
    suffix = next((suffix for suffix in own if lowered.endswith(suffix)), "")
    if not suffix and lowered.endswith(other):
        raise ValueError(f"output {text!r} ends in {other}, but the format is {format}: give --format "
                         f"{other[1:]} (format={other[1:]!r}), or a prefix without {other}")
    prefix = text[: len(text) - len(suffix)]
    if not os.path.basename(prefix):
        raise ValueError(f"output {text!r} has no name before {suffix}: give a prefix such as "
                         f"{os.path.join(os.path.dirname(prefix), 'train')}")
    return prefix


def _tokens_suffix(format: Format) -> str:
    return ".tokens.npy" if format == "npy" else ".bin"


def output_paths(prefix: str | os.PathLike[str], format: Format = "npy") -> OutputPaths:
    """The files of the set named `prefix`, taken as is (`output_prefix` applies `-o`'s rules first)."""
    prefix = os.fspath(prefix)
    return OutputPaths(Path(prefix + _tokens_suffix(format)), Path(f"{prefix}.offsets.npy"), Path(prefix + META_SUFFIX))


def shard_prefix(prefix: str, number: int) -> str:
    """The prefix of shard `number` of the set `prefix`: five digits at least, so that names sort in order
    up to 100,000 shards (the index lists them in order whatever their number).

    >>> shard_prefix("out/train", 7)
    'out/train.00007'
    """
    return f"{prefix}.{number:05d}"


def prefix_of(path: str | os.PathLike[str]) -> str:
    """The prefix of a set from its prefix, the name `-o` was given, or the name of any of its files.

    A name that is not a file is first read as `-o` reads it (`output_prefix`, either format) and taken if
    that set's metadata exists; otherwise a trailing name of a file of the set is dropped.

    >>> prefix_of("out/train.tokens.npy"), prefix_of("out/train.bin"), prefix_of("out/train")
    ('out/train', 'out/train', 'out/train')
    """
    text = os.fspath(path)
    if not os.path.isfile(text):
        for format in ("npy", "bin"):
            try:
                prefix = output_prefix(text, format)     # type: ignore[arg-type]
            except ValueError:
                continue
            if os.path.isfile(prefix + META_SUFFIX) or os.path.isfile(prefix + INDEX_SUFFIX):
                return prefix
    for suffix in _SET_SUFFIXES:
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def utc_timestamp() -> str:
    """Now, as the sidecars record it: UTC, ISO 8601, to the second ("2026-11-30T11:35:00Z")."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


# ==== the vocabulary's fingerprint ================================================================


def vocabulary_sha256(enc: Encoding) -> str:
    """sha256 of `enc`'s mergeable ranks written as a `.tiktoken` file (`ranks_sha256`), once per Encoding.

    For an encoding the registry built, that is the sha256 pinned for its `.tiktoken` file (`_pinned_sha256`),
    taken as is: hashing the ranks again costs 0.1 s (cl100k_base) to 0.2 s (o200k_base), a quarter of a
    `bytebpe encode` run on a few megabytes.
    """
    cached = enc.__dict__.get("_vocabulary_sha256")
    if cached is None:
        cached = _pinned_sha256(enc) or ranks_sha256(enc._mergeable_ranks)
        enc.__dict__["_vocabulary_sha256"] = cached
    return cached


def tokenizer_sha256(enc: Encoding) -> str:
    """sha256 of what decides `enc`'s ids and their text: its vocabulary (`vocabulary_sha256`; for a
    tokenizer.json, the whole file), split pattern, special tokens and normalizer — not its name, so the same
    tokenizer loaded from another file, or under another name, has the same digest."""
    import hashlib      # imported where needed, as in vocab_io

    cached = enc.__dict__.get("_tokenizer_sha256")
    if cached is None:
        described = json.dumps({"vocabulary": vocabulary_sha256(enc), "pattern": enc._pat_str,
                                "special_tokens": sorted(enc._special_tokens.items()),
                                "normalizer": enc.normalizer}, ensure_ascii=False, sort_keys=True)
        cached = hashlib.sha256(described.encode("utf-8", "surrogatepass")).hexdigest()
        enc.__dict__["_tokenizer_sha256"] = cached
    return cached


def ranks_sha256(mergeable_ranks: Mapping[bytes, int]) -> str:
    """sha256 of `mergeable_ranks` written as a `.tiktoken` file (base64 token, space, rank; by rank)."""
    import hashlib      # imported where needed, as in vocab_io

    return hashlib.sha256(dump_tiktoken_bpe_bytes(mergeable_ranks)).hexdigest()


def _pinned_sha256(enc: Encoding) -> str | None:
    """The pinned sha256 of the `.tiktoken` file with `enc`'s ranks, if the registry built `enc`; else None.

    The registry checked what it loaded against that pin (the bundled copies against digests recorded from
    files that matched it), and an official file is byte for byte what `ranks_sha256` hashes (tested).
    """
    # Only the built-in names have pins (an encoding another package declares is registered too, unpinned).
    if enc.name not in registry.ENCODING_SPECS or registry.registered_encoding(enc.name) is not enc:
        return None
    # `bundled` names the .tiktoken file holding the same ranks (gpt2's data gym files give r50k_base's).
    filename = f"{registry.encoding_spec(enc.name).bundled}.tiktoken"
    return next((file.sha256 for spec in registry.ENCODING_SPECS.values() for file in spec.files
                 if file.filename == filename), None)


# ==== the sidecar =================================================================================


@dataclass(frozen=True)
class InputRecord:
    """One input file of the set, as it was when encoded."""

    path: str           # absolute
    size: int           # bytes on disk
    documents: int
    tokens: int
    skipped: int = 0


@dataclass(frozen=True)
class TokenFilesMeta:
    """What `PREFIX.meta.json` records about a set of token files."""

    encoding: str               # the Encoding's name ("cl100k_base", or a trained tokenizer's)
    vocabulary_sha256: str      # see `vocabulary_sha256`
    n_vocab: int
    dtype: str                  # "uint16" or "uint32"
    format: str                 # "npy" (PREFIX.tokens.npy) or "bin" (PREFIX.bin)
    documents: int
    tokens: int                 # end-of-text ids included
    bytes: int                  # UTF-8 bytes of the documents' text
    skipped: int                # bad documents left out (--skip-bad)
    eot: bool                   # whether every document ends with the end-of-text id
    eot_token: int | None       # that id when `eot`
    field: str                  # the JSONL field / Parquet column read
    lines: bool                 # .txt files: one document per line
    inputs: tuple[InputRecord, ...]
    bytebpe_version: str
    created: str                # UTC, ISO 8601 ("2026-11-30T11:35:00Z")
    meta_version: int = META_VERSION
    # What decides the ids, whatever the encoding is called (`tokenizer_sha256`); None in older sidecars.
    tokenizer_sha256: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)   # keys this version does not know, kept as read

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        record.update(record.pop("extra"))
        return record

    def to_json(self) -> str:
        return json.dumps(self.to_record(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "metadata") -> TokenFilesMeta:
        """Parse a sidecar; a ValueError names `source` and what is wrong."""
        return cls.from_record(_versioned_record(text, source, "meta_version", META_VERSION), source)

    @classmethod
    def from_record(cls, record: dict[str, Any], source: str = "metadata") -> TokenFilesMeta:
        known = {f.name for f in fields(cls)} - {"extra"}
        optional = {f.name for f in fields(cls) if f.default is not MISSING}
        missing = sorted(known - record.keys() - optional)
        if missing:
            raise ValueError(f"{source}: missing {', '.join(missing)}")
        values = {name: record[name] for name in known if name in record}
        try:
            values["inputs"] = tuple(InputRecord(**item) for item in record["inputs"])
        except TypeError as error:
            raise ValueError(f"{source}: bad 'inputs' entry ({error})") from None
        for name in ("n_vocab", "documents", "tokens", "bytes", "skipped"):
            if not isinstance(values[name], int) or values[name] < 0:
                raise ValueError(f"{source}: {name} must be a non-negative integer, got {values[name]!r}")
        for name in ("encoding", "vocabulary_sha256", "field", "bytebpe_version", "created"):
            if not isinstance(values[name], str):
                raise ValueError(f"{source}: {name} must be a string, got {values[name]!r}")
        if not isinstance(values.get("tokenizer_sha256"), (str, type(None))):
            raise ValueError(f"{source}: tokenizer_sha256 must be a string, got {values['tokenizer_sha256']!r}")
        if not isinstance(values["eot"], bool) or not isinstance(values["lines"], bool):
            raise ValueError(f"{source}: eot and lines must be true or false")
        if values["dtype"] not in ("uint16", "uint32") or values["format"] not in ("npy", "bin"):
            raise ValueError(f"{source}: unknown dtype {values['dtype']!r} or format {values['format']!r}")
        return cls(**values, extra={k: v for k, v in record.items() if k not in known})

    def describe(self) -> str:
        """Human-readable lines: what `bytebpe info` prints."""
        eot = f"yes (id {self.eot_token})" if self.eot else "no"
        lines = [
            f"encoding           {self.encoding} ({self.n_vocab:,} ids)",
            f"vocabulary sha256  {self.vocabulary_sha256}",
            *([f"tokenizer sha256   {self.tokenizer_sha256}"] if self.tokenizer_sha256 else []),
            f"tokens             {self.tokens:,} {self.dtype} ({self.format})",
            f"documents          {self.documents:,}" + (f" ({self.skipped:,} bad ones skipped)" if self.skipped else ""),
            f"bytes              {self.bytes:,} of UTF-8 text"
            + (f" ({self.bytes / self.tokens:.3f} bytes/token)" if self.tokens else ""),
            f"end-of-text ids    {eot}",
            *([f"beginning ids      yes (id {self.extra['bos_token']})"] if "bos_token" in self.extra else []),
            *([f"cut to             the first {counted(self.extra['max_tokens'], 'token')} of each document"]
              if "max_tokens" in self.extra else []),
            f"made by            bytebpe {self.bytebpe_version} at {self.created}",
            f"inputs             {counted(len(self.inputs), 'file')}" + (":" if self.inputs else ""),
        ]
        # Standard input has no size on disk (its record's size is 0): only what was read from it is known.
        lines.extend(f"  {item.path} (" + ("" if item.path == "<stdin>" else f"{counted(item.size, 'byte')}, ")
                     + f"{counted(item.documents, 'document')})" for item in self.inputs)
        return "\n".join(lines)


def _versioned_record(text: str, source: str, version_key: str, newest: int) -> dict[str, Any]:
    """The JSON object in `text`, whose `version_key` must be a version this bytebpe reads (up to `newest`)."""
    try:
        record = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{source}: not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{source}: expected a JSON object")
    version = record.get(version_key)
    if not isinstance(version, int) or version > newest:
        raise ValueError(f"{source}: {version_key} {version!r} is not one this bytebpe reads (up to {newest}); "
                         f"upgrade bytebpe")
    return record


def read_meta(prefix: str | os.PathLike[str]) -> TokenFilesMeta | None:
    """The sidecar of the set `prefix` (or of any of its files); None when it has none (made by a bytebpe
    that wrote no metadata)."""
    path = Path(prefix_of(prefix) + META_SUFFIX)
    text = _read_text_if_there(path)
    return None if text is None else TokenFilesMeta.from_json(text, str(path))


def _read_text_if_there(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from None


class EncodingMismatchError(ValueError):
    """Token files were made with another vocabulary than the one about to read them."""


def check_encoding(meta: TokenFilesMeta, enc: Encoding, where: str = "this set of token files") -> None:
    """Raise EncodingMismatchError unless `enc` is the tokenizer recorded in `meta`: the same digest of what
    decides the ids (`tokenizer_sha256`), whatever its name; for sidecars older than that digest, the same
    name and vocabulary."""
    if meta.tokenizer_sha256 is not None:
        if tokenizer_sha256(enc) != meta.tokenizer_sha256:
            raise EncodingMismatchError(
                f"{where} was made with {meta.encoding!r} (tokenizer sha256 {meta.tokenizer_sha256}), but "
                f"{enc.name!r} is another tokenizer (vocabulary, pattern, special tokens or normalizer differ: "
                f"{tokenizer_sha256(enc)})")
        return
    if enc.name != meta.encoding:
        raise EncodingMismatchError(f"{where} was made with {meta.encoding!r}, not {enc.name!r}")
    if vocabulary_sha256(enc) != meta.vocabulary_sha256:
        raise EncodingMismatchError(
            f"{where} was made with a vocabulary {meta.encoding!r} of sha256 {meta.vocabulary_sha256}, but "
            f"this {enc.name!r} has {vocabulary_sha256(enc)}")


# ==== loading =====================================================================================


@dataclass(frozen=True)
class TokenFiles:
    """A set of token files, loaded: arrays memory-mapped (read-only), metadata parsed.

    >>> data = bytebpe.load_token_files("out/train")            # doctest: +SKIP
    >>> data.document(0), data.meta.encoding                    # doctest: +SKIP
    (memmap([9906, 1917], dtype=uint32), 'cl100k_base')
    """

    tokens: np.ndarray          # 1-D uint16/uint32, memory-mapped
    offsets: np.ndarray         # 1-D int64, documents + 1, memory-mapped
    meta: TokenFilesMeta
    paths: OutputPaths

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def document(self, index: int) -> np.ndarray:
        """The ids of document `index` (negative counts from the end)."""
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"document {index} is out of range: there are {n}")
        index %= n
        return self.tokens[int(self.offsets[index]):int(self.offsets[index + 1])]


def split_parts(prefix: str) -> list[str]:
    """The prefixes of the parts a split run (``val_fraction``) wrote under `prefix`: PREFIX.train and
    PREFIX.val, those there (whole or sharded)."""
    parts = []
    for part in ("train", "val"):
        name = f"{prefix}.{part}"
        meta = read_meta(name)
        index = read_index(name) if meta is None else None
        if (meta or (index.meta if index else None)) is not None and \
                (meta or index.meta).extra.get("split") == part:  # type: ignore[union-attr]
            parts.append(name)
    return parts


def load_token_files(prefix: str | os.PathLike[str]) -> TokenFiles:
    """Load the set written by `encode_files(output=prefix)` (or name any of its files).

    Checks that the arrays are what the sidecar says (dtype, lengths); a set without a sidecar (made by a
    bytebpe that wrote none) is a FileNotFoundError saying so.
    """
    name = prefix_of(prefix)
    meta = read_meta(name)
    if meta is None and os.path.isfile(name + INDEX_SUFFIX):
        raise FileNotFoundError(f"{name} was written in shards ({name + INDEX_SUFFIX}): load them with "
                                f"load_tokens({name!r}) or load_token_shards({name!r}), or one shard with "
                                f"load_token_files({shard_prefix(name, 0)!r})")
    if meta is None and split_parts(name):
        raise FileNotFoundError(f"{name} was split into {' and '.join(split_parts(name))} (val_fraction): load "
                                f"each of them, or both with load_tokens({name!r})")
    if meta is None:
        raise FileNotFoundError(f"{name + META_SUFFIX} not found: load_token_files needs the metadata that "
                                f"bytebpe encode writes beside the tokens (older outputs have none; load "
                                f"them with numpy)")
    paths = output_paths(name, meta.format)  # type: ignore[arg-type]  # checked in from_json
    if meta.format == "npy":
        tokens = np.load(paths.tokens, mmap_mode="r")
    elif meta.tokens:
        tokens = np.memmap(paths.tokens, dtype=np.dtype(meta.dtype).newbyteorder("<"), mode="r")
    else:   # np.memmap refuses an empty file
        paths.tokens.stat()
        tokens = np.zeros(0, np.dtype(meta.dtype))
    offsets = np.load(paths.offsets, mmap_mode="r")
    check_arrays(meta, tokens, offsets, name)
    return TokenFiles(tokens, offsets, meta, paths)


def check_arrays(meta: TokenFilesMeta, tokens: np.ndarray, offsets: np.ndarray, where: str) -> None:
    """A ValueError unless the arrays have the shapes and dtypes `meta` records (no other run's files)."""
    problems = []
    if tokens.ndim != 1 or tokens.dtype != np.dtype(meta.dtype) or len(tokens) != meta.tokens:
        problems.append(f"tokens are {tokens.dtype} {tokens.shape}, recorded {meta.dtype} ({meta.tokens},)")
    if offsets.ndim != 1 or offsets.dtype != np.int64 or len(offsets) != meta.documents + 1:
        problems.append(f"offsets are {offsets.dtype} {offsets.shape}, recorded int64 ({meta.documents + 1},)")
    if problems:
        raise ValueError(f"{where}: the files do not match {where + META_SUFFIX}: " + "; ".join(problems))


# ==== shards ======================================================================================

# The index's own format, as META_VERSION is the sidecar's.
INDEX_VERSION = 1


@dataclass(frozen=True)
class ShardRecord:
    """One shard of a sharded set, as the index lists it."""

    name: str               # its prefix's file name, in the index's folder ("train.00000")
    documents: int          # spans: a document cut over shards counts in each
    tokens: int
    bytes: int              # UTF-8 bytes of the documents that start in it
    first_document: int     # the set's index of its first span's document
    continues: bool         # its first span continues the previous shard's last one


@dataclass(frozen=True)
class ShardIndex:
    """What ``PREFIX.index.json`` records: the whole set's metadata (its counts count every document once),
    the most tokens a shard may hold, and the shards in order."""

    meta: TokenFilesMeta
    shard_tokens: int
    shards: tuple[ShardRecord, ...]

    def to_json(self) -> str:
        record = self.meta.to_record()
        record.update(index_version=INDEX_VERSION, shard_tokens=self.shard_tokens,
                      shards=[asdict(shard) for shard in self.shards])
        return json.dumps(record, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "index") -> ShardIndex:
        """Parse an index; a ValueError names `source` and what is wrong."""
        record = _versioned_record(text, source, "index_version", INDEX_VERSION)
        del record["index_version"]
        shard_tokens, shards = record.pop("shard_tokens", None), record.pop("shards", None)
        if not isinstance(shard_tokens, int) or shard_tokens < 1 or not isinstance(shards, list):
            raise ValueError(f"{source}: needs a positive shard_tokens and a list of shards")
        try:
            records = tuple(ShardRecord(**item) for item in shards)
        except TypeError as error:
            raise ValueError(f"{source}: bad 'shards' entry ({error})") from None
        meta = TokenFilesMeta.from_record(record, source)
        if sum(shard.tokens for shard in records) != meta.tokens:
            raise ValueError(f"{source}: the shards hold {sum(s.tokens for s in records)} tokens, the set "
                             f"{meta.tokens}")
        return cls(meta, shard_tokens, records)

    def describe(self) -> str:
        lines = [self.meta.describe(),
                 f"shards             {len(self.shards):,} of at most {self.shard_tokens:,} tokens"]
        lines.extend(f"  {shard.name}: {counted(shard.tokens, 'token')}, {counted(shard.documents, 'document')}"
                     + (" (the first continues the previous shard's last)" if shard.continues else "")
                     for shard in self.shards)
        return "\n".join(lines)


def read_index(prefix: str | os.PathLike[str]) -> ShardIndex | None:
    """The index of the sharded set `prefix`; None when there is none."""
    path = Path(prefix_of(prefix) + INDEX_SUFFIX)
    text = _read_text_if_there(path)
    return None if text is None else ShardIndex.from_json(text, str(path))


@dataclass(frozen=True)
class TokenShards:
    """A sharded set, loaded: its index and every shard (`TokenFiles`, arrays memory-mapped).

    >>> data = bytebpe.load_token_shards("out/train")              # doctest: +SKIP
    >>> len(data.shards), data.index.meta.tokens                    # doctest: +SKIP
    (12, 1200000000)
    """

    index: ShardIndex
    shards: tuple[TokenFiles, ...]

    def __len__(self) -> int:
        """The number of shards."""
        return len(self.shards)

    @functools.cached_property
    def _layout(self) -> tuple[list[tuple[int, int]], int]:
        """([(global number of the first document that starts in shard k, k) for each shard where one
        starts], the number of documents): a shard's first document continues the previous shard's last
        when its record says so."""
        starts, count = [], 0
        for number, (record, shard) in enumerate(zip(self.index.shards, self.shards)):
            new = len(shard) - (1 if record.continues else 0)
            if new > 0:
                starts.append((count, number))
            count += new
        return starts, count

    @property
    def n_documents(self) -> int:
        """The documents of the set (one cut over shards counts once)."""
        return self._layout[1]

    def document(self, index: int) -> np.ndarray:
        """The ids of document `index` of the whole set (negative counts from the end), its parts joined
        when it was cut over shards."""
        n = self.n_documents
        if not -n <= index < n:
            raise IndexError(f"document {index} is out of range: there are {n}")
        index %= n
        starts = self._layout[0]
        first, number = starts[bisect.bisect_right(starts, (index, len(self.shards))) - 1]
        shard = self.shards[number]
        local = index - first + (1 if self.index.shards[number].continues else 0)
        parts = [shard.document(local)]
        following = number + 1
        if local == len(shard) - 1:     # it may go on in the next shards
            while following < len(self.shards) and self.index.shards[following].continues:
                parts.append(self.shards[following].document(0))
                if len(self.shards[following]) > 1:
                    break
                following += 1
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def documents(self) -> Iterator[np.ndarray]:
        """Every document's ids in order, those cut over shards joined again."""
        pending: list[np.ndarray] = []
        for record, shard in zip(self.index.shards, self.shards):
            for number in range(len(shard)):
                span = shard.document(number)
                if number == 0 and record.continues:
                    pending.append(span)
                    continue
                if pending:
                    yield pending[0] if len(pending) == 1 else np.concatenate(pending)
                pending = [span]
        if pending:
            yield pending[0] if len(pending) == 1 else np.concatenate(pending)


def load_tokens(prefix: str | os.PathLike[str]) -> TokenFiles | TokenShards | dict[str, TokenFiles | TokenShards]:
    """Whatever ``bytebpe encode -o PREFIX`` (or `encode_files(output=prefix)`) wrote there: one set
    (`TokenFiles`), a sharded set (`TokenShards`: ``.document(i)`` numbers the documents of the whole set), or
    for a split run ``{"train": ..., "val": ...}``, each of those."""
    name = prefix_of(prefix)
    if read_meta(name) is not None:
        return load_token_files(name)
    if read_index(name) is not None:
        return load_token_shards(name)
    parts = split_parts(name)
    if parts:
        return {part.rsplit(".", 1)[1]: load_tokens(part) for part in parts}  # type: ignore[misc]
    return load_token_files(name)   # (raises, saying what is missing)


def load_token_shards(prefix: str | os.PathLike[str]) -> TokenShards:
    """Load the sharded set written by ``encode_files(output=prefix, shard_tokens=N)`` (or ``--shard-tokens``):
    its index and every shard, each checked against its own sidecar and the index."""
    name = prefix_of(prefix)
    index = read_index(name)
    if index is None:
        raise FileNotFoundError(f"{name + INDEX_SUFFIX} not found: {name} is not a sharded set"
                                + (" (load it with load_token_files)" if os.path.isfile(name + META_SUFFIX) else ""))
    folder = os.path.dirname(name)
    shards = []
    for record in index.shards:
        shard = load_token_files(os.path.join(folder, record.name))
        if (shard.meta.tokens != record.tokens or shard.meta.documents != record.documents
                or shard.meta.vocabulary_sha256 != index.meta.vocabulary_sha256):
            raise ValueError(f"{shard.paths.meta}: does not match {name + INDEX_SUFFIX} (another run's shard?)")
        shards.append(shard)
    return TokenShards(index, tuple(shards))
