"""Pre-tokenization: how text is cut into pieces (pre-tokens) before BPE, for `Encoding` and the trainer.

A split pattern (patterns.py) runs on one of two engines: the compiled `Scanner` (_pretokenize.pyx), which
knows the patterns of the named encodings and cuts without the GIL and without a Python object per piece,
or the `regex` package, which runs any pattern. This module owns that choice and the `regex` fallback.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Literal

import regex

from ._pretokenize import Scanner

__all__ = ["PretokenizerChoice", "SplitFunction", "PRETOKENIZER_ENV", "checked_choice", "compile_pattern",
           "regex_split", "choose", "split_function", "replace_surrogates"]

# Which engine `Encoding` uses: "auto" the compiled scanner when the pattern is a known one (unless the
# environment variable below says "regex"), "compiled" insists on it, "regex" always uses the regex engine.
PretokenizerChoice = Literal["auto", "compiled", "regex"]
PRETOKENIZER_ENV = "BYTEBPE_PRETOKENIZER"

# str -> its pieces: a compiled `Scanner` or a `regex` findall.
SplitFunction = Callable[[str], list[str]]


@functools.lru_cache(maxsize=None)
def checked_choice(choice: object) -> PretokenizerChoice:
    if choice not in ("auto", "compiled", "regex"):
        raise ValueError(f'pretokenizer must be "auto", "compiled" or "regex", got {choice!r}')
    return choice  # type: ignore[return-value]


def compile_pattern(pat_str: str) -> regex.Pattern[str]:
    """The split pattern compiled for `regex`; a pattern that is not a str or does not compile is an error."""
    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a str, got {type(pat_str).__name__}")
    try:
        return regex.compile(pat_str)
    except regex.error as error:
        raise ValueError(f"pat_str does not compile: {error}") from None


def _whole_matches(pattern: regex.Pattern[str], text: str) -> list[str]:
    return [match.group() for match in pattern.finditer(text, concurrent=False)]


def regex_split(pattern: regex.Pattern[str]) -> SplitFunction:
    """The `regex` engine's split: whole matches (findall would return a pattern's groups instead).

    concurrent=False: `regex` releases and retakes the GIL around every match unless told not to. Alone that
    costs ~25%; with batch threads it costs far more (two threads hand the GIL back and forth per piece: a
    batch ran at half the speed of a loop, and two threads of findall ran slower than one). So the regex
    keeps the GIL, and threads gain from the merge loop, which runs without it.
    """
    if pattern.groups:
        return functools.partial(_whole_matches, pattern)
    return functools.partial(pattern.findall, concurrent=False)


def choose(pat_str: str, choice: PretokenizerChoice, regex_engine: SplitFunction) -> SplitFunction:
    """The split `Encoding` uses for `choice` (checked): the compiled scanner of a known pattern, or
    `regex_engine` (the `regex_split` of the pattern) for any other, for "regex", or for "auto" when
    BYTEBPE_PRETOKENIZER=regex."""
    scanner = Scanner.for_pattern(pat_str)
    if choice == "compiled" and scanner is None:
        raise ValueError(
            "pretokenizer='compiled' needs one of the known split patterns (gpt2, r50k_base, p50k_base, "
            "cl100k_base, o200k_base); this pattern only runs on the regex engine")
    if choice == "regex" or (choice == "auto" and os.environ.get(PRETOKENIZER_ENV) == "regex"):
        return regex_engine
    return scanner if scanner is not None else regex_engine


def split_function(pat_str: str) -> SplitFunction:
    """The trainer's split: the compiled scanner for a known pattern (whatever the environment says), else
    the `regex` engine's; the same pieces as `Encoding` cuts."""
    scanner = Scanner.for_pattern(pat_str)
    if scanner is not None:
        return scanner
    return regex_split(compile_pattern(pat_str))


def replace_surrogates(text: str) -> str:
    """tiktoken's repair of text with surrogates (which have no UTF-8): join valid surrogate pairs, lone ones
    become U+FFFD. Applied to whole texts before cutting them: repairing pieces would cut a surrogate pair
    as two characters rather than the one it joins into."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
