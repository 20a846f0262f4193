"""One entry point for every tokenizer file format bytebpe reads: `load_tokenizer(path)` recognises the format
by content (file_formats.py) and hands the file, read and parsed once, to its loader — serialization.py for
bytebpe's own files, hf_import.py for Hugging Face tokenizer.json, model_files.py for Tekken and .tiktoken.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from .encoding import Encoding
from .file_formats import FORMATS, TokenizerFileError, recognise
from .hf_import import TokenizerJsonEncoding, TokenizerJsonError
from .model_files import MODEL_PRESETS, tekken_encoding, tiktoken_encoding
from .sentencepiece_model import SentencePieceModelError, read_model_proto, to_tokenizer_json_spec
from .serialization import EncodingFileError, encoding_arguments

__all__ = ["LoadedTokenizer", "load_tokenizer", "load_tokenizer_file"]


class LoadedTokenizer(NamedTuple):
    kind: str           # the format: "bytebpe", "tokenizer.json", "tekken" or "tiktoken" (file_formats.FORMATS)
    encoding: Encoding


def load_tokenizer(
    path: str | os.PathLike[str],
    *,
    model: str | None = None,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    add_special_tokens: bool = False,
) -> Encoding:
    """The `Encoding` of any tokenizer file bytebpe reads, its format recognised by content (not by name):

    - a saved bytebpe encoding (`Encoding.save`): as `bytebpe.load`;
    - a Hugging Face tokenizer.json: as `bytebpe.from_tokenizer_json(path, add_special_tokens=...)`;
    - a Mistral Tekken file: as `bytebpe.from_tekken_json`;
    - a `.tiktoken` vocabulary (Llama 3's tokenizer.model is one), which holds no split pattern: with
      ``model=`` (a name of `MODEL_PRESETS`: "qwen2", "qwen3.5", "llama3", ...) as `bytebpe.load_model_file`,
      with ``pattern=`` (and `special_tokens`) as `bytebpe.from_tiktoken_file`; with neither, an error.

    `model`, `pattern` and `special_tokens` are for `.tiktoken` files and `add_special_tokens` for
    tokenizer.json, which are the only formats that take them: given for another, they are an error rather
    than ignored. Any file bytebpe cannot read raises a `TokenizerFileError` (a ValueError) naming it, and
    what the file is when that is known.
    """
    return load_tokenizer_file(path, model=model, pattern=pattern, special_tokens=special_tokens,
                               add_special_tokens=add_special_tokens).encoding


def load_tokenizer_file(
    path: str | os.PathLike[str],
    *,
    model: str | None = None,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    add_special_tokens: bool = False,
) -> LoadedTokenizer:
    """`load_tokenizer`, also saying which format the file was (the command line picks `verify`'s reference
    by it)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected a path, got {type(path).__name__}")
    if model is not None and pattern is not None:
        raise ValueError("give model= (a known model's pattern and special tokens) or pattern= (a split regex), "
                         "not both")
    if model is not None and special_tokens is not None:
        raise ValueError(f"model={model!r} brings its own special tokens: give special_tokens= with pattern=")
    label = os.fspath(path)
    with open(label, "rb") as file:
        contents = file.read()
    found = recognise(contents)
    kind = found.kind
    if kind == "unknown" and (model is not None or pattern is not None):
        kind = "tiktoken"       # as the caller says: the .tiktoken reader then names the line that is wrong
    tiktoken_options = [name for name, value in (("model", model), ("pattern", pattern),
                                                 ("special_tokens", special_tokens)) if value is not None]
    if kind != "tiktoken" and tiktoken_options and kind in ("bytebpe", "tokenizer.json", "tekken"):
        raise TokenizerFileError(f"{label}: {tiktoken_options[0]}= is for a .tiktoken vocabulary, and this is "
                                 f"{FORMATS[kind].description}, which carries its own pattern and special tokens")
    if add_special_tokens and kind in ("bytebpe", "tekken", "tiktoken"):
        raise TokenizerFileError(f"{label}: add_special_tokens=True applies a Hugging Face tokenizer.json's "
                                 f"post_processor, and this is {FORMATS[kind].description}")
    if kind == "bytebpe":
        arguments = encoding_arguments(found.document, label)
        try:
            return LoadedTokenizer(kind, Encoding(**arguments))
        except (TypeError, ValueError) as error:    # (as bytebpe.load reports it)
            raise EncodingFileError(f"{label}: {error}") from None
    if kind == "tokenizer.json":
        # The text is kept as read_text gives it (universal newlines), as from_tokenizer_json keeps it.
        text = (found.cut.text if found.cut is not None else contents.decode("utf-8"))
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        try:
            encoding = TokenizerJsonEncoding._from_json_text(text, Path(label).name, add_special_tokens,
                                                             found.document, found.cut)
        except TokenizerJsonError as error:     # (its messages name the component, not the file)
            raise TokenizerJsonError(f"{label}: {error}") from None
        return LoadedTokenizer(kind, encoding)
    if kind == "sentencepiece":
        # Its BPE model becomes the HF parts that give sentencepiece's ids (sentencepiece_model.py).
        try:
            spec = to_tokenizer_json_spec(read_model_proto(contents))
            return LoadedTokenizer("sentencepiece", TokenizerJsonEncoding._from_json_text(
                json.dumps(spec), Path(label).name, add_special_tokens, spec))
        except (SentencePieceModelError, TokenizerJsonError) as error:
            raise type(error)(f"{label}: {error}") from None
    if kind == "tekken":
        return LoadedTokenizer(kind, tekken_encoding(found.document, label, Path(label).name.replace(".json", ""),
                                                     found.unparsed_vocab))
    if kind == "tiktoken":
        if model is None and pattern is None:
            raise TokenizerFileError(
                f"{label}: this is {FORMATS['tiktoken'].description}: give model= (one of "
                f"{', '.join(MODEL_PRESETS)}) or pattern= (the split regex) to bytebpe.load_tokenizer, or call "
                "bytebpe.load_model_file(path, model=...) or bytebpe.from_tiktoken_file(path, pattern=...)")
        return LoadedTokenizer(kind, tiktoken_encoding(contents, label, model=model, pattern=pattern,
                                                       special_tokens=special_tokens))
    if kind == "corrupt json":
        raise TokenizerFileError(f"{label}: not valid JSON, or truncated ({found.problem})")
    if kind == "unknown":
        raise TokenizerFileError(f"{label}: {FORMATS[kind].description}")
    known = FORMATS[kind]
    raise TokenizerFileError(f"{label}: this is {known.description}" + (
        f", not a tokenizer (read it with {known.loader})" if known.loader else ""))
