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
    import numpy as np
    import regex

__all__ = ["PretokenizerChoice", "SplitFunction", "PRETOKENIZER_ENV", "checked_choice", "check_pattern",
           "compile_pattern", "compile_split", "check_backtracking", "PatternTimeoutError", "with_oracle_classes",
           "RegexSplit", "regex_split", "choose", "split_function", "replace_surrogates"]

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
    check_backtracking(pat_str)
    return _regex_compile(with_oracle_classes(pat_str, dialect))


class RegexSplit:
    """The `regex` engine's split by a pattern with the oracle's classes, compiled on first use: the rewritten
    classes take ~0.1 s to compile, which an encoding that runs on the compiled scanner never needs."""

    __slots__ = ("pat_str", "dialect", "_split")

    def __init__(self, pat_str: str, dialect: Dialect = "tiktoken") -> None:
        check_backtracking(pat_str)     # at once (a few ms): `Encoding` refuses such a pattern when built
        self.pat_str = pat_str
        self.dialect = dialect
        self._split: SplitFunction | None = None

    def __call__(self, text: str) -> list[str]:
        split = self._split
        if split is None:       # two threads may both compile it: the same split either way
            split = self._split = compile_split(self.pat_str, self.dialect)
        return split(text)


@functools.lru_cache(maxsize=8)
def _props(dialect: Dialect) -> bytes:
    return code_point_props(dialect)


@functools.lru_cache(maxsize=256)
def _oracle_member(escape: str, dialect: Dialect) -> np.ndarray | None:
    """Which code points the oracle's engine matches with `escape` (``\\p{L}``, ``\\S``, ...), a bool array
    over all of them, surrogates never (they are never in the text); None when the tables do not hold it."""
    if escape[1] in "pP":
        values = property_values(escape[3:-1] if escape[2] == "{" else escape[2:])
        if values is None:
            return None
    else:
        flag = {"s": 0x20, "d": 0x80, "w": 0x40}[escape[1].lower()]
        values = sum(1 << value for value in range(256) if value & flag)
    import numpy as np      # here, not at import: `import bytebpe` does not import numpy

    table = np.frombuffer(_props(dialect), dtype=np.uint8)
    member = np.array([(values >> v) & 1 for v in range(256)], dtype=bool)[table]
    if escape[1] in "PSDW":
        member = ~member
    member[0xD800:0xE000] = False   # surrogates: never in the text (`regex` classes cannot hold them alone)
    member.flags.writeable = False
    return member


@functools.lru_cache(maxsize=256)
def _class_ranges(escape: str, dialect: Dialect) -> str:
    """The code points the oracle's engine matches with `escape` (``\\p{L}``, ``\\S``, ...) as the inside of a
    `regex` class: ranges of ``\\UXXXXXXXX``; '' when the escape is not one the tables hold."""
    member = _oracle_member(escape, dialect)
    return "" if member is None else _ranges(member)


def _ranges(member: np.ndarray) -> str:
    """The code points of a bool array as the inside of a `regex` class."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.concatenate(([0], member.view(np.int8), [0]))))
    return "".join(f"\\U{low:08x}" if high - 1 == low else f"\\U{low:08x}-\\U{high - 1:08x}"
                   for low, high in zip(edges[::2].tolist(), edges[1::2].tolist()))


@functools.lru_cache(maxsize=256)
def _own_member(escape: str) -> np.ndarray:
    """Which code points `regex` (its own Unicode) matches with `escape`, surrogates never."""
    member = _matched(f"[{escape}]")
    member[0xD800:0xE000] = False
    member.flags.writeable = False
    return member


def _oracle_class(escape: str, dialect: Dialect) -> str:
    """`escape` (outside a class) as `regex` matches the oracle's class: the property itself, with what the
    oracle adds to it and a lookahead for what it takes away ("(?![...])[\\p{L}...]"); '' when the tables do
    not hold it.

    Why not every range of the oracle's class: `regex` tries a class of thousands of ranges one range at a
    time, and runs such a pattern several times slower than the property (CLIP's split: 1.29 s against 0.29 s
    on 300 documents); the oracle and `regex` differ on a few hundred code points. Surrogates are never in
    the text and left out of the difference."""
    return _class_as_oracle("[", (escape,), dialect) if _oracle_member(escape, dialect) is not None else ""


@functools.lru_cache(maxsize=256)
def _class_as_oracle(opening: str, parts: tuple[str, ...], dialect: Dialect) -> str:
    """The class `opening + parts + "]"` ("[" or "[^"; its parts in order) as `regex` matches the oracle's:
    the class as written, the code points `regex` puts in it that the oracle does not taken away by a
    lookahead, and those the oracle puts in it that `regex` does not added. Only code points where an escape
    of the tables has another membership in `regex` can differ; for those, the class's other parts are
    read with each such escape in place replaced by \\p{Cs} (the surrogates, never in the text), which keeps
    the parts around it apart as the escape did ("[+\\d-/]" is no range)."""
    import numpy as np
    import regex

    written = opening + "".join(parts) + "]"
    held = [part for part in parts if _ESCAPE.fullmatch(part) and _oracle_member(part, dialect) is not None]
    if not held:
        return written
    differ = np.zeros(0x110000, dtype=bool)
    for escape in held:
        differ |= _own_member(escape) != _oracle_member(escape, dialect)
    differ[0xD800:0xE000] = False
    if not differ.any():
        return written
    mine = regex.compile(written).fullmatch
    rest = regex.compile("[" + "".join("\\p{Cs}" if part in held else part for part in parts) + "]").fullmatch
    added, removed = [], []
    for code in np.flatnonzero(differ).tolist():
        char = chr(code)
        inside = rest(char) is not None or any(_oracle_member(escape, dialect)[code] for escape in held)
        if inside == (opening == "["):
            if mine(char) is None:
                added.append(code)
        elif mine(char) is not None:
            removed.append(code)
    kept = written if not removed else f"(?![{_ranges(_codes(removed))}]){written}"
    if added:
        return f"(?:[{_ranges(_codes(added))}]|{kept})"
    return f"(?:{kept})" if removed else written


def _codes(codes: list[int]) -> np.ndarray:
    import numpy as np

    member = np.zeros(0x110000, dtype=bool)
    member[codes] = True
    return member


_ESCAPE = re.compile(r"\\[pP](?:\{[^}]*\}|[A-Za-z])|\\[sSdDwW]")


# An escape whose class the oracle's tables hold, or a class bracket, or any other escape (kept as it is).
_CLASS_TOKEN = re.compile(r"\\[pP](?:\{[^}]*\}|[A-Za-z])|\\[sSdDwW]|\\.|\[\^?\]?|\]", re.DOTALL)


def with_oracle_classes(pat_str: str, dialect: Dialect = "tiktoken") -> str:
    """`pat_str` with its ``\\p{..}``, ``\\P{..}``, ``\\s``, ``\\d``, ``\\w`` (and negations) spelled out as the
    code points the oracle's engine gives them (tiktoken's, or HF's for "hf"), so that the `regex` engine cuts
    as the oracle does whatever Unicode the installed `regex` follows. Escapes the tables do not hold (scripts
    such as ``\\p{Greek}``) are kept, and then follow `regex`'s Unicode.

    A pattern the `regex` engine would backtrack on without bound is refused (`check_backtracking`): every
    pattern bound for that engine passes here, tokenizer.json parts' included."""
    check_backtracking(pat_str)
    ignores_case = re.search(r"\(\?[a-zA-Z]*i", pat_str) is not None
    out: list[str] = []
    opening = ""                # the class being read: "[" or "[^", then its parts in order (escapes the
    parts: list[str] = []       # tables hold, and the rest)
    in_class = False
    last = 0

    def emit(text: str) -> None:
        (parts if in_class else out).append(text)

    for token in _CLASS_TOKEN.finditer(pat_str):
        text = token.group()
        emit(pat_str[last:token.start()])
        last = token.end()
        if text.startswith("["):
            if in_class:        # a literal "[" inside a class; a "]" right after it closes nothing
                emit("\\[" + text[1:].replace("]", "\\]"))
                continue
            in_class = True
            opening, parts = text[:2] if text.startswith("[^") else "[", []
            if len(text) > len(opening):
                parts.append("\\]")           # "[]..." and "[^]...": a literal "]" first
        elif text == "]":
            if in_class:
                in_class = False
                out.append(_class_as_oracle(opening, tuple(parts), dialect))
            else:
                emit(text)      # (a literal "]")
        elif (len(text) > 2 or text[1] in "sSdDwW") and ignores_case:
            # (under a case-insensitive flag `regex` folds a property and ranges differently: the ranges)
            ranges = _class_ranges(text, dialect)
            emit(text if not ranges else ranges if in_class else f"[{ranges}]")
        elif len(text) > 2 or text[1] in "sSdDwW":
            if in_class:
                parts.append(text)
            else:
                emit(_oracle_class(text, dialect) or text)
        else:
            emit(text)
    if in_class:        # (unclosed: `regex` names the error)
        out.append(opening + "".join(parts))
    out.append(pat_str[last:])
    return "".join(out)


class PatternTimeoutError(ValueError):
    """A split pattern the `regex` engine would backtrack on without bound: refused when the pattern is
    compiled for that engine (`check_backtracking`), before any text runs, with the construct named.

    The name is historical: the limit used to be a time limit. It is now a static check of the pattern,
    which gives the same answer on every machine whatever its load, and which never stops good input."""


# ---- the deterministic guard: a static check for repeats that backtrack without bound ----------------------
#
# `regex` backtracks exponentially on a repeated group whose alternatives can match the same text, such as
# (a|aa)+$ on 45 a's and a "!" (~fib(45) ways to read the a's; minutes), where tiktoken's engine and HF's give
# up at once. Its own guards keep nested runs ((a+)+, HF's (?:\p{N}{1,3})+) and single-character alternatives
# ((?:\w|\d)+) linear; what they do not cover is a repeat (unbounded, or of more than `_SMALL_REPEAT`) over an
# alternation two of whose branches can start the same match. `check_backtracking` refuses exactly that shape
# (unless the repeat is possessive, which never backtracks into it). Polynomial backtracking (\s*[\r\n]+,
# \s+(?!\S), in every GPT pattern) is bounded by the pattern and is accepted.
_SMALL_REPEAT = 3
_STEPS = 8      # how far two branches are compared character by character


class _Unparsed(Exception):
    """Syntax the checker does not read: the pattern is accepted (regex compiled it; nothing here is known
    to backtrack)."""


def _any_chars() -> np.ndarray:
    import numpy as np

    return np.ones(0x110000, dtype=bool)


def _chars_of(code_points: list[int], ignore_case: bool):
    import numpy as np

    member = np.zeros(0x110000, dtype=bool)
    for cp in code_points:
        member[cp] = True
        if ignore_case:
            for other in {chr(cp).lower(), chr(cp).upper(), chr(cp).casefold()}:
                if len(other) == 1:
                    member[ord(other)] = True
    return member


def _escape_chars(escape: str, ignore_case: bool):
    """The code points of a class escape (``\\p{L}``, ``\\s``, ...) as the oracle's tables give them; every code
    point for one the tables do not hold (a script), or under case-insensitive matching of letters."""
    member = _oracle_member(escape, "tiktoken")
    if member is None or (ignore_case and escape[1] in "pP"):
        return _any_chars()
    return member


_SINGLE_ESCAPES = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "a": 7, "e": 27}


class _BacktrackParser:
    """Reads a pattern into (kind, ...) nodes for `check_backtracking`:
    ("alt", [branch, ...], start, end), a branch a list of items (atom, min, max, mode, start, end) with mode
    "greedy", "lazy" or "possessive", an atom ("set", thunk) | ("zero",) | ("group", kind, alt)."""

    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.i = 0
        self.ignore_case = bool(re.match(r"\(\?[a-zA-Z]*i", pattern))
        if re.match(r"\(\?[a-zA-Z]*x", pattern) or re.search(r"\(\?[a-zA-Z]*x[a-zA-Z]*\)", pattern):
            raise _Unparsed("verbose pattern")

    def parse(self):
        node = self.alt()
        if self.i != len(self.s):
            raise _Unparsed(f"unbalanced ) at {self.i}")
        return node

    def alt(self):
        start = self.i
        branches = [self.seq()]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            branches.append(self.seq())
        return ("alt", branches, start, self.i)

    def seq(self):
        items = []
        s = self.s
        while self.i < len(s) and s[self.i] not in "|)":
            start = self.i
            atom = self.atom()
            if atom is None:
                continue
            low, high, mode = self.quantifier()
            items.append((atom, low, high, mode, start, self.i))
        return items

    def quantifier(self):
        s, i = self.s, self.i
        if i >= len(s):
            return 1, 1, "greedy"
        if s[i] in "*+?":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[s[i]]
            i += 1
        else:
            found = re.compile(r"\{(\d*)(,?)(\d*)\}").match(s, i)
            if not found or (not found.group(1) and not found.group(3)):
                return 1, 1, "greedy"
            low = int(found.group(1) or 0)
            high = low if not found.group(2) else (int(found.group(3)) if found.group(3) else None)
            i = found.end()
        mode = "greedy"
        if i < len(s) and s[i] in "?+":
            mode = "lazy" if s[i] == "?" else "possessive"
            i += 1
        self.i = i
        return low, high, mode

    def atom(self):
        s = self.s
        c = s[self.i]
        if c == "(":
            return self.group()
        if c == "[":
            return ("set", self.char_class())
        if c == "\\":
            return self.escape()
        self.i += 1
        if c in "^$":
            return ("zero",)
        if c == ".":
            return ("set", _any_chars)
        ignore_case = self.ignore_case
        return ("set", lambda: _chars_of([ord(c)], ignore_case))

    def group(self):
        s = self.s
        self.i += 1
        kind = "group"
        saved_case = self.ignore_case
        if s.startswith("?", self.i):
            head = re.compile(r"\?(?:(:)|(>)|(=|!|<=|<!)|P?<[A-Za-z_]\w*>|'[A-Za-z_]\w*'|(\|)|"
                              r"([a-zA-Z]*)(?:-([a-zA-Z]*))?(:|\))|(#)[^)]*\))").match(s, self.i)
            if head is None:
                raise _Unparsed(f"group syntax at {self.i}")
            self.i = head.end()
            if head.group(8):       # a comment
                return None
            if head.group(2):
                kind = "atomic"
            elif head.group(3):
                kind = "look"
            if head.group(7):       # inline flags, scoped (?i:...) or to the end (?i)
                on, off = head.group(5) or "", head.group(6) or ""
                if "i" in on:
                    self.ignore_case = True
                if "i" in off:
                    self.ignore_case = False
                if head.group(7) == ")":
                    return None
        body = self.alt()
        if not s.startswith(")", self.i):
            raise _Unparsed("unclosed group")
        self.i += 1
        self.ignore_case = saved_case
        if kind == "look":
            return ("zero",)
        return ("group", kind, body)

    def escape(self):
        s = self.s
        found = re.compile(r"\\(?:[pP](?:\{[^}]*\}|[A-Za-z])|[sSdDwW])").match(s, self.i)
        if found:
            self.i = found.end()
            text, ignore_case = found.group(), self.ignore_case
            return ("set", lambda: _escape_chars(text, ignore_case))
        if s[self.i + 1:self.i + 2] in ("b", "B", "A", "Z", "z", "G", "K", "m", "M"):
            self.i += 2
            return ("zero",)
        cp = self.escaped_code_point()
        if cp is None:
            return ("set", _any_chars)     # \X, \R, a back reference, \N{...}: anything, to be safe
        ignore_case = self.ignore_case
        return ("set", lambda: _chars_of([cp], ignore_case))

    def escaped_code_point(self) -> int | None:
        """The code point of the escape at self.i (consumed); None for one that is not a single character."""
        s = self.s
        found = re.compile(r"\\(?:x\{([0-9a-fA-F]+)\}|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|"
                           r"0([0-7]{0,2})|N\{[^}]*\}|([1-9]\d*)|(.))", re.DOTALL).match(s, self.i)
        if found is None:
            raise _Unparsed("trailing backslash")
        self.i = found.end()
        for group in (1, 2, 3, 4):
            if found.group(group):
                return int(found.group(group), 16)
        if found.group(5) is not None:
            return int(found.group(5) or "0", 8)
        other = found.group(7)
        if other is None:
            return None
        if other in _SINGLE_ESCAPES:
            return _SINGLE_ESCAPES[other]
        return None if other.isalpha() else ord(other)

    def char_class(self):
        s = self.s
        self.i += 1
        negated = s.startswith("^", self.i)
        if negated:
            self.i += 1
        parts: list = []
        code_points: list[int] = []
        first = True
        while True:
            if self.i >= len(s):
                raise _Unparsed("unclosed class")
            c = s[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                if s.startswith("[:", self.i):
                    end = s.find(":]", self.i)
                    if end < 0:
                        raise _Unparsed("POSIX class")
                    self.i = end + 2
                    parts.append(_any_chars)
                    continue
                self.i += 1
                code_points.append(ord("["))
                continue
            low = self.class_char(parts)
            if low is None:
                continue
            if s.startswith("-", self.i) and self.i + 1 < len(s) and s[self.i + 1] != "]":
                self.i += 1
                high = self.class_char(parts)
                if high is None:
                    raise _Unparsed("range to a class")
                code_points.extend(range(low, high + 1))
            else:
                code_points.append(low)
        ignore_case = self.ignore_case

        def chars():
            member = _chars_of(code_points, ignore_case)
            for part in parts:
                member |= part()
            return ~member if negated else member
        return chars

    def class_char(self, parts: list) -> int | None:
        """One class member: its code point, or None after adding a class escape's thunk to `parts`."""
        s = self.s
        if s[self.i] != "\\":
            self.i += 1
            return ord(s[self.i - 1])
        found = re.compile(r"\\(?:[pP](?:\{[^}]*\}|[A-Za-z])|[sSdDwW])").match(s, self.i)
        if found:
            self.i = found.end()
            text, ignore_case = found.group(), self.ignore_case
            parts.append(lambda: _escape_chars(text, ignore_case))
            return None
        if s.startswith("\\b", self.i):
            self.i += 2
            return 8
        cp = self.escaped_code_point()
        if cp is None:
            parts.append(_any_chars)
        return cp


def _union(first, second):
    return lambda: first() | second()


def _first(items) -> tuple[Callable | None, bool]:
    """The characters the sequence `items` can start with (a thunk; None for none) and whether it can match
    the empty string."""
    chars = None
    for atom, low, _high, _mode, _start, _end in items:
        atom_chars, nullable = _atom_first(atom)
        if atom_chars is not None:
            chars = atom_chars if chars is None else _union(chars, atom_chars)
        if not (nullable or low == 0):
            return chars, False
    return chars, True


def _atom_first(atom) -> tuple[Callable | None, bool]:
    if atom[0] == "set":
        return atom[1], False
    if atom[0] == "zero":
        return None, True
    chars, nullable = None, False
    for branch in atom[2][1]:
        branch_chars, branch_nullable = _first(branch)
        nullable = nullable or branch_nullable
        if branch_chars is not None:
            chars = branch_chars if chars is None else _union(chars, branch_chars)
    return chars, nullable


def _steps(items) -> tuple[list, Callable | None]:
    """A branch as the characters its first mandatory positions match, one by one (up to about _STEPS), then
    the characters what follows can start with: None when it can end there, or after _STEPS positions."""
    steps: list = []
    for index, (atom, low, high, _mode, _start, _end) in enumerate(items):
        if len(steps) >= _STEPS:
            return steps, None
        if atom[0] == "zero":
            continue
        if atom[0] == "set" and low == high:
            steps.extend([atom[1]] * min(low, _STEPS))
            continue
        if atom[0] == "group" and low == high == 1 and len(atom[2][1]) == 1 and _ends_cleanly(atom[2][1][0]):
            steps.extend(_steps(atom[2][1][0])[0])
            continue
        chars, nullable = _first(items[index:])
        return steps, None if nullable else chars
    return steps, None


def _ends_cleanly(items) -> bool:
    """Whether `_steps` read all of `items` as mandatory single positions (so the next item continues it)."""
    for atom, low, high, _mode, _start, _end in items:
        if atom[0] == "zero" or (atom[0] == "set" and low == high and low <= _STEPS):
            continue
        if atom[0] == "group" and low == high == 1 and len(atom[2][1]) == 1 and _ends_cleanly(atom[2][1][0]):
            continue
        return False
    return True


def _branches_overlap(one, other) -> bool:
    """Whether two alternatives can start the same match: compared position by position, they never meet a
    position whose characters are disjoint (so that one of them, or both, could match a common prefix)."""
    steps_one, tail_one = _steps(one)
    steps_other, tail_other = _steps(other)
    for index in range(max(len(steps_one), len(steps_other)) + 1):
        x = steps_one[index] if index < len(steps_one) else tail_one
        y = steps_other[index] if index < len(steps_other) else tail_other
        if x is None or y is None:
            return True
        if not (x() & y()).any():
            return False
        if index >= len(steps_one) or index >= len(steps_other):
            return True
    return True


def _alternations(node):
    """Every alternation (with two branches or more) in the alt `node`, itself included."""
    if len(node[1]) > 1:
        yield node
    for branch in node[1]:
        for atom, *_ in branch:
            if atom[0] == "group":
                yield from _alternations(atom[2])


def _unbounded_repeat(node, pattern: str):
    """The first (repeat text, alternative, alternative) where a repeat backtracks without bound, or None."""
    for branch in node[1]:
        for atom, _low, high, mode, start, end in branch:
            if atom[0] != "group":
                continue
            if mode != "possessive" and (high is None or high > _SMALL_REPEAT):
                for alternation in _alternations(atom[2]):
                    branches = alternation[1]
                    for i, one in enumerate(branches):
                        for other in branches[i + 1:]:
                            if _branches_overlap(one, other):
                                return (pattern[start:end], _branch_text(one, pattern),
                                        _branch_text(other, pattern))
            found = _unbounded_repeat(atom[2], pattern)
            if found:
                return found
    return None


def _branch_text(items, pattern: str) -> str:
    return pattern[items[0][4]:items[-1][5]] if items else ""


@functools.lru_cache(maxsize=256)
def _backtracking_construct(pat_str: str) -> tuple[str, str, str] | None:
    try:
        tree = _BacktrackParser(pat_str).parse()
    except (_Unparsed, IndexError):
        return None
    return _unbounded_repeat(tree, pat_str)


def check_backtracking(pat_str: str, what: str | None = None) -> None:
    """Refuse (`PatternTimeoutError`, a ValueError) a pattern the `regex` engine backtracks on without bound:
    a repeat, not possessive, unbounded or of more than 3, over alternatives two of which can start the same
    match — (a|aa)+, (?:x|x?y)*. A static check of the pattern, the same on every machine and every text;
    `what` names the pattern in the message (default: the pattern itself)."""
    found = _backtracking_construct(pat_str)
    if found is None:
        return
    repeat, one, other = found
    raise PatternTimeoutError(
        f"{what or f'the pattern {pat_str!r}'}: the repeat {repeat!r} has alternatives that can match the "
        f"same text ({one!r} and {other!r}), so the regex engine backtracks without bound on it (exponentially "
        "in the length of the text); rewrite it so that no two alternatives can start the same match "
        "(e.g. (a|aa)+ as a+), or make the repeat possessive (*+, ++)")


# ---- the fast path: native classes where they agree with the oracle's ------------------------------------

@functools.lru_cache(maxsize=1)
def _all_code_points() -> str:
    import numpy as np

    return np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _matched(pattern: str) -> np.ndarray:
    """The code points that `pattern` (a one-character class, as `regex` reads it) matches."""
    import numpy as np
    import regex

    member = np.zeros(0x110000, dtype=bool)
    for found in regex.finditer(f"(?:{pattern})+", _all_code_points()):
        member[found.start():found.end()] = True
    return member


@functools.lru_cache(maxsize=64)
def _differing(pat_str: str, dialect: Dialect) -> np.ndarray | None:
    """The code points on which `pat_str` as `regex` reads it (its own Unicode) and `with_oracle_classes`
    (the oracle's) may decide differently: where a class escape of the pattern the tables hold has another
    membership in `regex` than in the oracle, with their case variants when the pattern ignores case, and the
    surrogates (which the rewritten classes leave out). None: the rewritten pattern is the pattern itself."""
    import numpy as np

    escapes = {token.group() for token in _CLASS_TOKEN.finditer(pat_str)
               if len(token.group()) > 2 or token.group()[1:] in tuple("sSdDwW")}
    escapes = {escape for escape in escapes if _class_ranges(escape, dialect)}
    if not escapes:
        return None
    differ = np.zeros(0x110000, dtype=bool)
    for escape in escapes:
        differ |= _oracle_member(escape, dialect) != _matched(f"[{escape}]")
    if re.search(r"\(\?[a-zA-Z]*i", pat_str) and differ.any():
        edges = np.flatnonzero(np.diff(np.concatenate(([0], differ.view(np.int8), [0]))))
        spans = [f"\\U{low:08x}-\\U{high - 1:08x}" for low, high in zip(edges[::2].tolist(), edges[1::2].tolist())]
        for chunk in range(0, len(spans), 500):
            differ |= _matched("(?i)[" + "".join(spans[chunk:chunk + 500]) + "]")
    differ[0xD800:0xE000] = True
    return differ


def _differing_check(differ: np.ndarray | None) -> Callable[[str], bool]:
    """text -> whether it holds a code point of `differ` (an ASCII text, at the cost of `str.isascii`, when
    `differ` holds no ASCII)."""
    if differ is None:
        return lambda text: False
    import numpy as np

    ascii_safe = not differ[:128].any()
    frombuffer, uint32 = np.frombuffer, np.uint32

    def holds(text: str) -> bool:
        if ascii_safe and text.isascii():
            return False
        return bool(differ[frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=uint32)].any())
    return holds


def regex_split(pattern: regex.Pattern[str], source: str | None = None,
                native: regex.Pattern[str] | None = None, differs: Callable[[str], bool] | None = None
                ) -> SplitFunction:
    """The `regex` engine's split: whole matches (findall would return a pattern's groups instead).

    With `native` (the pattern as `regex` reads it, its own Unicode classes) and `differs` (text -> whether it
    holds a code point where those classes and `pattern`'s spelled-out ones disagree), a text that holds
    none runs on `native`: the same pieces, at `regex`'s full speed (its property tests are table lookups,
    where a class spelled as ~2,000 ranges is tested range by range: o200k's pattern ran 25-60 times slower).

    No time limit: the pattern was checked when compiled (`check_backtracking`).

    concurrent=False: `regex` releases and retakes the GIL around every match unless told not to. Alone that
    costs ~25%; with batch threads it costs far more (two threads hand the GIL back and forth per piece: a
    batch ran at half the speed of a loop, and two threads of findall ran slower than one). So the regex
    keeps the GIL, and threads gain from the merge loop, which runs without it.
    """
    del source      # (errors name it at compile time)
    if native is None or differs is None:
        if pattern.groups:
            finditer = pattern.finditer
            return lambda text: [match.group() for match in finditer(text, concurrent=False)]
        findall = pattern.findall
        return lambda text: findall(text, concurrent=False)
    exact, fast = regex_split(pattern), regex_split(native)
    return lambda text: exact(text) if differs(text) else fast(text)


def compile_split(pat_str: str, dialect: Dialect = "tiktoken") -> SplitFunction:
    """The `regex` engine's split by `pat_str` with the oracle's classes (`compile_pattern`, whose errors and
    `check_backtracking`'s it raises), on the pattern's own classes for texts where they agree."""
    exact = compile_pattern(pat_str, dialect)
    native = _regex_compile(pat_str)
    differ = _differing(pat_str, dialect)
    if differ is None:
        return regex_split(native)
    return regex_split(exact, pat_str, native, _differing_check(differ))


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
