"""Pre-tokenization: how text is cut into pieces (pre-tokens) before BPE, for `Encoding` and the trainer.

A split pattern (patterns.py) runs on one of two engines: the compiled `Scanner` (_pretokenize.pyx), which
cuts without the GIL and without a Python object per piece — hand-written for the named encodings' patterns,
compiled (pattern_compiler.py) for any other pattern of the GPT family, with tiktoken's character classes —
or the `regex` package, which runs any pattern. This module owns that choice and the `regex` fallback.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from ._pretokenize import Scanner, code_point_props
from .pattern_compiler import Dialect, UnsupportedPattern, property_values

if TYPE_CHECKING:
    import regex

__all__ = ["PretokenizerChoice", "SplitFunction", "PRETOKENIZER_ENV", "checked_choice", "check_pattern",
           "compile_pattern", "with_oracle_classes", "RegexSplit", "regex_split", "choose", "split_function", "replace_surrogates"]

# Which engine `Encoding` uses: "auto" the compiled scanner when the pattern is in the family the compiler
# accepts (unless the environment variable below says "regex"), "compiled" insists on it, "regex" always uses
# the regex engine.
PretokenizerChoice = Literal["auto", "compiled", "regex"]
PRETOKENIZER_ENV = "BYTEBPE_PRETOKENIZER"

# str -> its pieces: a compiled `Scanner` or a `regex` findall.
SplitFunction = Callable[[str], list[str]]


@functools.lru_cache(maxsize=None)
def checked_choice(choice: object) -> PretokenizerChoice:
    if choice not in ("auto", "compiled", "regex"):
        raise ValueError(f'pretokenizer must be "auto", "compiled" or "regex", got {choice!r}')
    return choice  # type: ignore[return-value]


def check_pattern(pat_str: str) -> None:
    """A split pattern that is not a str, or that does not compile, is an error.

    A pattern the compiled scanner takes is not compiled again: its parser reads only syntax the `regex`
    package reads too (test_pattern_compiler checks it on generated patterns), and leaving it there spares
    loading an encoding the import of `regex` (which is imported where a pattern first needs it)."""
    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a str, got {type(pat_str).__name__}")
    if Scanner.for_pattern(pat_str) is not None:
        return
    _regex_compile(pat_str)


def _regex_compile(pat_str: str) -> regex.Pattern[str]:
    import regex    # (see check_pattern)

    try:
        return regex.compile(pat_str)
    except regex.error as error:
        raise ValueError(f"pat_str does not compile: {error}") from None


def compile_pattern(pat_str: str, dialect: Dialect = "tiktoken") -> regex.Pattern[str]:
    """The split pattern compiled for `regex` with the oracle's classes (`with_oracle_classes`); errors as
    `check_pattern`'s."""
    _regex_compile(pat_str)     # errors name the user's pattern, not the rewritten one
    return _regex_compile(with_oracle_classes(pat_str, dialect))


class RegexSplit:
    """The `regex` engine's split by a pattern with the oracle's classes, compiled on first use: the rewritten
    classes take ~0.1 s to compile, which an encoding that runs on the compiled scanner never needs."""

    __slots__ = ("pat_str", "dialect", "_split")

    def __init__(self, pat_str: str, dialect: Dialect = "tiktoken") -> None:
        self.pat_str = pat_str
        self.dialect = dialect
        self._split: SplitFunction | None = None

    def __call__(self, text: str) -> list[str]:
        split = self._split
        if split is None:       # two threads may both compile it: the same split either way
            split = self._split = regex_split(compile_pattern(self.pat_str, self.dialect), self.pat_str)
        return split(text)


@functools.lru_cache(maxsize=8)
def _props(dialect: Dialect) -> bytes:
    return code_point_props(dialect)


@functools.lru_cache(maxsize=256)
def _class_ranges(escape: str, dialect: Dialect) -> str:
    """The code points the oracle's engine matches with `escape` (``\\p{L}``, ``\\S``, ...) as the inside of a
    `regex` class: ranges of ``\\UXXXXXXXX``; '' when the escape is not one the tables hold."""
    if escape[1] in "pP":
        values = property_values(escape[3:-1] if escape[2] == "{" else escape[2:])
        if values is None:
            return ""
    else:
        flag = {"s": 0x20, "d": 0x80, "w": 0x40}[escape[1].lower()]
        values = sum(1 << value for value in range(256) if value & flag)
    import numpy as np      # here, not at import: `import bytebpe` does not import numpy

    table = np.frombuffer(_props(dialect), dtype=np.uint8)
    member = np.array([(values >> v) & 1 for v in range(256)], dtype=bool)[table]
    if escape[1] in "PSDW":
        member = ~member
    member[0xD800:0xE000] = False   # surrogates: never in the text (`regex` classes cannot hold them alone)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], member.view(np.int8), [0]))))
    return "".join(f"\\U{low:08x}" if high - 1 == low else f"\\U{low:08x}-\\U{high - 1:08x}"
                   for low, high in zip(edges[::2].tolist(), edges[1::2].tolist()))


# An escape whose class the oracle's tables hold, or a class bracket, or any other escape (kept as it is).
_CLASS_TOKEN = re.compile(r"\\[pP](?:\{[^}]*\}|[A-Za-z])|\\[sSdDwW]|\\.|\[\^?\]?|\]", re.DOTALL)


def with_oracle_classes(pat_str: str, dialect: Dialect = "tiktoken") -> str:
    """`pat_str` with its ``\\p{..}``, ``\\P{..}``, ``\\s``, ``\\d``, ``\\w`` (and negations) spelled out as the
    code points the oracle's engine gives them (tiktoken's, or HF's for "hf"), so that the `regex` engine cuts
    as the oracle does whatever Unicode the installed `regex` follows. Escapes the tables do not hold (scripts
    such as ``\\p{Greek}``) are kept, and then follow `regex`'s Unicode."""
    out: list[str] = []
    in_class = False
    last = 0
    for token in _CLASS_TOKEN.finditer(pat_str):
        text = token.group()
        out.append(pat_str[last:token.start()])
        last = token.end()
        if text.startswith("["):
            if in_class:        # a literal "[" inside a class; a "]" right after it closes nothing
                out.append("\\[" + text[1:].replace("]", "\\]"))
                continue
            in_class = True
            out.append(text)
        elif text == "]":
            in_class = False
            out.append(text)
        elif len(text) > 2 or text[1] in "sSdDwW":
            ranges = _class_ranges(text, dialect)
            out.append(text if not ranges else ranges if in_class else f"[{ranges}]")
        else:
            out.append(text)
    out.append(pat_str[last:])
    return "".join(out)


class PatternTimeoutError(ValueError):
    """The `regex` engine gave up on a text: the split pattern backtracks without bound on it."""


# The `regex` engine backtracks without bound on some patterns: (a|aa)+$ on 45 a's and a "!" runs for minutes,
# where tiktoken's engine and HF's give up at once. So every call of it on a text has a time limit that grows
# with the text: far above what a pattern that does not blow up needs (a few MB/s at worst), far below minutes.
REGEX_SECONDS_BASE = 2.0
REGEX_SECONDS_PER_MILLION_CHARACTERS = 2.0


def regex_timeout(text: str) -> float:
    """Seconds the `regex` engine may spend on one call over `text`."""
    return REGEX_SECONDS_BASE + REGEX_SECONDS_PER_MILLION_CHARACTERS * len(text) / 1e6


def timed_out(what: str, text: str) -> PatternTimeoutError:
    """The error for `what` (the pattern, as the user gave it) running out of time on `text`."""
    return PatternTimeoutError(
        f"{what} took more than {regex_timeout(text):.0f} s on a text of {len(text):,} characters and was stopped: "
        "the regex engine backtracks without bound on it (nested or overlapping repeats such as (a|aa)+); "
        "rewrite the pattern without them")


def regex_split(pattern: regex.Pattern[str], source: str | None = None) -> SplitFunction:
    """The `regex` engine's split: whole matches (findall would return a pattern's groups instead), each call
    bounded in time (`regex_timeout`; `PatternTimeoutError` names `source`, the pattern as the user wrote it).

    concurrent=False: `regex` releases and retakes the GIL around every match unless told not to. Alone that
    costs ~25%; with batch threads it costs far more (two threads hand the GIL back and forth per piece: a
    batch ran at half the speed of a loop, and two threads of findall ran slower than one). So the regex
    keeps the GIL, and threads gain from the merge loop, which runs without it.
    """
    what = f"the split pattern {source or pattern.pattern!r}"
    findall, finditer, groups = pattern.findall, pattern.finditer, pattern.groups

    def split(text: str) -> list[str]:
        try:
            if groups:
                return [match.group() for match in finditer(text, concurrent=False, timeout=regex_timeout(text))]
            return findall(text, concurrent=False, timeout=regex_timeout(text))
        except TimeoutError:
            raise timed_out(what, text) from None
    return split


def choose(pat_str: str, choice: PretokenizerChoice, regex_engine: SplitFunction) -> SplitFunction:
    """The split `Encoding` uses for `choice` (checked): the compiled scanner of a pattern in the family, or
    `regex_engine` (the `regex_split` of the pattern) for any other, for "regex", or for "auto" when
    BYTEBPE_PRETOKENIZER=regex."""
    if choice == "compiled":
        try:
            return Scanner.for_pattern(pat_str, compile=False) or Scanner.compiled(pat_str)
        except UnsupportedPattern as error:
            raise ValueError(f"pretokenizer='compiled': the pattern compiler does not accept this pattern: "
                             f"{error}") from None
    if choice == "regex" or (choice == "auto" and os.environ.get(PRETOKENIZER_ENV) == "regex"):
        return regex_engine
    scanner = Scanner.for_pattern(pat_str)
    return scanner if scanner is not None else regex_engine


def split_function(pat_str: str) -> SplitFunction:
    """The trainer's split: the compiled scanner for a pattern in the family (whatever the environment says),
    else the `regex` engine's; the same pieces as `Encoding` cuts."""
    scanner = Scanner.for_pattern(pat_str)
    if scanner is not None:
        return scanner
    return RegexSplit(pat_str)


def replace_surrogates(text: str) -> str:
    """tiktoken's repair of text with surrogates (which have no UTF-8): join valid surrogate pairs, lone ones
    become U+FFFD. Applied to whole texts before cutting them: repairing pieces would cut a surrogate pair
    as two characters rather than the one it joins into."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
