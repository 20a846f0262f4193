"""Named encodings: which pattern, vocabulary file (with its pinned sha256) and special tokens
make up each of OpenAI's encodings, where the files are found, and a per-process cache.

The ranks of an encoding come from, in order,
  1. its files in the folders listed in BYTEBPE_DATA_DIR (os.pathsep-separated): a user's own copy wins;
  2. the vocabulary bundled with the package (bundled.py), which all seven named encodings have;
and only for an encoding with no bundled vocabulary, each file is looked for in
  3. our cache: BYTEBPE_CACHE_DIR, else $XDG_CACHE_HOME/bytebpe, else ~/.cache/bytebpe;
  4. tiktoken's cache (TIKTOKEN_CACHE_DIR, else DATA_GYM_CACHE_DIR, else <tmp>/data-gym-cache),
     where an entry is named by the sha1 of the file's download address;
  5. the official address, over HTTPS, saved into our cache (never with BYTEBPE_OFFLINE=1).
The first file found must match the pinned sha256 or loading stops with VocabularyHashError: a
corrupt or truncated file is reported, never skipped in favour of the next place.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from . import _core, bundled, patterns, plugins
from . import encoding as encoding_module
from .encoding import Encoding
from .models import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING
from .vocab_io import (
    VocabularyHashError,
    dump_tiktoken_bpe_bytes,
    hash_mismatch_message,
    read_data_gym_ranks,
    read_tiktoken_bpe,
    sha256_of,
)
from .atomic_write import write_bytes_atomically

__all__ = [
    "EncodingSpec",
    "VocabularyFile",
    "UnknownEncodingError",
    "UnknownModelError",
    "VocabularyHashError",
    "VocabularyNotFoundError",
    "ENCODING_SPECS",
    "list_encoding_names",
    "encoding_spec",
    "encoding_spec_kwargs",
    "ranks_for",
    "resolve_vocabulary_file",
    "AddressFile",
    "bundled_source",
    "data_dirs",
    "cache_dir",
    "tiktoken_cache_dir",
    "tiktoken_cache_entry",
    "offline",
    "get_encoding",
    "registered_encoding",
    "encoding_name_for_model",
    "encoding_for_model",
]

DOWNLOAD_TIMEOUT_SECONDS = 30


# --------------------------------------------------------------------------- errors


class UnknownEncodingError(_core.MessageKeyError):
    """No encoding has this name. A KeyError for tiktoken compatibility, and a ValueError."""


class UnknownModelError(_core.MessageKeyError):
    """No encoding is known for this model name (a KeyError, as in tiktoken, and a ValueError)."""


class VocabularyNotFoundError(FileNotFoundError):
    """A vocabulary file is in none of the local places and could not be downloaded."""


# --------------------------------------------------------------------------- the encodings as data


class VocabularyFile(NamedTuple):
    """One published vocabulary file: its official address and the sha256 it must have (None: any file
    at that address, as tiktoken's load_tiktoken_bpe does without expected_hash)."""

    url: str
    sha256: str | None

    @property
    def filename(self) -> str:
        """The name the file is looked up by locally: the last part of its address."""
        return self.url.rsplit("/", 1)[-1]


class AddressFile(VocabularyFile):
    """A file known only by an address a user gave (load_tiktoken_bpe): kept under tiktoken's name for it, the
    sha1 of the address, since another address may end in the same name."""

    __slots__ = ()

    @property
    def filename(self) -> str:
        return tiktoken_cache_entry(self)


class EncodingSpec(NamedTuple):
    """Everything that defines a named encoding, apart from the loaded ranks themselves."""

    name: str
    pattern: str
    # "tiktoken": files = (the .tiktoken file,); "data_gym": files = (vocab.bpe, encoder.json).
    ranks_format: str
    files: tuple[VocabularyFile, ...]
    special_tokens: Mapping[str, int]   # special-token text -> token id
    explicit_n_vocab: int | None = None
    # The bundled vocabulary with the same ranks (bundled.py), None if there is none. gpt2's is r50k_base:
    # its data gym files convert to exactly r50k_base's ranks (tools/gen_bundled_vocab.py checks).
    bundled: str | None = None


_BLOB = "https://openaipublic.blob.core.windows.net"
GPT2_VOCAB_BPE = VocabularyFile(
    f"{_BLOB}/gpt-2/encodings/main/vocab.bpe",
    "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
)
GPT2_ENCODER_JSON = VocabularyFile(
    f"{_BLOB}/gpt-2/encodings/main/encoder.json",
    "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
)
R50K_FILE = VocabularyFile(
    f"{_BLOB}/encodings/r50k_base.tiktoken",
    "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
)
P50K_FILE = VocabularyFile(
    f"{_BLOB}/encodings/p50k_base.tiktoken",
    "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
)
CL100K_FILE = VocabularyFile(
    f"{_BLOB}/encodings/cl100k_base.tiktoken",
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
)
O200K_FILE = VocabularyFile(
    f"{_BLOB}/encodings/o200k_base.tiktoken",
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
)

_ENDOFTEXT, _ENDOFPROMPT = patterns.ENDOFTEXT, patterns.ENDOFPROMPT
_FIM = {patterns.FIM_PREFIX: 0, patterns.FIM_MIDDLE: 1, patterns.FIM_SUFFIX: 2}  # offset from first id

_O200K_SPECIALS = {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018}
# o200k_harmony adds chat-format tokens and fills 200013..201087 with reserved names. Id 200018
# then has two names, <|endofprompt|> and <|reserved_200018|>, exactly as in tiktoken.
_O200K_HARMONY_SPECIALS = {
    **_O200K_SPECIALS,
    "<|startoftext|>": 199998,
    "<|reserved_200000|>": 200000,
    "<|reserved_200001|>": 200001,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|reserved_200004|>": 200004,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|reserved_200009|>": 200009,
    "<|reserved_200010|>": 200010,
    "<|reserved_200011|>": 200011,
    "<|call|>": 200012,
    **{f"<|reserved_{token_id}|>": token_id for token_id in range(200013, 201088)},
}


def _spec(name, pattern, ranks_format, files, special_tokens, explicit_n_vocab=None) -> EncodingSpec:
    # Every file here has a bundled form named after it; gpt2 uses r50k_base's.
    bundled_name = "r50k_base" if ranks_format == "data_gym" else files[0].filename.removesuffix(".tiktoken")
    return EncodingSpec(
        name, pattern, ranks_format, files, MappingProxyType(dict(special_tokens)), explicit_n_vocab,
        bundled_name,
    )


# name -> spec, in the order list_encoding_names() reports them.
ENCODING_SPECS: Mapping[str, EncodingSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            _spec("gpt2", patterns.R50K_PATTERN, "data_gym", (GPT2_VOCAB_BPE, GPT2_ENCODER_JSON),
                  {_ENDOFTEXT: 50256}, explicit_n_vocab=50257),
            _spec("r50k_base", patterns.R50K_PATTERN, "tiktoken", (R50K_FILE,),
                  {_ENDOFTEXT: 50256}, explicit_n_vocab=50257),
            _spec("p50k_base", patterns.R50K_PATTERN, "tiktoken", (P50K_FILE,),
                  {_ENDOFTEXT: 50256}, explicit_n_vocab=50281),
            _spec("p50k_edit", patterns.R50K_PATTERN, "tiktoken", (P50K_FILE,),
                  {_ENDOFTEXT: 50256, **{text: 50281 + k for text, k in _FIM.items()}}),
            _spec("cl100k_base", patterns.CL100K_PATTERN, "tiktoken", (CL100K_FILE,),
                  {_ENDOFTEXT: 100257, **{text: 100258 + k for text, k in _FIM.items()},
                   _ENDOFPROMPT: 100276}),
            _spec("o200k_base", patterns.O200K_PATTERN, "tiktoken", (O200K_FILE,), _O200K_SPECIALS),
            _spec("o200k_harmony", patterns.O200K_PATTERN, "tiktoken", (O200K_FILE,),
                  _O200K_HARMONY_SPECIALS),
        )
    }
)


def list_encoding_names() -> list[str]:
    """The names get_encoding accepts: the seven built in, then those installed packages declare (plugins.py)."""
    return list(ENCODING_SPECS) + [name for name in plugins.plugin_names() if name not in ENCODING_SPECS]


def _unknown(name: object) -> UnknownEncodingError:
    declared = plugins.plugin_names()
    unreadable = plugins.unreadable_plugins()
    return UnknownEncodingError(
        f"Unknown encoding {name!r}. Known encodings: {', '.join(ENCODING_SPECS)}"
        + (f"; declared by installed packages: {', '.join(declared)}" if declared else "")
        + f". Your own encodings can be registered by name through the {plugins.ENTRY_POINT_GROUP!r} entry "
          f"point group (see bytebpe.plugins)"
        + "".join(f". Unreadable: {problem}" for problem in unreadable)
    )


def encoding_spec(name: str) -> EncodingSpec:
    """The spec of one of the seven built-in encodings; UnknownEncodingError (a KeyError and ValueError) if
    `name` is not one (an encoding declared by another package has no spec: see get_encoding)."""
    spec = ENCODING_SPECS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise _unknown(name)
    return spec


# --------------------------------------------------------------------------- finding files


def data_dirs() -> list[Path]:
    """The folders named in BYTEBPE_DATA_DIR, in order (empty entries ignored)."""
    raw = os.environ.get("BYTEBPE_DATA_DIR", "")
    return [Path(entry).expanduser() for entry in raw.split(os.pathsep) if entry]


def cache_dir() -> Path:
    """Where downloaded vocabularies are kept (the folder need not exist yet)."""
    if explicit := os.environ.get("BYTEBPE_CACHE_DIR"):
        return Path(explicit).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "bytebpe"
    return Path.home() / ".cache" / "bytebpe"


def tiktoken_cache_dir() -> Path | None:
    """tiktoken's download cache, or None when tiktoken's caching is switched off (set to "")."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value).expanduser() if value else None
    import tempfile     # imported where needed: see _download

    return Path(tempfile.gettempdir()) / "data-gym-cache"


def tiktoken_cache_entry(file: VocabularyFile) -> str:
    """The name tiktoken gives `file` in its cache: the sha1 of its download address (tiktoken/load.py)."""
    import hashlib      # imported where needed: see _download

    return hashlib.sha1(file.url.encode("utf-8")).hexdigest()


# (real path, size, mtime_ns) -> sha256 hex. Hashing o200k costs milliseconds, and repeated loads
# (after a cache clear, or from several tools in one process) should not pay it again; a file
# that changes gets a new size or mtime and is hashed afresh.
_sha256_by_file_state: dict[tuple[str, int, int], str] = {}


def _check_pinned_hash(path: Path, file: VocabularyFile) -> Path:
    if file.sha256 is None:
        return path
    state = os.stat(path)
    key = (os.path.realpath(path), state.st_size, state.st_mtime_ns)
    actual = _sha256_by_file_state.get(key)
    if actual is None:
        actual = sha256_of(path)
        _sha256_by_file_state[key] = actual
    if actual != file.sha256:
        raise VocabularyHashError(hash_mismatch_message(path, file.sha256, actual))
    return path


def _local_candidates(file: VocabularyFile) -> list[Path]:
    candidates = [folder / file.filename for folder in data_dirs()]
    candidates.append(cache_dir() / file.filename)
    tiktoken_cache = tiktoken_cache_dir()
    if tiktoken_cache is not None:
        candidates.append(tiktoken_cache / tiktoken_cache_entry(file))
    return candidates


def offline() -> bool:
    """Whether BYTEBPE_OFFLINE forbids downloads (1, true, yes or on, in any case)."""
    return os.environ.get("BYTEBPE_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _download(url: str) -> bytes:
    """The body at `url`; tests replace urllib.request.urlopen to serve files offline."""
    # Imported only when a download happens: urllib.request brings in ssl and email, ~9 MB of resident
    # memory that every process importing bytebpe (a trainer's peak memory included) would otherwise pay.
    # hashlib (OpenSSL, ~4 MB) and tempfile are imported where they are used for the same reason.
    import urllib.request

    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        return response.read()


def resolve_vocabulary_file(file: VocabularyFile) -> Path:
    """The path of a verified local copy of `file`, downloading it into the cache if needed.

    Raises VocabularyHashError if the first copy found (or the download) has the wrong sha256,
    and VocabularyNotFoundError if there is no copy and the download fails or BYTEBPE_OFFLINE is set.
    """
    for candidate in _local_candidates(file):
        if candidate.is_file():
            return _check_pinned_hash(candidate, file)
    if offline():
        raise VocabularyNotFoundError(_not_found_message(file, "BYTEBPE_OFFLINE is set: nothing is downloaded"))

    import http.client     # see _download

    try:
        contents = _download(file.url)
    except (OSError, http.client.HTTPException) as error:  # URLError and timeouts are OSErrors
        raise VocabularyNotFoundError(
            _not_found_message(file, f"could not download it: {type(error).__name__}: {error}")) from error
    import hashlib

    actual = hashlib.sha256(contents).hexdigest()
    if file.sha256 is not None and actual != file.sha256:
        # Checked before writing, so the cache never holds a file that fails the check.
        raise VocabularyHashError(
            f"sha256 mismatch for the download from {file.url}: expected {file.sha256}, got "
            f"{actual}. Nothing was saved; the download was damaged or the address serves another file."
        )
    target = cache_dir() / file.filename
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(target, contents)
    except OSError as error:
        raise OSError(
            f"downloaded {file.url} but could not save it as {target} ({error}); "
            "set BYTEBPE_CACHE_DIR to a writable folder"
        ) from error
    return _check_pinned_hash(target, file)


def _not_found_message(file: VocabularyFile, why: str) -> str:
    raw_data_dir = os.environ.get("BYTEBPE_DATA_DIR")
    data_dir_note = f"currently {raw_data_dir!r}" if raw_data_dir else "currently unset"
    return (
        f"Vocabulary file {file.filename!r} is not bundled with this installation, not found locally, "
        f"and {why}.\n"
        f"Download it from {file.url}\n"
        f"and put it, named {file.filename!r}, either in a folder listed in BYTEBPE_DATA_DIR "
        f"({data_dir_note}) or in the cache folder {cache_dir()}.\n"
        + (f"Its sha256 must be {file.sha256}." if file.sha256 else "")
    )


# --------------------------------------------------------------------------- loading and caching

# One lock for all loading: building an encoding is rare and mostly holds the GIL anyway, and a
# single re-entrant lock makes "two threads asking at once build it once" obviously true.
_build_lock = threading.RLock()


def _new_build_lock_after_fork() -> None:
    """A forked child has only the thread that forked: a lock another thread held at the fork would stay held
    for ever. What the lock guards is whole in the child (a table enters the dicts only once it is built)."""
    global _build_lock
    _build_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_build_lock_after_fork)
# A bundled vocabulary's name, or the files the ranks were read from -> the table, shared across names.
_tables_by_source: dict[str | tuple[VocabularyFile, ...], _core.MergeTable] = {}
_encodings: dict[str, Encoding] = {}


def table_for(name: str) -> _core.MergeTable:
    """The merge table of a named encoding, loaded once per process and shared by the encodings that use
    the same files (o200k_base and o200k_harmony; p50k_base and p50k_edit; gpt2 and r50k_base when
    both come from the bundled vocabulary)."""
    spec = encoding_spec(name)
    source = bundled_source(spec) or spec.files
    table = _tables_by_source.get(source)
    if table is not None:
        return table
    with _build_lock:
        table = _tables_by_source.get(source)
        if table is None:
            if isinstance(source, str):
                table = bundled.load_table(source)
            else:
                paths = [resolve_vocabulary_file(file) for file in spec.files]
                if spec.ranks_format == "data_gym":
                    table = _data_gym_table(spec, paths)
                else:
                    table = _tiktoken_table(paths[0])
            _tables_by_source[source] = table
        return table


def bundled_source(spec: EncodingSpec) -> str | None:
    """The bundled vocabulary to load `spec`'s ranks from; None when there is none, or when one of its files
    is in a BYTEBPE_DATA_DIR folder (the user's own copy, which wins)."""
    if spec.bundled is None or not bundled.is_bundled(spec.bundled):
        return None
    for folder in data_dirs():
        if any((folder / file.filename).is_file() for file in spec.files):
            return None
    return spec.bundled


def ranks_for(name: str) -> dict[bytes, int]:
    """The mergeable ranks (token bytes -> rank) of a named encoding, loaded once per process.

    Encodings built from the same file share one dict: treat it as read-only.
    """
    return table_for(name).ranks()


def _tiktoken_table(path: Path) -> _core.MergeTable:
    # The compiled parser reads a plainly valid file in milliseconds (the Python reader takes ~0.2 s for
    # o200k); anything else goes to the Python reader, which accepts it or says which line is wrong.
    table = _core.MergeTable.from_tiktoken(path.read_bytes())
    return table if table is not None else _core.MergeTable(read_tiktoken_bpe(path))


def _data_gym_table(spec: EncodingSpec, paths: list[Path]) -> _core.MergeTable:
    """GPT-2's vocab.bpe + encoder.json, converted once and kept in the cache as a `.tiktoken` file.

    The conversion replays 50k merges in Python (~0.1 s); the converted file loads in a few ms. It is named
    after the pinned hashes of its sources and checked against its own recorded sha256, so a stale or
    damaged copy is rebuilt, never trusted.
    """
    import hashlib      # see _download

    source_key = hashlib.sha256("".join(file.sha256 for file in spec.files).encode()).hexdigest()[:16]
    converted = cache_dir() / f"{spec.files[0].filename}.{source_key}.tiktoken"
    recorded_hash = converted.with_name(converted.name + ".sha256")
    try:
        contents = converted.read_bytes()
        if recorded_hash.read_text().strip() == hashlib.sha256(contents).hexdigest():
            table = _core.MergeTable.from_tiktoken(contents)
            if table is not None:
                return table
    except OSError:
        pass    # not converted yet, or unreadable: convert below
    ranks = read_data_gym_ranks(*paths)
    table = _core.MergeTable(ranks)
    contents = dump_tiktoken_bpe_bytes(ranks)
    try:
        converted.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(converted, contents)
        write_bytes_atomically(recorded_hash, hashlib.sha256(contents).hexdigest().encode() + b"\n")
    except OSError:
        pass    # a read-only cache only costs the conversion next time
    return table


def encoding_spec_kwargs(name: str) -> dict[str, Any]:
    """The arguments that build a named encoding: ``Encoding(**encoding_spec_kwargs(name))``.

    Same keys as the constructors in tiktoken_ext.openai_public: name, pat_str, mergeable_ranks,
    special_tokens (a fresh dict) and explicit_n_vocab (None when the encoding does not pin one).
    """
    spec = encoding_spec(name)
    return {
        "name": spec.name,
        "pat_str": spec.pattern,
        "mergeable_ranks": ranks_for(name),
        "special_tokens": dict(spec.special_tokens),
        "explicit_n_vocab": spec.explicit_n_vocab,
    }


def _encoding_class() -> type[Encoding]:
    return Encoding     # a function, so that tests can build their own subclass instead


def get_encoding(name: str) -> Encoding:
    """The named encoding, built on first use and then shared by every caller in the process: one of the
    seven built in, or one an installed package declares (plugins.py)."""
    encoding = _encodings.get(name) if isinstance(name, str) else None
    if encoding is not None:
        return encoding
    if not isinstance(name, str):
        raise _unknown(name)
    if name not in ENCODING_SPECS:
        return _plugin_encoding(name)
    with _build_lock:
        encoding = _encodings.get(name)
        if encoding is None:
            spec = encoding_spec(name)
            encoding = _encoding_class()._from_table(
                spec.name,
                pat_str=spec.pattern,
                table=table_for(name),
                special_tokens=dict(spec.special_tokens),
                explicit_n_vocab=spec.explicit_n_vocab,
            )
            encoding._register(sys.modules[__name__])
            _encodings[name] = encoding
        return encoding


def _plugin_encoding(name: str) -> Encoding:
    with _build_lock:
        encoding = _encodings.get(name)
        if encoding is None:
            encoding = plugins.build(name)
            if encoding is None:
                raise _unknown(name)
            encoding._register(sys.modules[__name__])
            _encodings[name] = encoding
        return encoding


def registered_encoding(name: str) -> Encoding | None:
    """The instance get_encoding(name) has already built, or None (nothing is loaded here).

    An Encoding pickles as just its name when it is this instance.
    """
    return _encodings.get(name)


def _clear_caches() -> None:
    """Forgets loaded ranks, built encodings and verified hashes (for tests)."""
    with _build_lock:
        _tables_by_source.clear()
        _encodings.clear()
        _sha256_by_file_state.clear()


# --------------------------------------------------------------------------- model names


def encoding_name_for_model(model_name: str) -> str:
    """The encoding a model uses: an exact model name first, then the first matching prefix.

    Raises UnknownModelError (a KeyError, as in tiktoken, and a ValueError) for an unknown model.
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    # Prefixes let new model versions (gpt-4o-2024-08-06) work without a library update, at the
    # price of also matching names that do not exist.
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise UnknownModelError(
        f"Could not map model {model_name!r} to an encoding. Use bytebpe.get_encoding(name) to "
        f"choose one explicitly; known encodings: {', '.join(ENCODING_SPECS)}"
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses (see encoding_name_for_model)."""
    return get_encoding(encoding_name_for_model(model_name))


# A stock tiktoken pickle of a named encoding holds its name: Encoding.__setstate__ loads it by this.
encoding_module._named_encodings = get_encoding
