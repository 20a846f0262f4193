"""The patterns of a tokenizer.json's Split, Replace and ByteLevel parts, run on the `regex` engine with HF's
own character classes.

HF runs them on Oniguruma; bytebpe on `regex`, with three translations: Oniguruma's `X{n,m}+` (a repeated
interval, not a possessive one) rewritten; every ``\\p{..}``, ``\\s``, ``\\d``, ``\\w`` spelled out as the code
points Oniguruma gives it (`pretokenizer.with_oracle_classes(..., "hf")`, tables read off HF's engine), so that
the installed `regex`'s newer Unicode never decides a piece; and Oniguruma-only syntax refused by name. The
compiled scanner takes the patterns of the GPT family where it can (pre_tokenizers.py); this is the rest.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..file_formats import TokenizerJsonError
from ..pretokenizer import with_oracle_classes

if TYPE_CHECKING:
    import regex

__all__ = ["compiled_pattern", "matches", "python_pattern", "split_by"]

# Oniguruma syntax with another meaning (or none) in `regex`: \h is a hex digit there, \R, \X, \K, \G,
# \y, \Y, \O, absent operators and subexpression calls have no exact counterpart here.
_ONIGURUMA_ONLY = re.compile(r"\\[hHRXKGyYO]|\(\?~|\\g<|\\g'")
# Oniguruma's possessive-looking interval `X{n,m}+` is `(?:X{n,m})+` (hf_json has the reverse rewrite).
_ONIG_INTERVAL_PLUS = re.compile(r"(\\[pP]\{[^}]*\}|\\.|\[(?:\\.|[^\]\\])*\]|[^\\()|?*+{])(\{\d+(?:,\d*)?\})\+")


def _without_interval_plus(onig: str) -> str:
    # (only where "}+" is: the rewrite's search took 0.1 s on a 768-token alternation that has none)
    return _ONIG_INTERVAL_PLUS.sub(r"(?:\1\2)+", onig) if "}+" in onig else onig


def python_pattern(onig: str, component: str) -> str:
    """An Oniguruma pattern (HF's regex engine) as `regex` reads it the same way, HF's classes spelled out,
    or an error naming the construct."""
    found = _ONIGURUMA_ONLY.search(onig)
    if found:
        raise TokenizerJsonError(f"{component}: {found.group()!r} in pattern {onig!r} is Oniguruma syntax "
                                 "that bytebpe does not translate")
    if re.search(r"\[[^\]]*&&", onig):
        raise TokenizerJsonError(f"{component}: class intersection '&&' in pattern {onig!r} is not supported")
    return with_oracle_classes(_without_interval_plus(onig), "hf")


def compiled_pattern(pattern: Any, component: str) -> regex.Pattern[str]:
    """A part's {"String": s} or {"Regex": r}, compiled for `regex`."""
    import regex    # (a file that needs no pattern never imports it)

    if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str):
        raise TokenizerJsonError(f"{component}: pattern must be {{'String': ...}} or {{'Regex': ...}}, got "
                                 f"{str(pattern)[:80]}")
    (kind, source), = pattern.items()
    if kind == "String":
        return regex.compile(regex.escape(source))
    if kind != "Regex":
        raise TokenizerJsonError(f"{component}: pattern kind {kind!r} is not String or Regex")
    try:
        regex.compile(_without_interval_plus(source))     # errors name the file's pattern
        return regex.compile(python_pattern(source, component))
    except regex.error as error:
        raise TokenizerJsonError(f"{component}: pattern {source!r} does not compile: {error}") from None


def matches(pattern: regex.Pattern[str], text: str, component: str, anchored: bool = False) -> list[tuple[int, int]]:
    """The non-overlapping matches, leftmost first; an empty match is refused (Oniguruma's iterator and
    `regex` step over empty matches differently), unless the pattern is `anchored` at the text's start
    (``\\A``), where there is one match at most and no stepping."""
    spans = []
    # (No time limit: with_oracle_classes refused, when the pattern was compiled, the repeats that backtrack
    # without bound.)
    for match in pattern.finditer(text, concurrent=False):
        start, end = match.span()
        if start == end and not anchored:
            raise TokenizerJsonError(f"{component}: pattern {pattern.pattern[:80]!r} matched the empty string in "
                                     f"{text[:40]!r}; patterns that can match nothing are not supported")
        spans.append((start, end))
    return spans


BEHAVIORS = ("Isolated", "Removed", "Contiguous", "MergedWithPrevious", "MergedWithNext")


def split_by(spans: list[tuple[int, int]], text: str, behavior: str, invert: bool) -> list[str]:
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
        raise TokenizerJsonError(f"pre_tokenizer Split: behavior {behavior!r} is not supported (HF's: "
                                 f"{', '.join(BEHAVIORS)})")
    return [text[start:end] for start, end in kept if end > start]
