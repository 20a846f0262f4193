"""bytebpe under code that imports tiktoken: `patch_tiktoken()` makes `import tiktoken` give bytebpe.

The modules it puts in `sys.modules` have tiktoken's names and public contents, each from bytebpe:
`tiktoken` (Encoding, get_encoding, encoding_for_model, encoding_name_for_model, list_encoding_names),
`tiktoken.core` (Encoding), `tiktoken.load` (load_tiktoken_bpe, data_gym_to_mergeable_bpe_ranks,
dump_tiktoken_bpe, read_file, read_file_cached, check_hash), `tiktoken.registry` (get_encoding,
list_encoding_names, ENCODINGS, ENCODING_CONSTRUCTORS) and `tiktoken.model` (the model tables). `tiktoken_ext`
plugins are bytebpe's plugins already (plugins.py). A pickle made by stock tiktoken names the class
tiktoken.core.Encoding, which is then bytebpe's Encoding, and loads (Encoding.__setstate__).

Call it before the code that imports tiktoken runs: a module that imported stock tiktoken already keeps it.
For a program you do not start yourself, set BYTEBPE_PATCH_TIKTOKEN=1 in its environment: the
`bytebpe-tiktoken.pth` file installed with bytebpe calls `patch_tiktoken()` as the interpreter starts.
"""
from __future__ import annotations

import hashlib
import sys
import types
from typing import Any

from . import models, registry, vocab_io, vocab_sources
from .encoding import Encoding, _special_token_regex

__all__ = ["ENVIRONMENT_VARIABLE", "TIKTOKEN_VERSION", "patch_tiktoken", "unpatch_tiktoken"]

ENVIRONMENT_VARIABLE = "BYTEBPE_PATCH_TIKTOKEN"
TIKTOKEN_VERSION = "0.14.0"     # the release whose API (and test suite, tests/vendored) the modules follow
_NAMES = ("tiktoken", "tiktoken.core", "tiktoken.load", "tiktoken.registry", "tiktoken.model")
_saved: dict[str, types.ModuleType | None] = {}


def _module(name: str, doc: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__dict__.update(attributes)
    module.__dict__["__bytebpe__"] = True
    return module


def _read_file(blobpath: str) -> bytes:
    return _read_file_cached(blobpath)


def _read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """The bytes at a path or an http(s) address (cached as bytebpe caches vocabulary files)."""
    if "://" in blobpath:
        return vocab_sources.read_address(blobpath, expected_hash)
    with open(blobpath, "rb") as file:
        data = file.read()
    if expected_hash is not None and not _check_hash(data, expected_hash):
        raise ValueError(f"Hash mismatch for data from {blobpath} (expected {expected_hash}). This may "
                         "indicate a corrupted file.")
    return data


def _check_hash(data: bytes, expected_hash: str) -> bool:
    return hashlib.sha256(data).hexdigest() == expected_hash


def _dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    vocab_io.dump_tiktoken_bpe(bpe_ranks, tiktoken_bpe_file)


def _raise_disallowed_special_token(token: str) -> None:
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, pass it to `allowed_special`, e.g. "
        f"`allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token by passing "
        f"`disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n")


class _Constructors(dict):  # type: ignore[type-arg]
    """tiktoken.registry.ENCODING_CONSTRUCTORS: name -> a function giving the encoding's constructor
    arguments, for every name bytebpe knows."""

    def __init__(self) -> None:
        super().__init__({name: (lambda name=name: registry.encoding_spec_kwargs(name))
                          for name in registry.list_encoding_names()})


def _modules() -> dict[str, types.ModuleType]:
    core = _module("tiktoken.core", "bytebpe's Encoding, as tiktoken.core", Encoding=Encoding,
                   _special_token_regex=_special_token_regex,
                   raise_disallowed_special_token=_raise_disallowed_special_token)
    load = _module("tiktoken.load", "bytebpe's vocabulary readers, as tiktoken.load",
                   load_tiktoken_bpe=vocab_sources.load_tiktoken_bpe,
                   data_gym_to_mergeable_bpe_ranks=vocab_sources.data_gym_to_mergeable_bpe_ranks,
                   dump_tiktoken_bpe=_dump_tiktoken_bpe, read_file=_read_file, read_file_cached=_read_file_cached,
                   check_hash=_check_hash)
    registry_module = _module("tiktoken.registry", "bytebpe's registry, as tiktoken.registry",
                              get_encoding=registry.get_encoding, list_encoding_names=registry.list_encoding_names,
                              ENCODINGS=registry._encodings, ENCODING_CONSTRUCTORS=_Constructors(),
                              Encoding=Encoding)
    model = _module("tiktoken.model", "bytebpe's model tables, as tiktoken.model",
                    MODEL_TO_ENCODING=models.MODEL_TO_ENCODING, MODEL_PREFIX_TO_ENCODING=models.MODEL_PREFIX_TO_ENCODING,
                    encoding_for_model=registry.encoding_for_model,
                    encoding_name_for_model=registry.encoding_name_for_model, Encoding=Encoding,
                    get_encoding=registry.get_encoding)
    package = _module("tiktoken", "bytebpe, standing in for tiktoken (bytebpe.patch_tiktoken)",
                      Encoding=Encoding, get_encoding=registry.get_encoding,
                      encoding_for_model=registry.encoding_for_model,
                      encoding_name_for_model=registry.encoding_name_for_model,
                      list_encoding_names=registry.list_encoding_names, __version__=TIKTOKEN_VERSION,
                      __path__=[], core=core, load=load, registry=registry_module, model=model)
    return {"tiktoken": package, "tiktoken.core": core, "tiktoken.load": load, "tiktoken.registry": registry_module,
            "tiktoken.model": model}


def patch_tiktoken() -> None:
    """From now on `import tiktoken` (and its submodules) gives bytebpe, in this process."""
    if getattr(sys.modules.get("tiktoken"), "__bytebpe__", False):
        return
    for name in _NAMES:
        _saved.setdefault(name, sys.modules.get(name))
    sys.modules.update(_modules())


def unpatch_tiktoken() -> None:
    """Put back what `import tiktoken` gave before `patch_tiktoken` (stock tiktoken, or nothing)."""
    for name in _NAMES:
        saved = _saved.pop(name, None)
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved
