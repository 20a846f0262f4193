"""Which tokenizer file format a file holds, recognised by its content (never by its name: Llama 3 ships its
`.tiktoken` vocabulary as `tokenizer.model`, Mistral its Tekken file as `tekken.json`).

Every loader asks here before complaining, so that a file handed to the wrong one is an error naming the
format it is and the loader that reads it ("this is a Mistral Tekken file: use bytebpe.from_tekken_json"),
and `bytebpe.load_tokenizer` (tokenizer_files.py) dispatches on the answer. Knows formats, not `Encoding`:
it imports nothing of bytebpe but the compiled JSON scans (`_core`'s of a Tekken file, `_load`'s of a
tokenizer.json's merges), so every reader, down to serialization.py, can use it.
"""
from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from . import _load
from ._core import json_member_span

__all__ = [
    "FORMATS",
    "CutMerges",
    "Recognised",
    "TokenizerFileError",
    "TokenizerJsonError",
    "cut_merges",
    "recognise",
    "recognise_document",
    "wrong_format",
]


class TokenizerFileError(ValueError):
    """A tokenizer file bytebpe cannot read: of an unknown format, of another format than the loader it was
    given to reads, corrupt or incomplete. The message names the file (and the field, where there is one).
    The base of every loader's own error (`EncodingFileError`, `TokenizerJsonError`, `ModelFileError`)."""


class TokenizerJsonError(TokenizerFileError):
    """A `tokenizer.json` that bytebpe cannot load exactly: corrupt, inconsistent, or using a component
    (named in the message) that it does not support."""


class Format(NamedTuple):
    description: str    # what the file is, as a message names it
    loader: str | None  # what reads it, as a user calls it (None: nothing in bytebpe)


# kind -> (description, loader)
FORMATS: dict[str, Format] = {
    "bytebpe": Format("a saved bytebpe encoding", "bytebpe.load"),
    "tokenizer.json": Format("a Hugging Face tokenizer.json", "bytebpe.from_tokenizer_json"),
    "tekken": Format("a Mistral Tekken file", "bytebpe.from_tekken_json"),
    # A bare vocabulary: the split pattern and the special tokens live in the model's code, not in the file.
    "tiktoken": Format("a .tiktoken vocabulary, which holds no split pattern and no special tokens",
                       "bytebpe.load_model_file(path, model=...) for a known model, or "
                       "bytebpe.from_tiktoken_file(path, pattern=...)"),
    "piece counts": Format("a bytebpe piece counts file", "bytebpe.load_piece_counts"),
    "token files metadata": Format("the metadata of bytebpe token files", "bytebpe.load_token_files"),
    "vocab.json": Format("a vocab.json / encoder.json (token text -> id) without its merges", None),
    "sentencepiece": Format("a SentencePiece .model", "bytebpe.load_tokenizer"),
    "gguf": Format("a llama.cpp GGUF file, which bytebpe does not read yet (export the model's tokenizer.json "
                   "or tokenizer.model from its source repository)", None),
    "binary": Format("a binary file of no tokenizer format bytebpe knows", None),
    "json": Format("a JSON file of no tokenizer format bytebpe knows", None),
    "unknown": Format("not a tokenizer file bytebpe knows (a saved bytebpe encoding, a Hugging Face "
                      "tokenizer.json, a Mistral Tekken file or a .tiktoken vocabulary)", None),
}

# A line of a .tiktoken file: base64 token (whole 4-character groups), one space, decimal rank.
_TIKTOKEN_LINE = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4}) [0-9]+\r?")


class CutMerges(NamedTuple):
    """The model's merges left in the file's text, text[start:end], and read from there in C (`strings`):
    the spec json.loads made of the rest holds [] in their place (`cut_merges`)."""
    text: str
    start: int
    end: int
    strings: _load.MergeStrings

    def as_list(self) -> list[Any]:
        return json.loads(self.text[self.start:self.end])   # type: ignore[no-any-return]


def cut_merges(text: str) -> tuple[str, CutMerges] | None:
    """(the text with the model's merges replaced by [], the merges), or None where `_load.cut_merges` cannot
    find them plainly (json.loads then reads the whole text). The merges are most of a file's text and, as
    Python objects, a fifth to a half of json.loads's time on it (Llama 3, Qwen 2.5)."""
    found = _load.cut_merges(text)
    if found is None:
        return None
    start, end, strings = found
    return text[:start] + "[]" + text[end:], CutMerges(text, start, end, strings)


class Recognised(NamedTuple):
    kind: str                   # a key of FORMATS, or "corrupt json"
    document: Any = None        # the parsed JSON, for the JSON formats (so that nobody parses it twice)
    problem: str | None = None  # why JSON did not parse, for "corrupt json"
    # A Tekken file's "vocab" array, left unparsed (the document then has no "vocab"): the loader reads it
    # in C (`_core.tekken_vocab_lines`), or with json where that refuses it.
    unparsed_vocab: memoryview | None = None
    # A tokenizer.json's merges, left in its text (the document's model then holds [] for them).
    cut: CutMerges | None = None


def recognise_document(document: Any) -> str:
    """The kind of a parsed JSON document (a key of FORMATS)."""
    if not isinstance(document, dict):
        return "json"
    declared = document.get("format")
    if declared == "bytebpe":
        return "bytebpe"
    if declared == "bytebpe piece counts":
        return "piece counts"
    if "model" in document:
        return "tokenizer.json"
    if _looks_like_tekken(document):
        return "tekken"
    if "vocabulary_sha256" in document and "encoding" in document:
        return "token files metadata"
    if document and all(isinstance(value, int) for _, value in zip(range(64), document.values())):
        return "vocab.json"
    return "json"


def _looks_like_tekken(document: dict[str, Any]) -> bool:
    """A Tekken file has a "config" and a "vocab" of {"rank", "token_bytes", "token_str"}; either one is enough
    to recognise a damaged one (so that its loader can say which field is wrong)."""
    config, vocab = document.get("config"), document.get("vocab")
    if "config" in document and "vocab" in document:
        return True
    if isinstance(config, dict) and ("default_num_special_tokens" in config or "default_vocab_size" in config):
        return True
    return isinstance(vocab, list) and bool(vocab) and isinstance(vocab[0], dict) and "token_bytes" in vocab[0]


def shortened(value: Any, limit: int = 60) -> str:
    """`value`'s repr for an error message, cut to about `limit` characters (a 10 MB token stays readable)."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:limit - 10]!r}... ({len(value):,} {unit})"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# JSON nested beyond Python's recursion limit (~1,000 levels): no tokenizer file is, and json.loads gives up.
NESTED_TOO_DEEPLY = "JSON nested more deeply than any tokenizer file (over ~1,000 levels)"


def recognise(contents: bytes) -> Recognised:
    """The format of a file's `contents`: JSON is parsed once (the result rides along in `document`), a
    .tiktoken file is known by its first line, a file that is not text is "binary"."""
    start = contents[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if start[:1] in (b"{", b"["):
        tokenizer_json = _tokenizer_json_without_merges(contents)
        if tokenizer_json is not None:
            return tokenizer_json
        tekken = _tekken_without_vocab(contents)
        if tekken is not None:
            return tekken
        try:
            document = json.loads(contents)
        except UnicodeDecodeError as error:
            return Recognised("corrupt json", problem=f"not UTF-8 ({error})")
        except RecursionError:
            return Recognised("corrupt json", problem=NESTED_TOO_DEEPLY)
        except ValueError as error:
            first_line = contents.split(b"\n", 1)[0]
            try:
                header = json.loads(first_line)
            except ValueError:
                return Recognised("corrupt json", problem=str(error))
            kind = recognise_document(header)
            return Recognised(kind if kind == "piece counts" else "corrupt json", problem=str(error))
        return Recognised(recognise_document(document), document)
    lines = start.split(b"\n")
    if len(contents) > 4096 and len(lines) > 1:
        lines.pop()     # (the sample may end inside it)
    if lines[0] and all(_TIKTOKEN_LINE.fullmatch(line) for line in lines[:3] if line):
        return Recognised("tiktoken")
    if contents[:4] == b"GGUF":
        return Recognised("gguf")
    if b"\0" in start or _not_utf8(start):
        # A SentencePiece ModelProto starts with its first piece (field 1, length-delimited: byte 0x0A).
        return Recognised("sentencepiece" if contents[:1] == b"\n" else "binary")
    return Recognised("unknown")


def _tokenizer_json_without_merges(contents: bytes) -> Recognised | None:
    """A tokenizer.json, its model's merges left in the text (`cut_merges`), or None (then the whole file is
    parsed)."""
    try:
        text = contents.decode("utf-8")
    except UnicodeDecodeError:
        return None
    found = cut_merges(text)
    if found is None:
        return None
    try:
        document = json.loads(found[0])
    except (ValueError, RecursionError):
        return None     # (the whole file's parse says what is wrong, and where)
    if recognise_document(document) != "tokenizer.json":
        return None
    return Recognised("tokenizer.json", document, cut=found[1])


def _tekken_without_vocab(contents: bytes) -> Recognised | None:
    """A Tekken file, its "vocab" array left unparsed, or None (then the whole file is parsed).

    That array is nearly all of the file (150,000 objects): json.loads spends ~0.1 s building them, which
    the loader does not need. The rest of the file is parsed by json with the array replaced by [], so it is
    checked as before; the array itself is checked by whoever reads it (see _json_scan.pxi).
    """
    span = json_member_span(contents, "vocab")
    if span is None or contents[span[0]:span[0] + 1] != b"[":
        return None
    start, end = span
    try:
        document = json.loads(contents[:start] + b"[]" + contents[end:])
    except (ValueError, RecursionError):
        return None     # (the whole file's parse says what is wrong, and where)
    if recognise_document(document) != "tekken":
        return None
    del document["vocab"]
    return Recognised("tekken", document, unparsed_vocab=memoryview(contents)[start:end])


def _not_utf8(start: bytes) -> bool:
    try:
        start.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(start) - 3     # (a character cut at the end of the sample is fine)
    return False


def wrong_format(label: str, kind: str, wanted: str) -> str:
    """The message for a file of `kind` given to the loader of `wanted` (both keys of FORMATS), e.g.
    "tekken.json: this is a Mistral Tekken file: use bytebpe.from_tekken_json, not bytebpe.from_tokenizer_json"."""
    expected = FORMATS[wanted]
    found = FORMATS.get(kind)
    if found is None:       # "corrupt json"
        return f"{label}: not {expected.description}"
    if found.loader is None:
        return f"{label}: this is {found.description}; {expected.loader} reads {expected.description}"
    return f"{label}: this is {found.description}: use {found.loader}, not {expected.loader}"
