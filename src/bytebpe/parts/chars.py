"""HF `tokenizers`' own character predicates and mappings, exactly: the ones it takes from Rust, not from its
regex engine (for those, see `pretokenizer.with_oracle_classes(pat, "hf")`).

Python's `unicodedata` follows another Unicode than each of HF's sources — Rust's std (`char::is_numeric`,
`char::is_whitespace`, `str::to_lowercase`: newer), the `unicode_categories` crate (punctuation, marks, "other"
characters: older), the unicode-normalization crate (NFC, NFD, NFKC, NFKD: older) — so every answer here comes
from tables read off the installed HF by tools/gen_hf_chars.py (src/bytebpe/parts/_char_tables.py), for every code point:

    is_numeric(ch)             pre_tokenizers.Digits
    is_whitespace(ch)          pre_tokenizers.WhitespaceSplit, normalizers.Strip (and BertPreTokenizer's split)
    is_punctuation(ch)         pre_tokenizers.Punctuation (and BertPreTokenizer's)
    is_word(ch)                pre_tokenizers.Whitespace's ``\\w`` (Rust's regex crate: not Oniguruma's
                               ``\\w``, e.g. U+00B2 and U+200D); whitespace_pretokenize(text) is that
                               pre-tokenizer
    is_combining_mark(ch)      what normalizers.StripAccents deletes; strip_accents(text) is that normalizer
    combining_class(ch)        the canonical combining class HF's normal forms use
    lowercase(text)            normalizers.Lowercase (per code point: no final sigma; U+0130 -> "i̇")
    normalize(form, text)      normalizers.NFC / NFD / NFKC / NFKD
    strip(text, left, right)   normalizers.Strip
    bert_normalize(text, clean_text, handle_chinese_chars, strip_accents, lowercase)
                               normalizers.BertNormalizer

Fast paths: `str.lower` and `unicodedata.normalize` where they are known to agree with HF (same `unicodedata`
version as the generator's and none of the code points where they may differ); otherwise pure Python over the
tables (any Python version). TOKENIZERS_VERSION names the release the tables were read from.
"""
from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from types import ModuleType
from typing import Literal, cast

from . import _char_tables

__all__ = ["TOKENIZERS_VERSION", "bert_normalize", "combining_class", "is_combining_mark", "is_numeric",
           "is_punctuation", "is_whitespace", "is_word", "lowercase", "normalize", "strip", "strip_accents",
           "whitespace_pretokenize"]

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
TOKENIZERS_VERSION = _char_tables.TOKENIZERS_VERSION     # the release the tables were read from


def _tables() -> ModuleType:
    return _char_tables


def _member(name: str, char: str) -> bool:
    """Whether `char` is in the table `name` (flat (start, end) pairs: inside when bisect lands odd)."""
    return bisect.bisect_right(getattr(_tables(), name), ord(char)) & 1 == 1


def is_numeric(char: str) -> bool:
    """HF's Digits pre-tokenizer's digit (Rust's char::is_numeric)."""
    return _member("NUMERIC", char)


def is_whitespace(char: str) -> bool:
    """Rust's char::is_whitespace as WhitespaceSplit and Strip use it."""
    return _member("WHITESPACE", char)


def is_punctuation(char: str) -> bool:
    """HF's Punctuation pre-tokenizer's punctuation."""
    return _member("PUNCTUATION", char)


def is_word(char: str) -> bool:
    """The ``\\w`` of HF's Whitespace pre-tokenizer."""
    return _member("WORD", char)


def is_combining_mark(char: str) -> bool:
    """What HF's StripAccents normalizer deletes."""
    return _member("COMBINING_MARKS", char)


def _class(name: str, negate: bool = False, *more: str) -> str:
    """A `re` character class of the tables `name`, *more."""
    parts = []
    for table in (name, *more):
        values = getattr(_tables(), table)
        for start, end in zip(values[0::2], values[1::2]):
            parts.append(f"\\U{start:08x}" if end == start + 1 else f"\\U{start:08x}-\\U{end - 1:08x}")
    return ("[^" if negate else "[") + "".join(parts) + "]"


@functools.cache
def _regex(kind: str) -> re.Pattern[str]:
    if kind == "whitespace":
        return re.compile(f"{_class('WORD')}+|{_class('WORD', True, 'WORD_SPACE')}+")
    return re.compile(_class(kind) + "+")


def whitespace_pretokenize(text: str) -> list[tuple[str, tuple[int, int]]]:
    """HF's Whitespace pre-tokenizer (``\\w+|[^\\w\\s]+``): its pieces with their offsets in characters, as
    `pre_tokenize_str` gives them."""
    return [(match.group(), match.span()) for match in _regex("whitespace").finditer(text)]


@functools.cache
def _whitespace_string() -> str:
    values = _tables().WHITESPACE
    return "".join(chr(cp) for start, end in zip(values[0::2], values[1::2]) for cp in range(start, end))


def strip(text: str, left: bool = True, right: bool = True) -> str:
    """HF's Strip normalizer."""
    if left:
        text = text.lstrip(_whitespace_string())
    if right:
        text = text.rstrip(_whitespace_string())
    return text


def strip_accents(text: str) -> str:
    """HF's StripAccents normalizer: the combining marks deleted (no decomposition first: "é" stays)."""
    return _regex("COMBINING_MARKS").sub("", text)


def _fast() -> bool:
    return unicodedata.unidata_version == _tables().UNIDATA_VERSION


@functools.cache
def _translation(name: str) -> dict[int, str]:
    return dict(getattr(_tables(), name))


def lowercase(text: str) -> str:
    """HF's Lowercase normalizer (Rust's char::to_lowercase on each code point)."""
    if text.isascii():
        return text.lower()
    if _fast():
        # This Python lowercases every code point as HF but these, and U+03A3 it lowercases by context.
        return text.translate(_translation("LOWERCASE_PYTHON")).lower()
    return text.translate(_translation("LOWERCASE"))


_lowercase = lowercase      # for bert_normalize, whose option has the name


# --- the normal forms -------------------------------------------------------------------------------------------

_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_L_COUNT, _V_COUNT, _T_COUNT = 19, 21, 28
_S_COUNT = _L_COUNT * _V_COUNT * _T_COUNT


@functools.cache
def _classes() -> dict[str, int]:
    values = _tables().COMBINING_CLASSES
    return {chr(cp): value for start, end, value in zip(values[0::3], values[1::3], values[2::3])
            for cp in range(start, end)}


@functools.cache
def _decompositions(compat: bool) -> dict[str, str]:
    tables = _tables()
    mapping = {chr(cp): out for cp, out in tables.NFD.items()}
    if compat:
        mapping.update((chr(cp), out) for cp, out in tables.NFKD.items())
    for index in range(_S_COUNT):
        trail = index % _T_COUNT
        mapping[chr(_S_BASE + index)] = (chr(_L_BASE + index // (_V_COUNT * _T_COUNT))
                                         + chr(_V_BASE + index % (_V_COUNT * _T_COUNT) // _T_COUNT)
                                         + (chr(_T_BASE + trail) if trail else ""))
    return mapping


@functools.cache
def _compositions() -> dict[tuple[str, str], str]:
    values = _tables().COMPOSITIONS
    return {(chr(a), chr(b)): chr(c) for a, b, c in zip(values[0::3], values[1::3], values[2::3])}


@functools.cache
def _excluded(form: str) -> frozenset[str]:
    values = _tables().FAST_PATH_EXCLUDED[form]
    return frozenset(chr(cp) for start, end in zip(values[0::2], values[1::2]) for cp in range(start, end))


def combining_class(char: str) -> int:
    """The canonical combining class of `char` in HF's normal forms (0 for a character they decompose)."""
    return _classes().get(char, 0)


def _decompose(text: str, compat: bool) -> list[str]:
    mapping = _decompositions(compat)
    chars = list("".join([mapping.get(char, char) for char in text]))
    classes = _classes()
    i, n = 0, len(chars)
    while i < n:                                    # canonical ordering: a stable sort of each run of marks
        if chars[i] not in classes:
            i += 1
            continue
        j = i + 1
        while j < n and chars[j] in classes:
            j += 1
        if j - i > 1:
            chars[i:j] = sorted(chars[i:j], key=classes.__getitem__)
        i = j
    return chars


def _pair(first: str, second: str) -> str | None:
    a, b = ord(first), ord(second)
    if 0 <= a - _L_BASE < _L_COUNT and 0 <= b - _V_BASE < _V_COUNT:
        return chr(_S_BASE + ((a - _L_BASE) * _V_COUNT + b - _V_BASE) * _T_COUNT)
    if 0 <= a - _S_BASE < _S_COUNT and (a - _S_BASE) % _T_COUNT == 0 and 0 < b - _T_BASE < _T_COUNT:
        return chr(a + b - _T_BASE)
    return _compositions().get((first, second))


def _compose(chars: list[str]) -> str:
    classes = _classes()
    out: list[str] = []
    starter = -1                # index in `out` of the last starter
    last = -1                   # class of the last character kept after it (-1: none, adjacent)
    for char in chars:
        value = classes.get(char, 0)
        if starter >= 0 and last < value:           # not blocked from the starter
            composite = _pair(out[starter], char)
            if composite is not None:
                out[starter] = composite
                continue
        if value == 0:
            starter, last = len(out), -1
        else:
            last = value
        out.append(char)
    return "".join(out)


def normalize(form: str, text: str) -> str:
    """HF's NFC, NFD, NFKC or NFKD normalizer on `text`."""
    if form not in FORMS:
        raise ValueError(f"unknown normal form {form!r}: expected one of {', '.join(FORMS)}")
    if text.isascii():
        return text
    if _fast() and _excluded(form).isdisjoint(text):
        return unicodedata.normalize(cast(Literal["NFC", "NFD", "NFKC", "NFKD"], form), text)
    chars = _decompose(text, compat=form.startswith("NFK"))
    return _compose(chars) if form in ("NFC", "NFKC") else "".join(chars)


# --- BertNormalizer ---------------------------------------------------------------------------------------------

@functools.cache
def _bert_space() -> dict[int, str]:
    values = _tables().BERT_SPACE
    return {cp: " " for start, end in zip(values[0::2], values[1::2]) for cp in range(start, end)}


def bert_normalize(text: str, clean_text: bool = True, handle_chinese_chars: bool = True,
                   strip_accents: bool | None = None, lowercase: bool = True) -> str:
    """HF's BertNormalizer with these options (its defaults; `strip_accents` None follows `lowercase`):
    clean_text deletes NUL, U+FFFD and HF's control characters and makes its whitespace a space;
    handle_chinese_chars puts a space either side of each CJK ideograph; strip_accents decomposes (HF's NFD)
    and deletes HF's nonspacing marks; lowercase is the Lowercase normalizer's."""
    if clean_text:
        text = _regex("BERT_REMOVED").sub("", text).translate(_bert_space())
    if handle_chinese_chars:
        text = _regex("BERT_CHINESE").sub(lambda match: "".join(f" {c} " for c in match.group()), text)
    if lowercase if strip_accents is None else strip_accents:
        text = _regex("BERT_NONSPACING_MARKS").sub("", normalize("NFD", text))
    if lowercase:
        text = _lowercase(text)
    return text
