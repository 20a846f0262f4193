"""Hugging Face `tokenizer.json` import: a byte-level BPE tokenizer as an `Encoding` with HF's exact ids.

HF `tokenizers` encodes in five stages, each reproduced here from its source (tokenizers/src):
1. added tokens (`tokenizer/added_vocabulary.rs`): the non-normalized ones are cut out of the raw text, the
   rest of the text is normalized, then the normalized ones are cut out of that; matching is leftmost-
   longest over every added token's content, and a match that is skipped (a special token not allowed, a
   `single_word` token inside a word) still consumes its text; `lstrip`/`rstrip` widen a match over
   whitespace. Here: the `special_split` callable the core already takes, returning ordinary text
   (normalized) and token contents alternately.
2. normalizer: NFC/NFD/NFKC/NFKD, Lowercase (per character, as Rust's `char::to_lowercase`), Replace,
   Prepend, Sequence.
3. pre-tokenizer: Split (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous; invert), Digits,
   ByteLevel (prefix space, GPT-2's regex; it must come last: it maps bytes to characters), Sequence. A
   single split by a known pattern runs on its hand-written scanner, a single Isolated split by any other
   pattern of the family (pattern_compiler.py: Llama 3's, Qwen's...) on the compiled scanner with HF's
   character classes, DeepSeek's sequence of three Splits on its own scanner, all without the GIL; anything
   else runs as a Python callable over `regex`, with Oniguruma's `X{n,m}+` (a repeated interval, not a
   possessive one) rewritten and Oniguruma-only syntax refused.
4. model: BPE by pair rank (`MergeTable.from_pair_merges`; see `_core.pyx` and `_reference.py`).
5. decoder: ByteLevel (a token whose characters are all byte characters is those bytes, any other token its
   UTF-8), then lossy UTF-8, as `Encoding.decode` does.
6. post-processor, only with `from_tokenizer_json(..., add_special_tokens=True)` (HF's
   `add_special_tokens=True`): the ids its single-sequence template puts before and after each document's
   ids (TemplateProcessing, RobertaProcessing's and BertProcessing's cls/sep, ByteLevel: none, a Sequence
   of these with at most one that adds ids). Here: the splitter returns those ids as extra "token" parts
   around the text's own, so every encode method (single, batch, numpy, ordinary) goes through it.
Everything else is refused with a `TokenizerJsonError` naming the component. By default bytebpe's ids are
those of HF's `add_special_tokens=False`, as tiktoken's `encode` adds nothing either.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import re
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _core, _pretokenize, patterns
from .atomic_write import write_bytes_atomically
from .encoding import Encoding, _special_token_regex
from .file_formats import (NESTED_TOO_DEEPLY, TokenizerFileError, recognise, recognise_document, shortened,
                           wrong_format)
from .hf_json import _byte_to_char, oniguruma_pattern
from .pattern_compiler import UnsupportedPattern
from .pretokenizer import regex_timeout, timed_out

if TYPE_CHECKING:
    import regex

__all__ = ["TokenizerJsonEncoding", "TokenizerJsonError", "from_tokenizer_json"]

# The regex of HF's ByteLevel pre-tokenizer with use_regex (byte_level.rs): GPT-2's original pattern.
GPT2_BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"

# Patterns as HF files write them (Oniguruma) -> the compiled scanner's pattern that cuts the same pieces.
# cl100k/o200k as `to_tokenizer_json` writes them; GPT-2's original form is r50k's (tiktoken's is an
# equivalent rewrite of it).
_KNOWN_PATTERNS = {
    GPT2_BYTE_LEVEL_PATTERN: patterns.R50K_PATTERN,
    oniguruma_pattern(patterns.R50K_PATTERN): patterns.R50K_PATTERN,
    oniguruma_pattern(patterns.CL100K_PATTERN): patterns.CL100K_PATTERN,
    oniguruma_pattern(patterns.O200K_PATTERN): patterns.O200K_PATTERN,
}

# DeepSeek's pre-tokenizer (V3, R1), as its tokenizer.json writes it: these three Isolated Splits, then ByteLevel
# without a prefix space or regex. The DEEPSEEK scanner cuts the same pieces (see _pretokenize.pyx).
_DEEPSEEK_SPLITS = (
    "\\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)

# Oniguruma syntax with another meaning (or none) in `regex`: \h is a hex digit there, \R, \X, \K, \G,
# \y, \Y, \O, absent operators and subexpression calls have no exact counterpart here.
_ONIGURUMA_ONLY = re.compile(r"\\[hHRXKGyYO]|\(\?~|\\g<|\\g'")
# Oniguruma's possessive-looking interval `X{n,m}+` is `(?:X{n,m})+` (hf_json has the reverse rewrite).
_ONIG_INTERVAL_PLUS = re.compile(r"(\\[pP]\{[^}]*\}|\\.|\[(?:\\.|[^\]\\])*\]|[^\\()|?*+{])(\{\d+(?:,\d*)?\})\+")

# `regex` is imported where a file first needs it (a Split pattern, ByteLevel's regex, a single_word or
# stripped added token), not with this module: most files need none of it, and loading one should not pay
# for its import.


class _EdgePatterns(NamedTuple):
    word_at_end: regex.Pattern[str]
    word_at_start: regex.Pattern[str]
    space_at_end: regex.Pattern[str]
    space_at_start: regex.Pattern[str]


@functools.cache
def _edge_patterns() -> _EdgePatterns:
    import regex

    return _EdgePatterns(regex.compile(r"\w\Z"), regex.compile(r"\w"), regex.compile(r"\s*\Z"), regex.compile(r"\s*"))

Pieces = list[str]
Step = Callable[[str], Pieces]


class TokenizerJsonError(TokenizerFileError):
    """A `tokenizer.json` that bytebpe cannot load exactly: corrupt, inconsistent, or using a component
    (named in the message) that it does not support."""


# ==== reading ======================================================================================


def from_tokenizer_json(source: str | os.PathLike[str], *, add_special_tokens: bool = False) -> TokenizerJsonEncoding:
    """An `Encoding` that gives HF `tokenizers`' ids for a byte-level BPE `tokenizer.json`.

    `source` is a path, or the JSON text itself (a str starting with "{" or "["). The contract, checked by the
    tests with HF as the oracle: ``enc.encode(text, allowed_special="all")`` equals
    ``tok.encode(text, add_special_tokens=False).ids``, ``enc.encode_ordinary(text)`` equals it with
    ``encode_special_tokens=True``, and ``enc.decode(ids)`` equals ``tok.decode(ids, skip_special_tokens=False)``.

    With ``add_special_tokens=True`` the encoding applies the file's `post_processor` as HF does with
    ``tok.encode(text, add_special_tokens=True)``: every encode method (`encode`, `encode_ordinary`,
    `encode_to_numpy`, `encode_batch`, `encode_ordinary_batch`, `encode_batch_to_numpy`) puts the
    template's ids before and after each document's ids — Llama 3's ``<|begin_of_text|> $A`` gives its BOS
    id first, RoBERTa's cls/sep give ``<s> ... </s>``, even for empty text; `prefix_ids` and `suffix_ids`
    say which. Only the single-sequence template matters (bytebpe encodes no pairs): TemplateProcessing
    (one ``$A``), RobertaProcessing, BertProcessing, ByteLevel (adds nothing), or a Sequence of these with at
    most one that adds ids; anything else is a `TokenizerJsonError` naming it. A file without a
    post-processor adds nothing, as in HF.
    """
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        text, name = source, "tokenizer.json"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            _refuse_other_format(path)     # (a binary file)
            raise TokenizerJsonError(f"cannot read {str(path)!r}: {error}") from None
        except OSError as error:
            raise TokenizerJsonError(f"cannot read {str(path)!r}: {error}") from None
        name = path.name
        if text.lstrip("\ufeff \t\r\n")[:1] not in ("{", "["):
            _refuse_other_format(path)     # (a .tiktoken file, ...)
    else:
        raise TypeError(f"expected a path or the JSON text, got {type(source).__name__}")
    if not isinstance(add_special_tokens, bool):
        raise TypeError(f"add_special_tokens must be a bool, got {type(add_special_tokens).__name__}")
    return TokenizerJsonEncoding._from_json_text(text, name, add_special_tokens)


def _refuse_other_format(path: Path) -> None:
    """A TokenizerJsonError naming the format of a file that is not JSON, when it is one bytebpe knows."""
    found = recognise(path.read_bytes()).kind
    if found not in ("unknown", "corrupt json"):
        raise TokenizerJsonError(wrong_format(str(path), found, "tokenizer.json"))


def _load_json(text: str, name: str = "tokenizer.json") -> dict[str, Any]:
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise TokenizerJsonError(f"not valid JSON: {error}") from None
    except RecursionError:
        raise TokenizerJsonError(f"{name}: {NESTED_TOO_DEEPLY}") from None
    return _checked_spec(spec, name)


def _checked_spec(spec: Any, name: str) -> dict[str, Any]:
    """The parsed file, if it is a tokenizer.json; a file of another format is an error naming it (`name`: the
    file's)."""
    if not isinstance(spec, dict) or "model" not in spec:
        found = recognise_document(spec)
        if found not in ("json", "tokenizer.json"):
            raise TokenizerJsonError(wrong_format(name, found, "tokenizer.json"))
        raise TokenizerJsonError("not a tokenizer.json: expected an object with a 'model'")
    for component in ("truncation", "padding"):
        if spec.get(component) is not None:
            raise TokenizerJsonError(f"{component} is not supported (bytebpe never cuts or pads): set it to null")
    return spec


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], component: str, default: Any = None) -> Any:
    value = obj.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TokenizerJsonError(f"{component}: {key!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


# ==== the model ====================================================================================


class _Model:
    """The BPE model: its vocabulary as bytes, its merge table, and the ids only decoding can meet."""

    def __init__(self, model: Any) -> None:
        if not isinstance(model, dict):
            raise TokenizerJsonError(f"model must be an object, got {model!r}")
        kind = model.get("type", "BPE")
        if kind != "BPE":
            raise TokenizerJsonError(f"model {kind!r} is not supported: only BPE")
        for key in ("continuing_subword_prefix", "end_of_word_suffix"):
            if model.get(key) not in (None, ""):
                raise TokenizerJsonError(f"model BPE: {key} is not supported (got {model[key]!r})")
        if model.get("dropout") not in (None, 0, 0.0):
            raise TokenizerJsonError(f"model BPE: dropout is not supported (got {model['dropout']!r})")
        if model.get("byte_fallback", False):
            raise TokenizerJsonError("model BPE: byte_fallback is not supported")
        self.ignore_merges = _field(model, "ignore_merges", bool, "model BPE", False)
        vocab = _field(model, "vocab", dict, "model BPE")
        merges = _field(model, "merges", list, "model BPE")
        ids = list(vocab.values())
        if not (all(type(token_id) is int for token_id in ids) and len(set(ids)) == len(ids) and "" not in vocab
                and (not ids or (min(ids) >= 0 and max(ids) < 2**31 - 1))):
            _check_vocab_entries(vocab)     # raises, naming the first entry that is wrong
        self.vocab: dict[str, int] = dict(vocab)
        self.ids = frozenset(ids)
        self.token_ids: dict[bytes, int] = {}       # the tokens BPE can make: byte characters only
        self.decode_only: dict[int, bytes] = {}     # other entries: decode as their UTF-8 (HF's ByteLevel decoder)
        # Each byte character becomes its byte, anything else a character Latin-1 cannot encode: one C-level
        # translate and encode per token.
        to_latin1 = _TO_LATIN1
        for token, token_id in vocab.items():
            try:
                self.token_ids[token.translate(to_latin1).encode("latin-1")] = token_id
            except UnicodeEncodeError:
                self.decode_only[token_id] = token.encode("utf-8")
        missing = [byte for byte in range(256) if bytes([byte]) not in self.token_ids]
        if missing and model.get("unk_token") is not None:
            raise TokenizerJsonError(
                f"model BPE: an unk_token with a vocabulary lacking {len(missing)} of the 256 byte characters is "
                "not supported (HF would put the unk token in place of those bytes)")
        pairs = _merge_pairs(merges, self.vocab, self.decode_only)
        try:
            self.table = _core.MergeTable.from_pair_merges(self.token_ids, pairs, self.ignore_merges)
        except ValueError as error:
            _merge_pairs_one_by_one(merges, self.vocab)     # names the merge whose result is not a token
            raise TokenizerJsonError(f"model BPE: {error}") from None


# GPT-2's byte characters -> the bytes they stand for, as Latin-1 characters; every other character below 256
# -> one Latin-1 cannot encode (U+FFFF), so that encoding a translated token fails unless it is all bytes.
_TO_LATIN1 = {**{code: 0xFFFF for code in range(256)},
              **{ord(char): byte for byte, char in enumerate(_byte_to_char())}}


def _check_vocab_entries(vocab: dict[Any, Any]) -> None:
    """The error for the first entry of `vocab` that is not a token with an id of its own."""
    owner: dict[int, str] = {}
    for token, token_id in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**31 - 1:
            raise TokenizerJsonError(f"model BPE: id of {token!r} is {token_id!r}, outside 0..{2**31 - 2}")
        if token_id in owner:
            raise TokenizerJsonError(f"model BPE: id {token_id} is given to both {owner[token_id]!r} and {token!r}")
        if not token:
            raise TokenizerJsonError("model BPE: the empty string cannot be a token")
        owner[token_id] = token


def _merge_pairs(merges: list[Any], vocab: dict[str, int], decode_only: dict[int, bytes]) -> list[tuple[int, int]]:
    """The merges as (left id, right id), leaving out those of tokens that are not byte characters (no
    byte-level piece ever holds their parts); a malformed merge, or one naming a string that is not in the
    vocabulary, is an error naming it. In bulk; one by one (`_merge_pairs_one_by_one`) only to name what is
    wrong. (Whether a merge of byte characters makes a token is for the table to check.)"""
    try:
        # In C-level loops (map, set, zip): 151k merges took ~0.15 s as a Python loop.
        kinds = set(map(type, merges))
        if kinds == {str}:      # "a b", as older files write them
            parts = [merge.split(" ") for merge in merges]
        elif kinds == {list}:   # ["a", "b"]
            parts = merges
        else:
            raise TypeError("a merge of another shape")
        if merges and set(map(len, parts)) != {2}:
            raise ValueError("a merge of another length")
        ids = list(map(vocab.__getitem__, itertools.chain.from_iterable(parts)))   # KeyError: a name not in it
        pairs = list(zip(ids[0::2], ids[1::2]))
        # Whether each merge makes a token: the caller's table checks it for the merges of byte characters
        # (`from_pair_merges`), here for the others.
        if decode_only and not all(left + right in vocab for (left, right), (left_id, right_id) in zip(parts, pairs)
                                   if left_id in decode_only or right_id in decode_only):
            raise KeyError("a merge makes no token")
    except (KeyError, TypeError, ValueError):
        pairs = _merge_pairs_one_by_one(merges, vocab)
    if decode_only:
        pairs = [(left, right) for left, right in pairs if left not in decode_only and right not in decode_only]
    return pairs


def _merge_pairs_one_by_one(merges: list[Any], vocab: dict[str, int]) -> list[tuple[int, int]]:
    pairs = []
    for index, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, list) and all(isinstance(part, str) for part in merge):
            parts = merge
        else:
            raise TokenizerJsonError(f"model BPE: merge {index} must be 'a b' or ['a', 'b'], got {merge!r}")
        if len(parts) != 2:
            raise TokenizerJsonError(f"model BPE: merge {index} must name two tokens, got {merge!r}")
        left, right = parts
        for part in (left, right, left + right):
            if part not in vocab:
                raise TokenizerJsonError(f"model BPE: merge {index} {merge!r}: {part!r} is not in the vocabulary")
        pairs.append((vocab[left], vocab[right]))
    return pairs


# ==== normalizers ==================================================================================


def _lowercase(text: str) -> str:
    # Python's str.lower() applies the Final_Sigma context rule; HF lowercases character by character.
    return text.lower() if "\u03a3" not in text else "".join(char.lower() for char in text)


def _normalizer(spec: Any) -> Callable[[str], str] | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"normalizer must be an object or null, got {spec!r}")
    kind = spec.get("type")
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return lambda text: unicodedata.normalize(kind, text)
    if kind == "Lowercase":
        return _lowercase
    if kind == "Prepend":
        prefix = _field(spec, "prepend", str, "normalizer Prepend")
        return lambda text: prefix + text if text else text
    if kind == "Replace":
        pattern = _compiled_pattern(spec.get("pattern"), "normalizer Replace")
        content = _field(spec, "content", str, "normalizer Replace")

        def replace(text: str) -> str:
            pieces, last = [], 0
            for start, end in _matches(pattern, text, "normalizer Replace"):
                pieces += [text[last:start], content]
                last = end
            return "".join(pieces) + text[last:]
        return replace
    if kind == "Sequence":
        steps = [step for step in (_normalizer(s) for s in _field(spec, "normalizers", list, "normalizer Sequence"))
                 if step is not None]
        if not steps:
            return None

        def sequence(text: str) -> str:
            for step in steps:
                text = step(text)
            return text
        return sequence
    raise TokenizerJsonError(f"normalizer {kind!r} is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, "
                             "Replace, Prepend, Sequence)")


# ==== patterns =====================================================================================


def _python_pattern(onig: str, component: str) -> str:
    """An Oniguruma pattern (HF's regex engine) as `regex` reads it the same way, or an error."""
    found = _ONIGURUMA_ONLY.search(onig)
    if found:
        raise TokenizerJsonError(f"{component}: {found.group()!r} in pattern {onig!r} is Oniguruma syntax "
                                 "that bytebpe does not translate")
    if re.search(r"\[[^\]]*&&", onig):
        raise TokenizerJsonError(f"{component}: class intersection '&&' in pattern {onig!r} is not supported")
    return _ONIG_INTERVAL_PLUS.sub(r"(?:\1\2)+", onig)


def _compiled_pattern(pattern: Any, component: str) -> regex.Pattern[str]:
    import regex

    if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str):
        raise TokenizerJsonError(f"{component}: pattern must be {{'String': ...}} or {{'Regex': ...}}, got {pattern!r}")
    (kind, source), = pattern.items()
    if kind == "String":
        return regex.compile(regex.escape(source))
    if kind != "Regex":
        raise TokenizerJsonError(f"{component}: pattern kind {kind!r} is not String or Regex")
    try:
        return regex.compile(_python_pattern(source, component))
    except regex.error as error:
        raise TokenizerJsonError(f"{component}: pattern {source!r} does not compile: {error}") from None


def _matches(pattern: regex.Pattern[str], text: str, component: str) -> list[tuple[int, int]]:
    """The non-overlapping matches, leftmost first; an empty match is refused (Oniguruma's iterator and
    `regex` step over empty matches differently)."""
    spans = []
    try:
        matches = list(pattern.finditer(text, concurrent=False, timeout=regex_timeout(text)))
    except TimeoutError:
        raise timed_out(f"{component}: pattern {pattern.pattern!r}", text) from None
    for match in matches:
        start, end = match.span()
        if start == end:
            raise TokenizerJsonError(f"{component}: pattern {pattern.pattern!r} matched the empty string in "
                                     f"{text[:40]!r}; patterns that can match nothing are not supported")
        spans.append((start, end))
    return spans


def _split_by(spans: list[tuple[int, int]], text: str, behavior: str, invert: bool) -> Pieces:
    """HF's NormalizedString::split (normalizer.rs) of `text` around `spans`, empty pieces dropped."""
    events: list[tuple[int, int, bool]] = []    # (start, end, is a match), covering the text
    last = 0
    for start, end in spans:
        if last != start:
            events.append((last, start, invert))
        events.append((start, end, not invert))
        last = end
    if last != len(text):
        events.append((last, len(text), invert))
    kept: list[list[int]] = []
    if behavior == "Isolated":
        kept = [[start, end] for start, end, _ in events]
    elif behavior == "Removed":
        kept = [[start, end] for start, end, is_match in events if not is_match]
    elif behavior in ("Contiguous", "MergedWithPrevious"):
        previous = False
        for start, end, is_match in events:
            joins = is_match == previous if behavior == "Contiguous" else is_match and not previous
            if joins and kept:
                kept[-1][1] = end
            else:
                kept.append([start, end])
            previous = is_match
    elif behavior == "MergedWithNext":
        previous = False
        for start, end, is_match in reversed(events):
            if is_match and not previous and kept:
                kept[-1][0] = start
            else:
                kept.append([start, end])
            previous = is_match
        kept.reverse()
    else:
        raise TokenizerJsonError(f"pre_tokenizer Split: behavior {behavior!r} is not supported")
    return [text[start:end] for start, end in kept if end > start]


# ==== pre-tokenizers ===============================================================================


def _is_numeric(char: str) -> bool:
    # Rust's char::is_numeric: general categories Nd, Nl and No.
    return unicodedata.category(char) in ("Nd", "Nl", "No")


def _digits(individual: bool) -> Step:
    behavior = "Isolated" if individual else "Contiguous"

    def split(text: str) -> Pieces:
        # HF's split by a character predicate: each matching character is one match.
        spans = [(i, i + 1) for i, char in enumerate(text) if _is_numeric(char)]
        return _split_by(spans, text, behavior, False)
    return split


def _pattern_split(pattern: regex.Pattern[str], behavior: str, invert: bool, component: str) -> Step:
    if behavior not in ("Isolated", "Removed", "Contiguous", "MergedWithPrevious", "MergedWithNext"):
        raise TokenizerJsonError(f"{component}: behavior {behavior!r} is not supported")
    if behavior == "Isolated" and pattern.groups == 0:
        # The common case (every piece kept, matches and gaps alike) in one C call: `split` around the whole
        # pattern as one group gives gaps and matches alternately.
        import regex

        around = regex.compile(f"({pattern.pattern})", pattern.flags)

        def isolated(text: str) -> Pieces:
            try:
                parts = around.split(text, concurrent=False, timeout=regex_timeout(text))
            except TimeoutError:
                raise timed_out(f"{component}: pattern {pattern.pattern!r}", text) from None
            if "" in parts[1::2]:
                _matches(pattern, text, component)      # raises, naming the empty match
            return [part for part in parts if part]
        return isolated
    return lambda text: _split_by(_matches(pattern, text, component), text, behavior, invert)


def _pre_tokenizer_steps(spec: Any) -> list[tuple[Step, dict[str, Any]]]:
    """The pre-tokenizer as a flat list of (step, its JSON); ByteLevel must be the last one."""
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"pre_tokenizer must be an object, got {spec!r}")
    kind = spec.get("type")
    if kind == "Sequence":
        steps = []
        for inner in _field(spec, "pretokenizers", list, "pre_tokenizer Sequence"):
            steps += _pre_tokenizer_steps(inner)
        return steps
    if kind == "Split":
        component = "pre_tokenizer Split"
        pattern = _compiled_pattern(spec.get("pattern"), component)
        behavior = _field(spec, "behavior", str, component)
        return [(_pattern_split(pattern, behavior, _field(spec, "invert", bool, component, False), component), spec)]
    if kind == "Digits":
        return [(_digits(_field(spec, "individual_digits", bool, "pre_tokenizer Digits", False)), spec)]
    if kind == "ByteLevel":
        prefix = _field(spec, "add_prefix_space", bool, "pre_tokenizer ByteLevel", True)
        use_regex = _field(spec, "use_regex", bool, "pre_tokenizer ByteLevel", True)
        import regex

        gpt2 = regex.compile(GPT2_BYTE_LEVEL_PATTERN)

        def byte_level(text: str) -> Pieces:
            if prefix and not text.startswith(" "):
                text = " " + text
            if not use_regex:
                return [text]
            return [match.group() for match in gpt2.finditer(text, concurrent=False)]
        return [(byte_level, spec)]
    raise TokenizerJsonError(f"pre_tokenizer {kind!r} is not supported (supported: ByteLevel, Split, Digits, "
                             "Sequence)")


def _single_split_pattern(steps: list[tuple[Step, dict[str, Any]]]) -> str | None:
    """The Oniguruma pattern of steps that are one Isolated Split by a regex, then ByteLevel without prefix
    space or regex (the shape the compiled scanners can cut), else None."""
    if len(steps) != 2:
        return None
    split, last = steps[0][1], steps[1][1]
    if last.get("use_regex", True) or last.get("add_prefix_space", True):
        return None
    pattern = split.get("pattern")
    if (split.get("type") != "Split" or split.get("behavior") != "Isolated" or split.get("invert", False)
            or not isinstance(pattern, dict) or not isinstance(pattern.get("Regex"), str)):
        return None
    return pattern["Regex"]


class _PreTokenizer:
    """The pre-tokenizer as the core takes it: a compiled `Scanner` when it is one known split, else a
    callable text -> pieces. `prefix_space`: ByteLevel's prefix space, added per segment by the splitter
    when the scanner runs (it would otherwise go on each split, which a scanner cannot see)."""

    def __init__(self, spec: Any) -> None:
        if spec is None:
            raise TokenizerJsonError("pre_tokenizer null: without ByteLevel this is not a byte-level model")
        steps = _pre_tokenizer_steps(spec)
        last = steps[-1][1]
        if last.get("type") != "ByteLevel" or any(s.get("type") == "ByteLevel" for _, s in steps[:-1]):
            raise TokenizerJsonError("pre_tokenizer: ByteLevel must be the last step, once (it maps bytes to "
                                     "characters; bytebpe supports byte-level BPE models only)")
        self.prefix_space = False
        self.pretokenize: Any = None
        # What truncate and chunks cut text with: the (pattern, dialect) of the one split that cuts it, or the
        # hand-written scanner of DeepSeek's three (it reads nothing before a piece's start either); None
        # when the pre-tokenizer is Python steps.
        self.budget_split: tuple[str, str] | _pretokenize.Scanner | None = None
        self.known_pattern = self._known_pattern(steps)
        if self.known_pattern is not None:
            self.pretokenize = _pretokenize.Scanner.for_pattern(self.known_pattern)
            self.prefix_space = bool(last.get("add_prefix_space", True))
            self.budget_split = (self.known_pattern, "tiktoken")
        elif self._is_deepseek(steps):
            self.pretokenize = self.budget_split = _pretokenize.Scanner(_pretokenize.PatternKind.DEEPSEEK)
        elif (compiled := self._compiled_split(steps)) is not None:
            self.pretokenize = compiled
            self.budget_split = (_single_split_pattern(steps), "hf")  # type: ignore[assignment]
        else:
            functions = [step for step, _ in steps]

            def pretokenize(text: str) -> Pieces:
                pieces = [text] if text else []
                for step in functions:
                    pieces = [part for piece in pieces for part in step(piece) if part]
                return pieces
            self.pretokenize = pretokenize

    @staticmethod
    def _is_deepseek(steps: list[tuple[Step, dict[str, Any]]]) -> bool:
        """Whether the steps are DeepSeek's, which the DEEPSEEK scanner cuts (the JSON, key by key)."""
        *splits, (_, last) = steps
        return (len(splits) == len(_DEEPSEEK_SPLITS)
                and all({"invert": False, **spec} == {"type": "Split", "pattern": {"Regex": pattern},
                                                      "behavior": "Isolated", "invert": False}
                        for (_, spec), pattern in zip(splits, _DEEPSEEK_SPLITS))
                and last.get("add_prefix_space") is False and last.get("use_regex") is False)

    @staticmethod
    def _compiled_split(steps: list[tuple[Step, dict[str, Any]]]) -> _pretokenize.Scanner | None:
        """The compiled scanner (HF's classes) of one Isolated Split by a pattern of the family followed by
        ByteLevel without prefix space or regex (Llama 3's, Qwen's, most byte-level files'), if it is that."""
        split = _single_split_pattern(steps)
        if split is None:
            return None
        try:
            return _pretokenize.Scanner.compiled(split, "hf")
        except UnsupportedPattern:
            return None

    @staticmethod
    def _known_pattern(steps: list[tuple[Step, dict[str, Any]]]) -> str | None:
        """The tiktoken pattern whose compiled scanner cuts the pieces these steps cut, if any."""
        last = steps[-1][1]
        if len(steps) == 1 and last.get("use_regex", True):
            return patterns.R50K_PATTERN
        split = _single_split_pattern(steps)
        return None if split is None else _KNOWN_PATTERNS.get(split)


# ==== post-processors ==============================================================================


def _pair_id(spec: dict[str, Any], key: str, component: str) -> int:
    """RobertaProcessing's / BertProcessing's ["<s>", 0] form: the id."""
    value = spec.get(key)
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
            or not isinstance(value[1], int) or isinstance(value[1], bool)):
        raise TokenizerJsonError(f"{component}: {key!r} must be [token, id], got {value!r}")
    return value[1]


def _template_ids(spec: dict[str, Any]) -> tuple[list[int], list[int]]:
    """TemplateProcessing's single-sequence template as (ids before $A, ids after it)."""
    component = "post_processor TemplateProcessing"
    single = _field(spec, "single", list, component)
    special_tokens = _field(spec, "special_tokens", dict, component, {})
    around: tuple[list[int], list[int]] = ([], [])
    sequences = 0
    for piece in single:
        if isinstance(piece, dict) and len(piece) == 1 and isinstance(piece.get("Sequence"), dict):
            if piece["Sequence"].get("id") != "A":
                raise TokenizerJsonError(f"{component}: the single template names sequence "
                                         f"{piece['Sequence'].get('id')!r}; only $A is a single sequence")
            sequences += 1
            continue
        if not (isinstance(piece, dict) and len(piece) == 1 and isinstance(piece.get("SpecialToken"), dict)):
            raise TokenizerJsonError(f"{component}: template piece {piece!r} is neither a Sequence nor a SpecialToken")
        name = piece["SpecialToken"].get("id")
        token = special_tokens.get(name)
        ids = token.get("ids") if isinstance(token, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise TokenizerJsonError(f"{component}: special token {name!r} of the template has no ids in "
                                     "'special_tokens'")
        around[min(sequences, 1)].extend(ids)
    if sequences != 1:
        raise TokenizerJsonError(f"{component}: the single template must hold $A exactly once (it holds it "
                                 f"{sequences} times)")
    return around


def _post_part(token_id: int) -> str:
    """The splitter's part for a post-processor id (the core looks token parts up by name)."""
    return f"\0post_processor {token_id}"


def _post_processor_ids(spec: Any) -> tuple[list[int], list[int]]:
    """The ids HF's post-processor puts (before, after) one sequence's ids with add_special_tokens=True."""
    if spec is None:
        return [], []
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "ByteLevel":
        return [], []       # it only trims offsets
    if kind in ("RobertaProcessing", "BertProcessing"):
        component = f"post_processor {kind}"
        return [_pair_id(spec, "cls", component)], [_pair_id(spec, "sep", component)]
    if kind == "TemplateProcessing":
        return _template_ids(spec)
    if kind == "Sequence":
        processors = _field(spec, "processors", list, "post_processor Sequence")
        adding = [inner for inner in processors if not (isinstance(inner, dict) and inner.get("type") == "ByteLevel")]
        if len(adding) > 1:
            # HF hands the next processor the pieces of the previous template as separate sequences: RoBERTa
            # after a template wraps each piece in <s> </s>. No real file does this; refuse rather than guess.
            kinds = ", ".join(str(inner.get("type") if isinstance(inner, dict) else inner) for inner in adding)
            raise TokenizerJsonError(f"post_processor Sequence: more than one processor that adds ids ({kinds}) "
                                     "is not supported")
        return _post_processor_ids(adding[0]) if adding else ([], [])
    raise TokenizerJsonError(f"post_processor {kind!r} is not supported with add_special_tokens=True (supported: "
                             "TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence)")


# ==== added tokens =================================================================================


class _AddedToken:
    __slots__ = ("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special", "pattern")

    def __init__(self, spec: Any, index: int) -> None:
        component = f"added_tokens[{index}]"
        if not isinstance(spec, dict):
            raise TokenizerJsonError(f"{component} must be an object, got {spec!r}")
        token_id = spec.get("id")
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**32:
            # HF refuses the file then ("expected u32"), though it gives the token an id of its own choosing.
            raise TokenizerJsonError(f"{component}.id: {token_id!r} is not an id (an integer from 0 to 2**32 - 1, "
                                     "as HF requires)" if "id" in spec else f"{component}: no field 'id'")
        self.id: int = token_id
        self.content = _field(spec, "content", str, component)
        self.single_word = _field(spec, "single_word", bool, component, False)
        self.lstrip = _field(spec, "lstrip", bool, component, False)
        self.rstrip = _field(spec, "rstrip", bool, component, False)
        self.special = _field(spec, "special", bool, component, False)
        self.normalized = _field(spec, "normalized", bool, component, not self.special)
        self.pattern = self.content     # what is matched: the normalized content for a normalized token


def _added_tokens(specs: Any, model: _Model, normalize: Callable[[str], str] | None) -> list[_AddedToken]:
    """The added tokens with the ids HF gives them (AddedVocabulary::add_tokens): the id of the same string
    in the vocabulary, else the next id from the vocabulary's size on, in file order. HF ignores the ids
    written in the file (it warns when they differ); so does this."""
    if not isinstance(specs, list):
        raise TokenizerJsonError(f"added_tokens must be a list, got {specs!r}")
    by_content: dict[str, _AddedToken] = {}
    next_id = len(model.vocab)
    for index, spec in enumerate(specs):
        token = _AddedToken(spec, index)
        if not token.content:
            continue
        if token.content in by_content:
            token.id = by_content[token.content].id
            token.special = token.special or by_content[token.content].special
        elif token.content in model.vocab:
            if token.id is not None and token.id != model.vocab[token.content]:
                warnings.warn(f"added token {shortened(token.content)} has id {token.id} in the file, but HF gives it "
                              f"its vocabulary id {model.vocab[token.content]}", stacklevel=3)
            token.id = model.vocab[token.content]
        else:
            if token.id is not None and token.id != next_id:
                warnings.warn(f"added token {shortened(token.content)} has id {token.id} in the file, but HF gives it "
                              f"id {next_id}", stacklevel=3)
            token.id = next_id
            next_id += 1
            if token.id in model.ids:
                raise TokenizerJsonError(f"added token {shortened(token.content)} gets id {token.id}, which the vocabulary "
                                         "already gives to another string")
        if token.normalized and normalize is not None:
            token.pattern = normalize(token.content)
        by_content[token.content] = token
    return list(by_content.values())


def _starts_inside(first: list[str], second: list[str]) -> bool:
    """Whether a string of `second` can start inside one of `first` (at or after its start) and overlap it:
    held by it, or running on past its end. (All of them non-empty.)"""
    by_first_char: dict[str, list[str]] = {}
    for other in second:
        by_first_char.setdefault(other[0], []).append(other)
    return any(string.startswith(other, at) or other.startswith(string[at:])
               for string in first for at, char in enumerate(string) for other in by_first_char.get(char, ()))


class _AddedTokenSplitter:
    """HF's AddedVocabulary::extract_and_normalize as the core's `special_split`: ordinary text (normalized)
    and the contents of the added tokens found, alternately. `skipped`: special tokens whose matches are
    found but not split out (HF's encode_special_tokens)."""

    def __init__(self, tokens: list[_AddedToken], skipped: frozenset[str], normalize: Callable[[str], str] | None,
                 prefix_space: bool, around: tuple[list[str], list[str]]) -> None:
        self.by_content = {token.content: token for token in tokens}
        self.by_pattern = {token.pattern: token for token in tokens if token.normalized}
        raw = frozenset(token.content for token in tokens if not token.normalized)
        normalized = frozenset(token.pattern for token in tokens if token.normalized and token.pattern)
        self.raw_search = _special_token_regex(raw).finditer if raw else None
        self.normalized_search = _special_token_regex(normalized).finditer if normalized else None
        # Most documents hold no added token. Without a normalizer both passes search the text as given, so
        # one search for any token answers for both, instead of two Python-level passes finding nothing.
        self.any_search = _special_token_regex(raw | normalized).search if normalize is None and (raw | normalized) \
            else None
        self.skipped = skipped
        self.normalize = normalize
        self.prefix_space = prefix_space
        # The post-processor's ids as token parts: ["", p1, ..., "", pn] before the text's parts (which start
        # with ordinary text), [s1, "", ..., sm, ""] after them (which end with ordinary text).
        before, after = around
        self.before = [part for key in before for part in ("", key)]
        self.after = [part for key in after for part in (key, "")]

    def simplest(self) -> Any:
        """What the core can take instead of this splitter for the same parts: None when it never splits
        (no added token can be split out, nothing normalized, prepended or put around), the `re` split that
        named encodings use when it splits at plain raw tokens only, else itself: a Python call that builds
        its parts per document costs more than encoding a short document."""
        if self.before or self.after or self.normalize is not None or self.prefix_space:
            return self
        tokens = list(self.by_content.values())
        active = [token for token in tokens if not (token.special and token.content in self.skipped)]
        if not active:
            return None
        if any(token.single_word or token.lstrip or token.rstrip or not token.content for token in tokens):
            return self
        # Without a normalizer both passes search the text as given, so one leftmost-longest search for the
        # active tokens finds what the two split out, unless an active token can start inside (or where) a
        # token that wins over it: a skipped one of its own pass (whose match hides it), or, for a raw token,
        # a normalized active one (the raw pass runs first; the one search would take the earlier start).
        def contents(normalized: bool, skipped: bool) -> list[str]:
            return [token.content for token in tokens
                    if token.normalized == normalized and (token not in active) == skipped]
        if _starts_inside(contents(False, True), contents(False, False)) or \
                _starts_inside(contents(True, True), contents(True, False)) or \
                _starts_inside(contents(True, False), contents(False, False)):
            return self
        return _special_token_regex(frozenset(token.content for token in active)).split

    def _find(self, sentence: str, search: Any, tokens: dict[str, _AddedToken]) -> list[tuple[str, _AddedToken | None]]:
        if search is None or not sentence:
            return [(sentence, None)]
        splits: list[tuple[str, _AddedToken | None]] = []
        offset = 0
        for match in search(sentence):
            start, stop = match.span()
            token = tokens[match.group()]
            if token.special and token.content in self.skipped:
                continue
            edges = _edge_patterns() if token.single_word or token.lstrip or token.rstrip else None
            if token.single_word and not (
                    (start == 0 or not edges.word_at_end.search(sentence, 0, start))
                    and (stop == len(sentence) or not edges.word_at_start.match(sentence, stop))):
                continue
            if token.lstrip:
                start = max(edges.space_at_end.search(sentence, 0, start).start(), offset)
            if token.rstrip:
                stop = edges.space_at_start.match(sentence, stop).end()
            if offset < start:
                splits.append((sentence[offset:start], None))
            splits.append((sentence[start:stop], token))
            offset = stop
        if offset != len(sentence):
            splits.append((sentence[offset:], None))
        return splits

    def __call__(self, text: str) -> list[str]:
        if self.any_search is not None and self.any_search(text) is None:
            if self.prefix_space and text and not text.startswith(" "):
                text = " " + text
            return self.before + [text] + self.after if self.before or self.after else [text]
        out: list[str] = []     # ordinary, token, ordinary, token, ..., ordinary

        def ordinary(part: str) -> None:
            if self.prefix_space and part and not part.startswith(" "):
                part = " " + part
            if len(out) % 2:
                out[-1] += part     # (never happens: segments alternate) kept for safety of the format
            else:
                out.append(part)

        def token(content: str) -> None:
            if len(out) % 2 == 0:
                out.append("")
            out.append(content)

        for segment, found in self._find(text, self.raw_search, self.by_content):
            if found is not None:
                token(found.content)
                continue
            if not segment:
                continue
            if self.normalize is not None:
                segment = self.normalize(segment)
            for part, found in self._find(segment, self.normalized_search, self.by_pattern):
                if found is not None:
                    token(found.content)
                elif part:
                    ordinary(part)
        if len(out) % 2 == 0:
            out.append("")
        if self.before or self.after:
            return self.before + out + self.after
        return out


# ==== the encoding =================================================================================


def _byte_level_decode(token: str) -> bytes:
    """HF's ByteLevel decoder on one token: its bytes when every character is a byte character, else its
    UTF-8."""
    char_byte = _CHAR_BYTE
    if all(char in char_byte for char in token):
        return bytes(char_byte[char] for char in token)
    return token.encode("utf-8")


_CHAR_BYTE = {char: byte for byte, char in enumerate(_byte_to_char())}


class AddedTokens:
    """The special-token part of a tokenizer.json's encoding (encoding.SpecialTokens' interface): its added
    tokens, split out of text as HF's AddedVocabulary does — the special ones where allowed, the others
    always — each its own id. HF may give an added token the id of a vocabulary token (GPT-2's
    <|endoftext|>), which tiktoken's rules refuse, and decodes an added token from its normalized form. The
    post-processor's ids (`before`, `after`) reach the core as parts of the splitter's output, under names
    that no added token has (the splitter returns only added tokens' contents from text)."""

    def __init__(self, tokens: list[_AddedToken], decode_only: dict[int, bytes],
                 normalize: Callable[[str], str] | None, prefix_space: bool, before: list[int],
                 after: list[int]) -> None:
        self.tokens = {token.content: token.id for token in tokens if token.special}
        self._added = tokens
        self._special = frozenset(self.tokens)
        self._normalize = normalize
        self._prefix_space = prefix_space
        self._around = ([_post_part(i) for i in before], [_post_part(i) for i in after])
        self._splits: dict[frozenset[str], Any] = {}
        self._decode = dict(decode_only)
        for token in tokens:
            # HF decodes an added token from its normalized form (AddedVocabulary::simple_id_to_token).
            self._decode[token.id] = _byte_level_decode(token.pattern if token.normalized else token.content)
        parts = {token.content: token.id for token in tokens}
        # (after the real contents, so that those name their ids for decoding)
        post_parts = {_post_part(token_id): token_id for token_id in before + after}
        if post_parts.keys() & parts.keys():
            raise TokenizerJsonError("added_tokens: a token's content is bytebpe's private name of a "
                                     "post-processor id")
        self._core_parts = parts | post_parts
        # encode_single_token: an added token by its text, or by the bytes it decodes to (HF's token_to_id
        # looks in the added vocabulary first, as encoding splits an added token out first).
        self._ids: dict[str | bytes, int] = {token.content: token.id for token in tokens}
        self._ids.update((self._decode[token.id], token.id) for token in tokens)

    def split(self, allowed: frozenset[str]) -> Any:
        # Remembered per allowed set: with 1,283 added tokens (DeepSeek) building it again took longer than
        # encoding a paragraph.
        try:
            return self._splits[allowed]
        except KeyError:
            splitter = _AddedTokenSplitter(self._added, self._special - allowed, self._normalize, self._prefix_space,
                                 self._around).simplest()
            self._splits[allowed] = splitter
            return splitter

    def token_id(self, text_or_bytes: object) -> int | None:
        return self._ids.get(text_or_bytes) if isinstance(text_or_bytes, (str, bytes)) else None

    def core_parts(self) -> dict[str, int]:
        return self._core_parts

    def decode_bytes(self) -> dict[int, bytes]:
        return self._decode


class _OffsetTrim:
    """HF's ByteLevel post-processor with ``trim_offsets`` (byte_level.rs, `process_offsets`): each token's span
    leaves out its leading and trailing spaces (characters that are the byte-level space or whitespace),
    except one leading space of the first token when ``add_prefix_space`` put it there."""

    def __init__(self, leading: Any, trailing: Any, add_prefix_space: bool) -> None:
        self.leading, self.trailing, self.add_prefix_space = leading, trailing, add_prefix_space

    @classmethod
    def of(cls, processor: Any, model: _Model, tokens: list[_AddedToken]) -> _OffsetTrim | None:
        """The trim the file's post-processor asks for (its ByteLevel, alone or in a Sequence), or None."""
        found = [processor] if isinstance(processor, dict) and processor.get("type") == "ByteLevel" else [
            inner for inner in (processor.get("processors") or [] if isinstance(processor, dict) else [])
            if isinstance(inner, dict) and inner.get("type") == "ByteLevel"]
        if not found or not found[0].get("trim_offsets", True):
            return None
        import numpy as np  # (only for a file that trims offsets)

        size = 1 + max([*model.ids, *(token.id for token in tokens)], default=0)
        leading, trailing = np.zeros(size, np.int64), np.zeros(size, np.int64)
        for data, token_id in model.token_ids.items():     # byte characters: only the space byte is a space
            leading[token_id] = len(data) - len(data.lstrip(b" "))
            trailing[token_id] = len(data) - len(data.rstrip(b" "))
        texts = {token_id: data.decode("utf-8") for token_id, data in model.decode_only.items()}
        texts.update((token.id, token.content) for token in tokens)
        for token_id, content in texts.items():
            leading[token_id] = len(content) - len(content.lstrip(_HF_SPACES))
            trailing[token_id] = len(content) - len(content.rstrip(_HF_SPACES))
        return cls(leading, trailing, bool(found[0].get("add_prefix_space", True)))

    def trimmed(self, ids: Any, spans: Any) -> Any:
        import numpy as np

        lead, trail = self.leading[ids], self.trailing[ids]
        start, end = spans[:, 0].copy(), spans[:, 1].copy()
        first = (np.arange(len(ids)) == 0) | (start == 0)
        if self.add_prefix_space:
            lead[first & (lead == 1)] = 0
        start = np.where(lead > 0, np.minimum(start + lead, end), start)
        end = np.where((trail > 0) & (end >= trail), np.maximum(end - trail, start), end)
        return np.stack([start, end], axis=1)


# What HF's trim counts as a space in a token's text: the byte-level space and Rust's char::is_whitespace.
_HF_SPACES = "\u0120\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000"


class TokenizerJsonEncoding(Encoding):
    """An `Encoding` read from an HF `tokenizer.json` (see `from_tokenizer_json`); pickles as its JSON."""

    _json_text: str
    add_special_tokens: bool
    """Whether each document's ids are wrapped in the post-processor's (`from_tokenizer_json`)."""
    prefix_ids: tuple[int, ...]
    """The ids put before each document's ids: the post-processor's with add_special_tokens=True, else ()."""
    suffix_ids: tuple[int, ...]
    """The ids put after each document's ids: the post-processor's with add_special_tokens=True, else ()."""
    _split_for_budgets: tuple[str, str] | _pretokenize.Scanner | None     # _PreTokenizer.budget_split
    _normal_form: str | None                        # the normalizer, when it is only a Unicode normal form

    @classmethod
    def _from_json_text(cls, text: str, name: str, add_special_tokens: bool = False,
                        spec: dict[str, Any] | None = None) -> TokenizerJsonEncoding:
        """The encoding of the file's `text`; `spec`: the text already parsed (`bytebpe.load_tokenizer` parses
        it once to recognise the format)."""
        spec = _load_json(text, name) if spec is None else _checked_spec(spec, name)
        model_spec = spec.get("model")
        if isinstance(model_spec, dict) and model_spec.get("type", "BPE") != "BPE":
            # The model first: a WordPiece or Unigram file is refused for what it is, not for its decoder.
            raise TokenizerJsonError(f"model {model_spec['type']!r} is not supported: only BPE (byte-level BPE "
                                     f"tokenizers: GPT-2, Llama 3, Qwen, DeepSeek, ...)")
        decoder = spec.get("decoder")
        if not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
            raise TokenizerJsonError(f"decoder {decoder!r} is not supported: only ByteLevel")
        processor = spec.get("post_processor")
        if processor is not None and (not isinstance(processor, dict) or processor.get("type") not in (
                "ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing", "Sequence")):
            raise TokenizerJsonError(f"post_processor {processor!r} is not supported")
        model = _Model(spec["model"])
        normalize = _normalizer(spec.get("normalizer"))
        pre_tokenizer = _PreTokenizer(spec.get("pre_tokenizer"))
        tokens = _added_tokens(spec.get("added_tokens", []), model, normalize)
        before, after = _post_processor_ids(processor) if add_special_tokens else ([], [])
        known_ids = {*model.ids, *(token.id for token in tokens)}
        for token_id in before + after:
            if token_id not in known_ids:
                raise TokenizerJsonError(f"post_processor: id {token_id} is neither in the vocabulary nor an added "
                                         "token (bytebpe could not decode it)")

        specials = AddedTokens(tokens, model.decode_only, normalize, pre_tokenizer.prefix_space, before, after)
        import hashlib  # (here: loading any other kind of file should not pay for its import)

        encoding = cls.__new__(cls)
        # The pattern is only bookkeeping when the pre-tokenizer is a Python callable.
        encoding._assemble(name, pre_tokenizer.known_pattern or r"[\s\S]+", model.table, specials,
                           pretokenize=pre_tokenizer.pretokenize,
                           # Token files record this to check a decode against (tokens.layout.vocabulary_sha256):
                           # the whole file, since the merges, the pre-tokenizer and the added tokens decide the
                           # ids as much as the vocabulary.
                           vocabulary_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
        encoding._json_text = text
        encoding._split_for_budgets = pre_tokenizer.budget_split
        normalizer_spec = spec.get("normalizer")
        encoding._normal_form = normalizer_spec.get("type") if isinstance(normalizer_spec, dict) and \
            normalizer_spec.get("type") in ("NFC", "NFD", "NFKC", "NFKD") else None
        encoding.add_special_tokens = add_special_tokens
        encoding.prefix_ids, encoding.suffix_ids = tuple(before), tuple(after)
        encoding._offset_trim = _OffsetTrim.of(processor, model, tokens)
        return encoding

    def _encode_with_offsets(self, text: str, allowed_special: Any, disallowed_special: Any, as_numpy: bool) -> Any:
        """Encoding's, with the offsets trimmed as the file's ByteLevel post-processor trims them
        (``trim_offsets``), so that they equal HF's ``Encoding.offsets``."""
        if self.prefix_ids or self.suffix_ids:
            # The post-processor's ids come from no character of the text: HF gives them (0, 0).
            unwrapped = self._unwrapped_encoding()
            inner_ids, inner_offsets = Encoding._encode_with_offsets(unwrapped, text, allowed_special,
                                                                     disallowed_special, as_numpy=False)
            ids = [*self.prefix_ids, *inner_ids, *self.suffix_ids]
            offsets = [(0, 0)] * len(self.prefix_ids) + inner_offsets + [(0, 0)] * len(self.suffix_ids)
            if as_numpy:
                import numpy as np

                ids, offsets = np.asarray(ids, np.uint32), np.asarray(offsets, np.int64).reshape(-1, 2)
        else:
            ids, offsets = super()._encode_with_offsets(text, allowed_special, disallowed_special, as_numpy)
        if self._offset_trim is None or not len(ids):
            return ids, offsets
        import numpy as np  # (only for a file that trims offsets)

        spans = self._offset_trim.trimmed(np.asarray(ids), np.asarray(offsets, dtype=np.int64).reshape(-1, 2))
        return (ids, spans) if as_numpy else (ids, list(map(tuple, spans.tolist())))

    def _unwrapped_encoding(self) -> TokenizerJsonEncoding:
        """The same file without the post-processor's ids (made once)."""
        unwrapped = self.__dict__.get("_unwrapped")
        if unwrapped is None:
            unwrapped = self._unwrapped = TokenizerJsonEncoding._from_json_text(self._json_text, self.name)
        return unwrapped

    def _budget_pattern(self) -> tuple[str, str]:
        if self._split_for_budgets is None:
            raise TypeError(f"truncate and chunks are not supported for {self.name!r}: its pre-tokenizer is not one "
                            "split pattern the compiled scanner runs (use encode(..., max_tokens=N) for the first "
                            "N ids)")
        assert not isinstance(self._split_for_budgets, _pretokenize.Scanner)   # (the two methods below)
        return self._split_for_budgets

    def _budget_scanner(self) -> _pretokenize.Scanner:
        if isinstance(self._split_for_budgets, _pretokenize.Scanner):
            return self._split_for_budgets
        return super()._budget_scanner()

    def _budget_reads_the_start(self) -> bool:
        if isinstance(self._split_for_budgets, _pretokenize.Scanner):
            return False    # DeepSeek's scanner: each piece from its own start on (tests/unit/test_truncate.py)
        return super()._budget_reads_the_start()

    def _around_budget(self, max_tokens: int) -> int:
        """`max_tokens` less the post-processor's ids, which every text (the empty one too) is given."""
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
            return max_tokens   # Encoding's checks name what is wrong with it
        extra = len(self.prefix_ids) + len(self.suffix_ids)
        if max_tokens < extra:
            raise ValueError(f"max_tokens={max_tokens} is less than the {extra} ids the post-processor puts around "
                             f"every text (add_special_tokens=True): no part of the text fits")
        return max_tokens - extra

    def _without_normal_form(self, text: str) -> TokenizerJsonEncoding | None:
        """For a file whose normalizer is a Unicode normal form (Qwen's NFC): the same file without it (made
        once), which counts `text` as this one does when `text` is in that form already -- the form holds for
        every part of such a text, so the normalizer changes none. ValueError for text not in the form
        (truncate and chunks return parts of the text given). None for other files."""
        if self._normal_form is None:
            return None
        if not isinstance(text, str) or not unicodedata.is_normalized(self._normal_form, text):
            if isinstance(text, str):
                raise ValueError(f"{self.name!r} normalizes text to {self._normal_form} first: truncate and chunks "
                                 f"return a part of the text given, so give it normalized "
                                 f"(unicodedata.normalize({self._normal_form!r}, text))")
            return None     # (not a str: the checks of Encoding name it)
        twin = self.__dict__.get("_unnormalized")
        if twin is None:
            spec = json.loads(self._json_text)
            spec["normalizer"] = None
            twin = self._unnormalized = TokenizerJsonEncoding._from_json_text(
                json.dumps(spec), self.name, self.add_special_tokens)
        return twin

    def truncate(self, text: str, max_tokens: int, **options: Any) -> str:
        if (twin := self._without_normal_form(text)) is not None:
            return twin.truncate(text, max_tokens, **options)
        if self.prefix_ids or self.suffix_ids:
            # The ids the post-processor adds come from no character: the text gets the rest of the budget.
            return self._unwrapped_encoding().truncate(text, self._around_budget(max_tokens), **options)
        return super().truncate(text, max_tokens, **options)

    def chunks(self, text: str, max_tokens: int, **options: Any) -> list[str]:
        if (twin := self._without_normal_form(text)) is not None:
            return twin.chunks(text, max_tokens, **options)
        if self.prefix_ids or self.suffix_ids:
            return self._unwrapped_encoding().chunks(text, self._around_budget(max_tokens), **options)
        return super().chunks(text, max_tokens, **options)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TokenizerJsonEncoding._from_json_text, (self._json_text, self.name, self.add_special_tokens))

    def to_tokenizer_json(self, path: str | os.PathLike[str]) -> None:
        """Write the `tokenizer.json` this encoding was read from (its post-processor included, whatever
        `add_special_tokens` was)."""
        write_bytes_atomically(path, self._json_text.encode("utf-8"))

    def save(self, path: str | os.PathLike[str]) -> None:
        raise TypeError("an encoding read from a tokenizer.json saves as one: use to_tokenizer_json(path)")

    def with_special_tokens(self, special_tokens: Any, *, name: str | None = None) -> Encoding:
        raise TypeError("an encoding read from a tokenizer.json takes its special tokens from the file "
                        "(its added_tokens)")

    def with_pretokenizer(self, pretokenizer: Any) -> Encoding:
        raise TypeError("an encoding read from a tokenizer.json runs the pre-tokenizer the file describes")

    @property
    def pretokenizer(self) -> Any:
        """"compiled" when a compiled scanner cuts the pieces, "regex" when the file's pre-tokenizer runs
        in Python over `regex`."""
        return "compiled" if isinstance(self._pretokenize, _pretokenize.Scanner) else "regex"

