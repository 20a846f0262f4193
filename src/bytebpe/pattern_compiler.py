"""Split patterns of the GPT family compiled to programs for the compiled scanner (_pattern_scan.h).

A split pattern cuts text into pieces before BPE. Every pattern in use — gpt2/r50k, cl100k, o200k, Llama 3,
Qwen 2 to 3.6, Mistral Tekken, DeepSeek, gpt-oss, and the trainers' patterns — has one shape: a top-level
alternation of branches, each a sequence of items. This module parses such a pattern and compiles it into a
program that the scanner runs without the GIL, with the oracle's character classes and its backtracking
(leftmost-first) semantics. A pattern outside the family raises `UnsupportedPattern`, naming the construct,
and its caller keeps the `regex` engine for it.

The family (a grammar; `dialect` "tiktoken" reads Rust/fancy-regex syntax, "hf" Oniguruma's)::

    pattern   := branch ('|' branch)*                   every branch non-empty, none can match ""
    branch    := item*
    item      := atom quantifier?
    atom      := literal | class | '.' | '\\s' '\\S' '\\d' '\\D' '\\w' '\\W' | '\\p{P}' '\\P{P}'
               | '\\pL' ("tiktoken": \\p{L}; "hf": the two letters "pL", as Oniguruma reads it)
               | '(?:' alt ')' | '(' alt ')' | '(?i:' alt ')' | '(?>' alt ')'   groups
               | '(?=' alt ')' | '(?!' alt ')'                                   lookaheads
               | '$' | '^' | '\\z' | '\\A'                                        anchors
               | '(?i)'                                                          case-insensitive from here
    class     := '[' '^'? (char | char '-' char | escape-class)+ ']'
    quantifier:= ('?' | '*' | '+' | '{m}' | '{m,}' | '{m,n}') ('?' lazy | '+' possessive)?
    P         := a general category (L Lu Ll Lt Lm Lo LC M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po
                 S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Cs Co Cn, or their long names)

with these limits, each refused with its reason:
- a quantifier on a group is `?` only (greedy, lazy or possessive): repeated groups can backtrack without
  bound (HF's `(?:X{m,n})+`, from Oniguruma's `X{m,n}+`, is read as the run it equals when m is 1);
- case-insensitive matching (`(?i)`) applies to ASCII letters, digits, punctuation and to ``\\d``,
  ``\\s``, ``\\p{N}`` only (other classes change under case folding in ways the tables do not record), and
  under the "hf" dialect not to the letter pairs Oniguruma folds into one character (ss, st, ff, fi, fl);
- no lookbehind, backreference, nested class, class set operation, Unicode script, or `\\b`;
- the pattern must match a non-empty piece at every position of every text (every GPT pattern ends in a
  branch that does): the scanner's pieces partition the text, as tiktoken's and HF's do for such a pattern.
  This is checked on the compiled tables (`_pretokenize.compile_scanner`), code point class by class.

One known difference from an oracle: tiktoken 0.14's engine cuts "ab" whole by `ab+c?b+|[\\s\\S]` (a run, an
optional item, a run of an overlapping class), which cannot match fewer than three characters; the scanner
follows the pattern, as HF and the `regex` package do (tests/exactness/test_pattern_compiler.py records it). No pattern
in use has that shape.

Character classes are built from each code point's properties as the oracle's engine sees them
(_unicode_props.h, tools/gen_unicode_props.py): stock tiktoken's for `Encoding(pat_str=...)`, `.tiktoken`
and Tekken files; HF `tokenizers`' for `tokenizer.json`.
"""
from __future__ import annotations

import string
from typing import Literal, NamedTuple, Union

__all__ = ["UnsupportedPattern", "Program", "compile_split_pattern", "looks_at_the_start", "Dialect", "GENERAL_CATEGORIES",
           "property_values", "block_rules", "BLOCK_RULES"]

Dialect = Literal["tiktoken", "hf"]

# A code point's property byte (_unicode_props.h): bits 0-4 its general category, by index in this tuple.
GENERAL_CATEGORIES = ("Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                      "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co")
_SPACE, _WORD, _DIGIT, _CATEGORY = 0x20, 0x40, 0x80, 0x1F
_ALL_VALUES = (1 << 256) - 1

_GROUPS = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "LC": ("Lu", "Ll", "Lt"), "M": ("Mn", "Mc", "Me"),
    "N": ("Nd", "Nl", "No"), "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"),
    "Z": ("Zs", "Zl", "Zp"), "C": ("Cc", "Cf", "Cs", "Co", "Cn"),
}
_LONG_NAMES = {
    "letter": "L", "casedletter": "LC", "uppercaseletter": "Lu", "lowercaseletter": "Ll",
    "titlecaseletter": "Lt", "modifierletter": "Lm", "otherletter": "Lo", "mark": "M", "combiningmark": "M",
    "nonspacingmark": "Mn", "spacingmark": "Mc", "enclosingmark": "Me", "number": "N", "decimalnumber": "Nd",
    "letternumber": "Nl", "othernumber": "No", "punctuation": "P", "connectorpunctuation": "Pc",
    "dashpunctuation": "Pd", "openpunctuation": "Ps", "closepunctuation": "Pe", "initialpunctuation": "Pi",
    "finalpunctuation": "Pf", "otherpunctuation": "Po", "symbol": "S", "mathsymbol": "Sm",
    "currencysymbol": "Sc", "modifiersymbol": "Sk", "othersymbol": "So", "separator": "Z",
    "spaceseparator": "Zs", "lineseparator": "Zl", "paragraphseparator": "Zp", "other": "C", "control": "Cc",
    "format": "Cf", "surrogate": "Cs", "privateuse": "Co", "unassigned": "Cn",
}
# Letter pairs Oniguruma's case-insensitive matching folds into one character (ß, ﬆ, ﬀ, ﬁ, ﬂ).
_ONIGURUMA_MULTI_FOLDS = ("ss", "st", "ff", "fi", "fl")

# Instructions: six int32 words each, [op, a, b, c, d, e]; see _pattern_scan.h, which runs them.
OP_MATCH, OP_SET, OP_BYTE, OP_RUN, OP_RUN_BYTE, OP_SPLIT, OP_JMP, OP_LOOK, OP_ATOMIC = range(9)
OP_END_TEXT, OP_END_LINE, OP_START_TEXT, OP_START_LINE, OP_SUCCEED = range(9, 14)
GREEDY, LAZY, POSSESSIVE = 0, 1, 2
UNBOUNDED = -1
NO_BIT = -1
_MAX_SETS = 32
_MAX_INSTRUCTIONS = 249     # _pattern_scan.h: fewer than its BYTEBPE_PATTERN_MAX_INSTRUCTIONS
_MAX_NESTING = 4            # lookaheads and atomic groups inside each other (BYTEBPE_PATTERN_MAX_NESTING)
_MAX_REPEAT = 1 << 20


class UnsupportedPattern(ValueError):
    """A split pattern outside the family the compiled scanner runs (the message says which construct)."""


# ==== sets ========================================================================================


def _values_where(predicate) -> int:
    """The 256-bit mask of property bytes that satisfy `predicate`."""
    mask = 0
    for value in range(256):
        if predicate(value):
            mask |= 1 << value
    return mask


def _category_mask(name: str) -> int:
    names = _GROUPS.get(name, (name,))
    indices = {GENERAL_CATEGORIES.index(n) for n in names}
    return _values_where(lambda value: (value & _CATEGORY) in indices)


def _short_name(name: str) -> str | None:
    if name in _GROUPS or name in GENERAL_CATEGORIES:
        return name
    return _LONG_NAMES.get(name.replace("_", "").replace(" ", "").replace("-", "").lower())


def property_values(name: str) -> int | None:
    """The 256-bit mask of property bytes in the general category (or group) `name` of ``\\p{name}`` (a
    leading ^ negates it); None for a name that is not a general category."""
    short = _short_name(name.lstrip("^"))
    if short is None:
        return None
    mask = _category_mask(short)
    return _ALL_VALUES & ~mask if name.startswith("^") else mask


_SPACE_MASK = _values_where(lambda value: value & _SPACE)
_WORD_MASK = _values_where(lambda value: value & _WORD)
_DIGIT_MASK = _values_where(lambda value: value & _DIGIT)


class CharSet(NamedTuple):
    """Code points cp with ``negated != (property byte of cp in values or cp in ranges)``: `values` a 256-bit
    mask over property bytes, `ranges` inclusive (low, high) pairs, sorted and merged."""
    negated: bool
    values: int
    ranges: tuple[tuple[int, int], ...]

    @staticmethod
    def of(items: list[tuple[int, tuple[tuple[int, int], ...]]], negated: bool) -> CharSet:
        values = 0
        ranges: list[tuple[int, int]] = []
        for item_values, item_ranges in items:
            values |= item_values
            ranges.extend(item_ranges)
        merged: list[tuple[int, int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        return CharSet(negated, values, tuple(merged))


# What one class item contributes: (property-byte mask, explicit ranges).
_Item = tuple[int, tuple[tuple[int, int], ...]]


# ==== syntax tree =================================================================================

class _Set(NamedTuple):
    charset: CharSet
    letter: str = ""    # the ASCII letter (lower case) of a case-insensitive literal, else ""


class _Byte(NamedTuple):
    byte: int


class _Seq(NamedTuple):
    items: list[_Node]


class _Alt(NamedTuple):
    branches: list[_Seq]


class _Repeat(NamedTuple):
    node: _Node
    low: int
    high: int           # UNBOUNDED or >= low
    mode: int


class _Look(NamedTuple):
    alt: _Alt
    negative: bool


class _Atomic(NamedTuple):
    alt: _Alt


class _Anchor(NamedTuple):
    op: int


_Node = Union[_Set, _Byte, _Seq, _Alt, _Repeat, _Look, _Atomic, _Anchor]


# ==== parser ======================================================================================

class _Parser:
    def __init__(self, pattern: str, dialect: Dialect, case_extras: dict[str, tuple[int, ...]]) -> None:
        self.text = pattern
        self.i = 0
        self.dialect = dialect
        self.case_extras = case_extras

    def refuse(self, what: str) -> UnsupportedPattern:
        return UnsupportedPattern(f"{what} (at offset {self.i} of {self.text!r})")

    def peek(self, k: int = 0) -> str:
        return self.text[self.i + k] if self.i + k < len(self.text) else ""

    def take(self) -> str:
        if self.i >= len(self.text):
            raise self.refuse("the pattern ends inside a construct")
        c = self.text[self.i]
        self.i += 1
        return c

    def parse(self) -> _Alt:
        alt = self.alternation(False)
        if self.i != len(self.text):
            raise self.refuse(f"unbalanced {self.peek()!r}")
        return alt

    def alternation(self, fold: bool) -> _Alt:
        seq, fold = self.sequence(fold)
        branches = [seq]
        while self.peek() == "|":
            self.i += 1
            seq, fold = self.sequence(fold)
            branches.append(seq)
        return _Alt(branches)

    def sequence(self, fold: bool) -> tuple[_Seq, bool]:
        """A branch, and whether the branches after it in the same group are case-insensitive.

        An isolated `(?i)` holds to the end of the enclosing group in both engines, but they read what
        follows differently: Rust's regex reads on, so the later branches of the group are case-insensitive
        too; Oniguruma makes a group of the rest, later branches included: `a(?i)b|c` is `a(?i:b|c)`. Both
        mean the same when `(?i)` starts a branch."""
        items: list[_Node] = []
        while self.peek() not in ("", "|", ")"):
            if self.text.startswith("(?i)", self.i):
                self.i += 4
                fold = True
                if self.dialect == "hf" and items:
                    items.append(self.alternation(True))
                    fold = False        # the alternation took every later branch of the group
                    break
                continue
            atom = self.atom(fold)
            items.append(self.quantified(atom))
        if self.dialect == "hf":
            _refuse_multi_folds(items, self)
        return _Seq(items), fold

    def quantified(self, atom: _Node) -> _Node:
        c = self.peek()
        if c == "?":
            low, high = 0, 1
        elif c == "*":
            low, high = 0, UNBOUNDED
        elif c == "+":
            low, high = 1, UNBOUNDED
        elif c == "{" and self.interval_ahead():
            return self.interval(atom)
        else:
            return atom
        self.i += 1
        return self.with_mode(atom, low, high, self.mode(allow_possessive=True))

    def interval_ahead(self) -> bool:
        j = self.text.find("}", self.i)
        body = self.text[self.i + 1:j] if j > 0 else ""
        # {m}, {m,}, {m,n} and {,n} (both engines read it as {0,n}); anything else is literal text.
        return bool(body) and all(ch.isdigit() or ch == "," for ch in body) and body.count(",") <= 1 \
            and body != ","

    def interval(self, atom: _Node) -> _Node:
        j = self.text.index("}", self.i)
        body = self.text[self.i + 1:j]
        self.i = j + 1
        if "," in body:
            low_text, high_text = body.split(",")
            low, high = int(low_text or 0), (int(high_text) if high_text else UNBOUNDED)
        else:
            low = high = int(body)
        if low > _MAX_REPEAT or (high != UNBOUNDED and (high > _MAX_REPEAT or high < low)):
            raise self.refuse(f"repeat {{{body}}} out of range")
        if self.dialect == "hf" and self.peek() == "+":
            # Oniguruma: X{m,n}+ is (?:X{m,n})+, a repeated interval, not a possessive one.
            self.i += 1
            inner = self.with_mode(atom, low, high, GREEDY)
            return self.with_mode(inner, 1, UNBOUNDED, self.mode(allow_possessive=False))
        if self.dialect == "hf" and "," not in body and self.peek() == "?":
            # Oniguruma (Ruby syntax): X{n}? is (?:X{n})?, an optional run of exactly n, not a lazy one.
            self.i += 1
            return _Repeat(self.with_mode(atom, low, high, GREEDY), 0, 1, GREEDY)
        return self.with_mode(atom, low, high, self.mode(allow_possessive=True))

    def mode(self, allow_possessive: bool) -> int:
        if self.peek() == "?":
            self.i += 1
            return LAZY
        if self.peek() == "+" and allow_possessive:
            self.i += 1
            return POSSESSIVE
        return GREEDY

    def with_mode(self, atom: _Node, low: int, high: int, mode: int) -> _Node:
        if isinstance(atom, (_Set, _Byte)):
            return _Repeat(atom, low, high, mode)
        if isinstance(atom, _Repeat) and isinstance(atom.node, (_Set, _Byte)) and atom.low == 1 and low == 1 \
                and high == UNBOUNDED and atom.mode == GREEDY and mode != LAZY:
            # (?:X{1,n})+ matches what X+ matches, and gives back one X at a time in the same order.
            return _Repeat(atom.node, 1, UNBOUNDED, mode)
        if isinstance(atom, (_Anchor, _Look)):
            raise self.refuse("a quantifier on an anchor or a lookahead")
        if (low, high) != (0, 1):
            raise self.refuse("a group repeated by a quantifier other than '?' (repeated groups can backtrack "
                              "without bound)")
        return _Repeat(atom, low, high, mode)

    def atom(self, fold: bool) -> _Node:
        c = self.take()
        if c == "(":
            return self.group(fold)
        if c == "[":
            return _Set(self.char_class(fold))
        if c == ".":
            return _Set(CharSet.of([(0, ((10, 10),))], True))
        if c == "$":
            return _Anchor(OP_END_TEXT if self.dialect == "tiktoken" else OP_END_LINE)
        if c == "^":
            return _Anchor(OP_START_TEXT if self.dialect == "tiktoken" else OP_START_LINE)
        if c == "\\":
            return self.escape(fold)
        if c in "*+?{" and not (c == "{" and not self.interval_ahead_at(self.i - 1)):
            raise self.refuse(f"a quantifier {c!r} with nothing to repeat")
        if c in ")]":
            raise self.refuse(f"unbalanced {c!r}")
        return self.literal(ord(c), fold)

    def interval_ahead_at(self, position: int) -> bool:
        saved, self.i = self.i, position
        try:
            return self.interval_ahead()
        finally:
            self.i = saved

    def literal(self, cp: int, fold: bool) -> _Node:
        if fold:
            folded = self.folded(cp)
            if folded is not None:
                return _Set(folded, chr(cp).lower() if chr(cp) in string.ascii_letters else "")
        if cp < 0x80:
            return _Byte(cp)
        return _Set(CharSet.of([(0, ((cp, cp),))], False))

    def folded(self, cp: int) -> CharSet | None:
        """The set `(?i:chr(cp))` matches, or None when it is the code point alone."""
        char = chr(cp)
        if char in string.ascii_letters:
            lower = char.lower()
            cps = {ord(lower), ord(lower.upper()), *self.case_extras.get(lower, ())}
            return CharSet.of([(0, tuple((x, x) for x in cps))], False)
        if cp < 0x80:
            return None
        raise self.refuse(f"case-insensitive matching of {char!r} (only ASCII is supported under (?i))")

    def group(self, fold: bool) -> _Node:
        if self.peek() != "?":
            alt = self.alternation(fold)
        else:
            self.i += 1
            kind = self.take()
            if kind == ":":
                alt = self.alternation(fold)
            elif kind == "i" and self.peek() == ":":
                self.i += 1
                alt = self.alternation(True)
            elif kind in "=!":
                look = _Look(self.alternation(fold), kind == "!")
                self.close()
                return look
            elif kind == ">":
                atomic = _Atomic(self.alternation(fold))
                self.close()
                return atomic
            elif kind == "<" and self.peek() in "=!":
                raise self.refuse("lookbehind")
            else:
                raise self.refuse(f"the group '(?{kind}' (supported: (?:, (?i:, (?=, (?!, (?>)")
        self.close()
        return alt

    def close(self) -> None:
        if self.take() != ")":
            raise self.refuse("a group is not closed")

    def escape(self, fold: bool) -> _Node:
        item = self.escape_item(fold, in_class=False)
        if isinstance(item, _Anchor):
            return item
        if isinstance(item, int):
            return self.literal(item, fold)
        return _Set(CharSet.of([item[0]], item[1]))

    def escape_item(self, fold: bool, in_class: bool):
        """After a backslash: a code point (int), a class item ((values, ranges), negated), or an anchor."""
        c = self.take()
        simple = {"r": 13, "n": 10, "t": 9, "f": 12, "v": 11, "a": 7, "e": 27}
        if c in simple:
            return simple[c]
        if c in "sSdDwW":
            mask = {"s": _SPACE_MASK, "d": _DIGIT_MASK, "w": _WORD_MASK}[c.lower()]
            if fold and c.lower() == "w":
                raise self.refuse("case-insensitive \\w")
            return (mask, ()), c.isupper()
        if c in "pP":
            if self.dialect == "hf" and self.peek() != "{":
                return ord(c)       # Oniguruma's Ruby syntax: \pL is the letters "pL", not \p{L}
            return (self.property(fold), ()), c == "P"
        if c == "x":
            return self.hex_escape()
        if c == "u" and self.dialect == "hf":
            digits = self.text[self.i:self.i + 4]
            if len(digits) == 4 and all(ch in string.hexdigits for ch in digits):
                self.i += 4
                return int(digits, 16)
        if not in_class and c == "z":
            return _Anchor(OP_END_TEXT)
        if not in_class and c == "A":
            return _Anchor(OP_START_TEXT)
        if c.isascii() and not c.isalnum():
            return ord(c)
        raise self.refuse(f"the escape '\\{c}'")

    def hex_escape(self) -> int:
        if self.peek() == "{":
            end = self.text.find("}", self.i)
            digits = self.text[self.i + 1:end] if end > 0 else ""
            self.i = end + 1 if end > 0 else self.i
        else:
            digits = self.text[self.i:self.i + 2]
            self.i += 2
        if not digits or not all(ch in string.hexdigits for ch in digits) or int(digits, 16) >= 0x110000:
            raise self.refuse("a malformed \\x escape")
        return int(digits, 16)

    def property(self, fold: bool) -> int:
        if self.peek() == "{":
            end = self.text.find("}", self.i)
            if end < 0:
                raise self.refuse("an unclosed \\p{")
            name = self.text[self.i + 1:end]
            self.i = end + 1
        else:
            name = self.take()
        values = property_values(name)
        if values is None:
            raise self.refuse(f"the property \\p{{{name}}} (supported: general categories)")
        if fold and _short_name(name.lstrip("^")) not in ("N", "Nd", "Nl", "No"):
            raise self.refuse(f"case-insensitive \\p{{{name}}}")
        return values

    def char_class(self, fold: bool) -> CharSet:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        items: list[_Item] = []
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            if c == "[":
                raise self.refuse("a nested class or a POSIX class inside [...]")
            if c in "&-~" and self.peek() == c:
                raise self.refuse(f"the class set operation {c * 2!r}")
            if c == "\\":
                item = self.escape_item(fold, in_class=True)
                if isinstance(item, tuple):
                    (values, ranges), item_negated = item
                    items.append((_ALL_VALUES & ~values if item_negated else values, ranges))
                    continue
                low = item
            else:
                low = ord(c)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                c = self.take()
                high = self.escape_item(fold, in_class=True) if c == "\\" else ord(c)
                if not isinstance(high, int) or high < low:
                    raise self.refuse("a malformed range in [...]")
            else:
                high = low
            items.append(self.folded_range(low, high, fold))
        return CharSet.of(items, negated)

    def folded_range(self, low: int, high: int, fold: bool) -> _Item:
        if not fold:
            return 0, ((low, high),)
        ranges = [(low, high)]
        for cp in range(low, min(high, 0x7F) + 1):
            folded = self.folded(cp)
            if folded is not None:
                ranges.extend(folded.ranges)
        if high >= 0x80:
            raise self.refuse("case-insensitive matching of a range beyond ASCII")
        return 0, tuple(ranges)


def _edge_letters(node: _Node, last: bool) -> set[str]:
    """The case-insensitive literal letters that can be the first (or `last`) code point `node` matches."""
    if isinstance(node, _Set):
        return {node.letter} if node.letter else set()
    if isinstance(node, _Repeat):
        return _edge_letters(node.node, last)
    if isinstance(node, (_Alt, _Atomic)):
        branches = node.branches if isinstance(node, _Alt) else node.alt.branches
        return set().union(*(_edge_letters(branch, last) for branch in branches))
    if isinstance(node, _Seq):
        found: set[str] = set()
        for item in reversed(node.items) if last else node.items:
            found |= _edge_letters(item, last)
            if not _nullable(item):
                break
        return found
    return set()


def _refuse_multi_folds(items: list[_Node], parser: _Parser) -> None:
    """Oniguruma matches a case-insensitive string such as "ss" also as the one character that folds to it
    (ß), and joins literals through groups to do so (`s(?:s)`, `s\x73`). The scanner matches code point by
    code point, so every sequence in which such a pair of case-insensitive literals may meet is refused,
    whatever groups, options or optional items stand between them."""
    for k, item in enumerate(items):
        before = _edge_letters(item, last=True)
        if not before:
            continue
        after: set[str] = set()
        for following in items[k + 1:]:
            after |= _edge_letters(following, last=False)
            if not _nullable(following):
                break
        for pair in _ONIGURUMA_MULTI_FOLDS:
            if pair[0] in before and pair[1] in after:
                raise parser.refuse(f"case-insensitive {pair!r}, which Oniguruma also matches as one character")


# ==== compiler ====================================================================================

class Program(NamedTuple):
    """What the scanner runs (see _pattern_scan.h).

    sets: the character sets, by bit; first_sets: per branch, the bits whose code points can start it (empty
    tuple: any); code: instructions of six words; branch_starts: the pc of each top-level branch;
    coverage: per branch, (bit, bits) — the branch matches one code point in set `bit` whatever follows, unless
    it also has one of `bits` (-1: no such guarantee); the scanner's tables check that every code point is
    covered by some branch; shapes: per branch, SHAPE_WORDS words describing it as an optional code point
    then runs (`_shape`), or all zeros: the scanner then matches the branch without running its program."""
    pattern: str
    dialect: str
    sets: list[CharSet]
    first_sets: list[tuple[int, ...]]
    first_bytes: list[tuple[int, ...]]
    code: list[int]
    branch_starts: list[int]
    coverage: list[tuple[int, int]]
    shapes: list[int]
    tree: _Alt | None = None


class _Compiler:
    def __init__(self) -> None:
        self.sets: list[CharSet] = []
        self.code: list[list[int]] = []
        self.depth = 0

    def set_bit(self, charset: CharSet) -> int:
        if charset not in self.sets:
            if len(self.sets) >= _MAX_SETS:
                raise UnsupportedPattern(f"more than {_MAX_SETS} distinct character classes")
            self.sets.append(charset)
        return self.sets.index(charset)

    def first_mask(self, items: list[_Node]) -> int:
        """Set bits one of which the first code point of any match of `items` has; 0 when unknown (the items
        can match empty, or start with an assertion) or when the sets ran out (a guard is an optimization)."""
        if not items or _nullable(_Seq(items)):
            return 0
        found = _firsts(_Seq(items))
        if found is None:
            return 0
        sets, bytes_ = found
        if bytes_:
            sets = sets + [CharSet.of([(0, tuple((b, b) for b in bytes_))], False)]
        mask = 0
        for charset in sets:
            if charset not in self.sets and len(self.sets) >= _MAX_SETS - 8:
                return 0        # keep bits for the sets the program needs
            mask |= 1 << self.set_bit(charset)
        return mask

    def emit(self, op: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0, e: int = 0) -> int:
        self.code.append([op, a, b, c, d, e])
        if len(self.code) > _MAX_INSTRUCTIONS:
            raise UnsupportedPattern("the pattern compiles to too many instructions")
        return len(self.code) - 1

    def alt(self, alt: _Alt, rest: list[_Node]) -> None:
        """Branches in order: SPLIT to the first (skipped when the code point cannot start it), on failure the
        next."""
        jumps = []
        for k, branch in enumerate(alt.branches):
            if k < len(alt.branches) - 1:
                split = self.emit(OP_SPLIT, 0, 0, _signed(self.first_mask(branch.items)))
                self.code[split][1] = split + 1
            self.seq(branch, rest, top=False)
            if k < len(alt.branches) - 1:
                jumps.append(self.emit(OP_JMP))
                self.code[split][2] = len(self.code)
        for jump in jumps:
            self.code[jump][1] = len(self.code)

    def seq(self, seq: _Seq, rest: list[_Node], top: bool) -> None:
        """`rest`: what follows the sequence inside its branch (for the runs' `need`); `top`: the sequence is
        a top-level branch, so nothing follows `rest` but the match."""
        for index, item in enumerate(seq.items):
            self.node(item, seq.items[index + 1:] + rest, top)

    def node(self, node: _Node, rest: list[_Node], top: bool) -> None:
        if isinstance(node, _Set):
            self.emit(OP_SET, self.set_bit(node.charset))
        elif isinstance(node, _Byte):
            self.emit(OP_BYTE, node.byte)
        elif isinstance(node, _Seq):
            self.seq(node, rest, top)
        elif isinstance(node, _Alt):
            if len(node.branches) == 1:
                self.seq(node.branches[0], rest, top)
            else:
                self.alt(node, rest)
        elif isinstance(node, _Repeat):
            self.repeat(node, rest, top)
        elif isinstance(node, _Look):
            look = self.emit(OP_LOOK, int(node.negative))
            self.nested(lambda: self.alt(node.alt, []))
            self.emit(OP_SUCCEED)
            self.code[look][2] = len(self.code)
        elif isinstance(node, _Atomic):
            self.atomic(lambda: self.alt(node.alt, []))
        elif isinstance(node, _Anchor):
            self.emit(node.op)

    def atomic(self, body) -> None:
        atomic = self.emit(OP_ATOMIC)
        self.nested(body)
        self.emit(OP_SUCCEED)
        self.code[atomic][1] = len(self.code)

    def nested(self, body) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise UnsupportedPattern(f"lookaheads and atomic groups nested more than {_MAX_NESTING} deep")
        body()
        self.depth -= 1

    def repeat(self, node: _Repeat, rest: list[_Node], top: bool) -> None:
        mode = node.mode
        if mode == GREEDY and top and _free_tail(rest):
            # What follows always matches, so the longest run is the one kept: it never gives back.
            mode = POSSESSIVE
        if isinstance(node.node, (_Set, _Byte)):
            # need: set bits one of which the code point after the run must have for the rest to match (0:
            # none known): a greedy run gives back only to such positions, and fails when none is left.
            need = self.first_mask(_required_prefix(rest)) if mode == GREEDY else 0
            if isinstance(node.node, _Set):
                self.emit(OP_RUN, self.set_bit(node.node.charset), node.low, node.high, mode, _signed(need))
            else:
                self.emit(OP_RUN_BYTE, node.node.byte, node.low, node.high, mode, _signed(need))
            return
        # An optional group (the parser allows no other repeated group).
        if mode == POSSESSIVE:
            self.atomic(lambda: self.repeat(_Repeat(node.node, 0, 1, GREEDY), [], False))
            return
        guard = self.first_mask([node.node]) if mode == GREEDY else 0
        split = self.emit(OP_SPLIT, 0, 0, _signed(guard))
        body = len(self.code)
        self.node(node.node, rest, False)
        after = len(self.code)
        self.code[split][1:3] = [body, after] if mode == GREEDY else [after, body]


def _signed(mask: int) -> int:
    """A 32-bit mask as the int32 word that holds it."""
    return mask - (1 << 32) if mask >= 1 << 31 else mask


def _required_prefix(rest: list[_Node]) -> list[_Node]:
    """`rest` if some item of it must consume a code point before any assertion, else [] (no need known)."""
    for item in rest:
        if isinstance(item, (_Look, _Anchor)):
            return []
        if not _nullable(item):
            return rest
    return []


# ---- analysis -------------------------------------------------------------------------------------

def _nullable(node: _Node) -> bool:
    if isinstance(node, (_Set, _Byte)):
        return False
    if isinstance(node, _Seq):
        return all(_nullable(item) for item in node.items)
    if isinstance(node, _Alt):
        return any(_nullable(branch) for branch in node.branches)
    if isinstance(node, _Repeat):
        return node.low == 0 or _nullable(node.node)
    if isinstance(node, _Atomic):
        return _nullable(node.alt)
    return True     # lookaheads and anchors consume nothing


def _firsts(node: _Node) -> tuple[list[CharSet], list[int]] | None:
    """Sets and bytes one of which the first code point of a non-empty match of `node` is in (None: any)."""
    if isinstance(node, _Set):
        return [node.charset], []
    if isinstance(node, _Byte):
        return [], [node.byte]
    if isinstance(node, (_Repeat, _Atomic)):
        return _firsts(node.node if isinstance(node, _Repeat) else node.alt)
    if isinstance(node, _Alt):
        sets: list[CharSet] = []
        bytes_: list[int] = []
        for branch in node.branches:
            found = _firsts(branch)
            if found is None:
                return None
            sets += found[0]
            bytes_ += found[1]
        return sets, bytes_
    if isinstance(node, _Seq):
        sets, bytes_ = [], []
        for item in node.items:
            if isinstance(item, (_Look, _Anchor)):
                return None
            found = _firsts(item)
            if found is None:
                return None
            sets += found[0]
            bytes_ += found[1]
            if not _nullable(item):
                return sets, bytes_
        return sets, bytes_
    return None


def _free_tail(items: list[_Node]) -> bool:
    """Whether `items` always match (the empty string at least) whatever the text follows: each item then
    matches (an optional item, greedy, lazy or possessive, matches its body or nothing), so the sequence does."""
    def free(node: _Node) -> bool:
        if isinstance(node, (_Look, _Anchor)):
            return False
        if isinstance(node, _Repeat):
            return node.low == 0
        if isinstance(node, _Seq):
            return all(free(item) for item in node.items)
        if isinstance(node, _Alt):
            return any(free(branch) for branch in node.branches)
        return False
    return all(free(item) for item in items)


def _coverage(branch: _Seq, compiler: _Compiler) -> tuple[int, int]:
    """(bit, bits): the branch matches at any code point in set `bit` that has none of `bits`, whatever
    follows; (-1, 0) when no such set is known."""
    blocked = 0
    for index, item in enumerate(branch.items):
        if isinstance(item, _Repeat) and item.low == 0 and isinstance(item.node, (_Set, _Byte)):
            if item.mode == POSSESSIVE:     # it would keep a code point the next item needs
                if isinstance(item.node, _Byte):
                    return NO_BIT, 0
                blocked |= 1 << compiler.set_bit(item.node.charset)
            continue
        # One code point is enough for the item (a set or byte, or a run of at least one), and the rest always
        # matches.
        head = item.node if isinstance(item, _Repeat) and item.low == 1 else item
        if isinstance(head, _Byte):
            head = _Set(CharSet.of([(0, ((head.byte, head.byte),))], False))
        if isinstance(head, _Set) and _free_tail(branch.items[index + 1:]):
            return compiler.set_bit(head.charset), blocked
        return NO_BIT, 0
    return NO_BIT, 0


# Most pieces of most patterns come from branches of two shapes, which the scanner matches with a few lines of
# its own instead of running their program:
#   SHAPE_OPT_RUN     A? B{low,high} C{0,h1} D{0,h2} T   ([^\r\n\p{L}\p{N}]?\p{L}+,  ?[^\s\p{L}\p{N}]+[\r\n]*,
#                                                       \p{N}{1,3}, \s+)
#   SHAPE_OPT_CASED   A? U* L+ C{0,h1} D{0,h2} T          (o200k's and Tekken's words)
# A is an optional code point (of a set, or a byte); B, U, L runs of a set; C and D runs of a set or a byte that
# may be empty; T whatever is left of the branch, when it always matches (an optional group: o200k's
# contractions), run as the program from its first instruction only where a code point that can start it
# follows. What holds: everything after B (after L) always matches, so those runs are taken longest whatever
# their mode (greedy or possessive; lazy is neither shape), and the only choices left are A's (given back,
# unless possessive, when the rest cannot follow it) and U*'s (it gives back to the last code point L can
# start at, as a backtracking engine's first success).
# Words: kind; A's kind (0 none, 1 set, 2 byte), bit or byte, possessive; B's (U's) bit, low, high (-1: none);
# L's bit (SHAPE_OPT_CASED); C's and D's kind, bit or byte, high; T's pc (-1: none) and the set bits one of
# which a code point must have to start T.
SHAPE_WORDS = 16
SHAPE_NONE, SHAPE_OPT_RUN, SHAPE_OPT_CASED = 0, 1, 2


def _is_run(node: _Node, low: int | None = None, of_set: bool = True) -> bool:
    return (isinstance(node, _Repeat) and node.mode != LAZY and (low is None or node.low == low)
            and isinstance(node.node, _Set if of_set else (_Set, _Byte)))


def _shape(branch: _Seq, compiler: _Compiler, item_pcs: list[int]) -> list[int]:
    none = [SHAPE_NONE] * SHAPE_WORDS
    items = list(branch.items)
    k = 0
    words = [SHAPE_OPT_RUN]
    head = items[0] if items else None
    if isinstance(head, _Repeat) and (head.low, head.high) == (0, 1) and head.mode != LAZY \
            and isinstance(head.node, (_Set, _Byte)) and len(items) > 1:
        node = head.node
        words += [1, compiler.set_bit(node.charset)] if isinstance(node, _Set) else [2, node.byte]
        words.append(int(head.mode == POSSESSIVE))
        k = 1
    else:
        words += [0, 0, 0]
    run = items[k] if k < len(items) else None
    if isinstance(run, _Set):
        run = _Repeat(run, 1, 1, GREEDY)
    cased = (_is_run(run, 0) and run.mode == GREEDY and run.high == UNBOUNDED and k + 1 < len(items)
             and _is_run(items[k + 1], 1) and items[k + 1].high == UNBOUNDED)
    if cased:
        words[0] = SHAPE_OPT_CASED
        words += [compiler.set_bit(run.node.charset), 0, UNBOUNDED, compiler.set_bit(items[k + 1].node.charset)]
        k += 2
    elif _is_run(run) and run.low >= 1:
        words += [compiler.set_bit(run.node.charset), run.low, run.high, 0]
        k += 1
    else:
        return none
    for _ in range(2):
        tail = items[k] if k < len(items) else None
        if tail is not None and _is_run(tail, 0, of_set=False):
            node = tail.node
            words += [1, compiler.set_bit(node.charset), tail.high] if isinstance(node, _Set) \
                else [2, node.byte, tail.high]
            k += 1
        else:
            words += [0, 0, 0]
    rest = items[k:]
    if not rest:
        return words + [-1, 0]
    if not _free_tail(rest):
        return none
    found = _firsts(_Seq(rest))
    if found is None:
        return words + [item_pcs[k], 0]
    sets, bytes_ = found
    if bytes_:
        sets = sets + [CharSet.of([(0, tuple((b, b) for b in bytes_))], False)]
    guard = 0
    for charset in sets:
        guard |= 1 << compiler.set_bit(charset)
    return words + [item_pcs[k], _signed(guard)]


def looks_at_the_start(program: Program) -> bool:
    """Whether a match of `program`'s pattern can depend on where the text starts (``^``, ``\\A``): without that
    (and with no lookbehind, which the family leaves out), a match at position q reads only the text from q
    on, so every text that holds the same bytes from q on is cut the same from a piece start at q."""
    def anchored(node: _Node) -> bool:
        if isinstance(node, _Anchor):
            return node.op in (OP_START_TEXT, OP_START_LINE)
        if isinstance(node, _Seq):
            return any(anchored(item) for item in node.items)
        if isinstance(node, _Alt):
            return any(anchored(branch) for branch in node.branches)
        if isinstance(node, _Repeat):
            return anchored(node.node)
        if isinstance(node, (_Look, _Atomic)):
            return anchored(node.alt)
        return False
    return program.tree is not None and anchored(program.tree)


def compile_split_pattern(pattern: str, dialect: Dialect = "tiktoken",
                          case_extras: dict[str, tuple[int, ...]] | None = None) -> Program:
    """The program of `pattern`, or `UnsupportedPattern` naming what is outside the family.

    `case_extras`: per ASCII letter, the other code points the oracle's ``(?i:letter)`` matches (from
    _unicode_props.h: `_pretokenize.case_extras`)."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if dialect not in ("tiktoken", "hf"):
        raise ValueError(f'dialect must be "tiktoken" or "hf", got {dialect!r}')
    tree = _Parser(pattern, dialect, case_extras or {}).parse()
    for branch in tree.branches:
        if _nullable(branch):
            raise UnsupportedPattern(f"a branch that can match the empty string in {pattern!r}")
    compiler = _Compiler()
    branch_starts: list[int] = []
    item_pcs: list[list[int]] = []      # per branch, where each item's instructions start
    for branch in tree.branches:
        branch_starts.append(len(compiler.code))
        item_pcs.append([])
        for index, item in enumerate(branch.items):
            item_pcs[-1].append(len(compiler.code))
            compiler.node(item, branch.items[index + 1:], True)
        compiler.emit(OP_MATCH)
    first_sets: list[tuple[int, ...]] = []
    first_bytes: list[tuple[int, ...]] = []
    coverage = [_coverage(branch, compiler) for branch in tree.branches]
    for branch in tree.branches:
        found = _firsts(branch)     # None: any code point may start the branch (both tuples empty)
        first_sets.append(() if found is None else tuple(sorted({compiler.set_bit(s) for s in found[0]})))
        first_bytes.append(() if found is None else tuple(sorted(set(found[1]))))
    shapes = [word for branch, pcs in zip(tree.branches, item_pcs) for word in _shape(branch, compiler, pcs)]
    return Program(pattern, dialect, compiler.sets, first_sets, first_bytes,
                   [word for instruction in compiler.code for word in instruction], branch_starts, coverage, shapes,
                   tree)


# ==== block rules =================================================================================
#
# On ASCII text, r50k's, cl100k's and o200k's patterns find where pieces start 64 bytes at a time
# (_piece_starts.h): the classes become bit masks and the pattern's rules bitwise operations on them. Those
# rules hold for any pattern that *behaves the same on ASCII text without apostrophes*, which is the case of
# most patterns in use (Llama 3 is cl100k's in another spelling; Qwen's cuts digits one by one; Tekken is
# o200k's without contractions), whatever their classes do beyond ASCII: the block scan trusts only starts
# below the first apostrophe or non-ASCII byte (and none inside a whitespace run that reaches it), and the
# compiled program cuts the rest.
#
# `block_rules` decides it by comparing the pattern's *ASCII form* with those of reference patterns written
# with ASCII classes: the syntax tree with each class reduced to its ASCII members other than the apostrophe,
# and with what cannot matter before such a byte taken out:
# - a top-level branch that only such a byte can start (contractions: `'s|'t|...`) never matches where a
#   piece that the block scan trusts starts;
# - an optional item that only such a byte can start, at the end of a branch (o200k's `(?i:'s|...)?` after a
#   word), can only extend a piece that ends before that byte, whose end the block scan does not trust.
# Anything else that needs such a byte (an item in the middle of a branch, say) could join text on both
# sides of a start the block scan trusts, so the pattern gets no block rules. Runs that never give back a
# code point that could be used (greedy runs followed by what always matches, or by an item that cannot start
# with one of their code points) are written as possessive, as the reference patterns spell them either way.

BLOCK_RULES = ("none", "r50k", "cl100k", "cl100k_1", "cl100k_any", "o200k", "o200k_1", "o200k_any")
_APOSTROPHE = 0x27
_BLOCK_CHARS = ((1 << 128) - 1) & ~(1 << _APOSTROPHE)


def _ascii_by_property(ascii_props: bytes) -> dict[int, int]:
    """Property byte -> the ASCII code points (bit cp) that have it."""
    by_property: dict[int, int] = {}
    for cp, value in enumerate(ascii_props):
        by_property[value] = by_property.get(value, 0) | 1 << cp
    return by_property


def _ascii_mask(charset: CharSet, by_property: dict[int, int]) -> int:
    """The ASCII members of `charset` (bit cp), other than the apostrophe, given the ASCII code points of
    each property byte (`_ascii_by_property`)."""
    mask = 0
    for value, members in by_property.items():
        if (charset.values >> value) & 1:
            mask |= members
    for low, high in charset.ranges:
        if low < 128:
            mask |= (1 << (min(high, 127) + 1)) - (1 << low)
    if charset.negated:
        mask = ~mask & ((1 << 128) - 1)
    return mask & _BLOCK_CHARS


class _NoForm(Exception):
    """The pattern needs an apostrophe or a non-ASCII code point where the block scan cannot allow it."""


def _first_mask_ascii(items: list[_Node], mask_of) -> int | None:
    """The ASCII code points (not the apostrophe) that can start a non-empty match of `items`; None: any."""
    found = _firsts(_Seq(items))
    if found is None:
        return None
    sets, bytes_ = found
    mask = 0
    for charset in sets:
        mask |= mask_of(charset)
    for byte in bytes_:
        mask |= (1 << byte) & _BLOCK_CHARS if byte < 0x80 else 0
    return mask


def _form(node: _Node, mask_of) -> tuple:
    """The ASCII form of `node` (see above); raises _NoForm."""
    if isinstance(node, (_Set, _Byte)):
        mask = mask_of(node.charset) if isinstance(node, _Set) else \
            ((1 << node.byte) & _BLOCK_CHARS if node.byte < 0x80 else 0)
        if not mask:
            raise _NoForm
        return ("set", mask)
    if isinstance(node, _Seq):
        return _seq_form(node.items, mask_of, top=False)
    if isinstance(node, _Alt):
        if len(node.branches) == 1:
            return _form(node.branches[0], mask_of)
        return ("alt",) + tuple(_form(branch, mask_of) for branch in node.branches)
    if isinstance(node, _Repeat):
        return ("repeat", _form(node.node, mask_of), node.low, node.high, node.mode)
    if isinstance(node, _Look):
        return ("look", _form(node.alt, mask_of), node.negative)
    if isinstance(node, _Atomic):
        return ("atomic", _form(node.alt, mask_of))
    return ("anchor", node.op)


def _seq_form(items: list[_Node], mask_of, top: bool) -> tuple:
    items = list(items)
    if top:
        while items and isinstance(items[-1], _Repeat) and items[-1].low == 0 \
                and _first_mask_ascii([items[-1].node], mask_of) == 0:
            items.pop()     # an optional item that only a byte the block scan stops at can start
    forms: list[tuple] = []
    for index, item in enumerate(items):
        form = _form(item, mask_of)
        if top and form[0] == "repeat" and form[4] == GREEDY and form[1][0] == "set":
            rest = items[index + 1:]
            first = None if _nullable(_Seq(rest)) else _first_mask_ascii(rest, mask_of)
            if _free_tail(rest) or (first is not None and not first & form[1][1]):
                form = form[:4] + (POSSESSIVE,)     # it never gives back a code point anything could use
        if form[0] == "seq":
            forms.extend(form[1:])
        else:
            forms.append(form)
    return forms[0] if len(forms) == 1 else ("seq",) + tuple(forms)


def _pattern_form(tree: _Alt, mask_of) -> tuple | None:
    branches = []
    try:
        for branch in tree.branches:
            if _first_mask_ascii(branch.items, mask_of) == 0:
                continue    # only a byte the block scan stops at can start it
            branches.append(_seq_form(branch.items, mask_of, top=True))
    except _NoForm:
        return None
    return tuple(branches)


# The reference patterns of each block rule, written with ASCII classes (W: the whitespace of \s; O: what is
# neither whitespace, letter nor digit). Each rule has two spellings of its whitespace branches, which cut
# alike wherever the block scan trusts a start (they differ only on a whitespace run at the end of the text).
_W, _NOT_W, _O = r"[\t-\r ]", r"[^\t-\r ]", r"[^\t-\r A-Za-z0-9]"
_TAILS = (rf"|{_W}++$|{_W}*[\r\n]|{_W}+(?!{_NOT_W})|{_W}", rf"|{_W}*[\r\n]+|{_W}+(?!{_NOT_W})|{_W}+")
_DIGITS = {"": "[0-9]{1,3}", "_1": "[0-9]", "_any": "[0-9]+"}
_R50K_TAILS = (rf"|{_W}++$|{_W}+(?!{_NOT_W})|{_W}", rf"|{_W}+(?!{_NOT_W})|{_W}+")


def _reference_patterns() -> dict[str, list[str]]:
    references = {"r50k": [rf" ?[A-Za-z]+| ?[0-9]+| ?{_O}+" + tail for tail in _R50K_TAILS]}
    for suffix, digits in _DIGITS.items():
        references["cl100k" + suffix] = [rf"[^\r\nA-Za-z0-9]?[A-Za-z]+|{digits}| ?{_O}+[\r\n]*" + tail
                                         for tail in _TAILS]
        references["o200k" + suffix] = [rf"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+|[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*|{digits}"
                                        rf"| ?{_O}+[\r\n/]*" + tail for tail in _TAILS]
    return references


_reference_forms: dict[tuple, str] = {}


def block_rules(program: Program, ascii_props: bytes) -> str:
    """The block rules (one of BLOCK_RULES) that cut `program`'s pattern as it cuts ASCII text without
    apostrophes, or "none"; `ascii_props`: the property byte of each ASCII code point for its oracle."""
    if not _reference_forms:
        no_props = _ascii_by_property(bytes(128))     # the references' classes are ranges only
        for rules, patterns in _reference_patterns().items():
            for pattern in patterns:
                tree = _Parser(pattern, "tiktoken", {}).parse()
                form = _pattern_form(tree, lambda charset: _ascii_mask(charset, no_props))
                assert form is not None and _reference_forms.get(form, rules) == rules, pattern
                _reference_forms[form] = rules
    if program.tree is None:
        return "none"
    masks: dict[CharSet, int] = {}
    by_property = _ascii_by_property(ascii_props)

    def mask_of(charset: CharSet) -> int:
        if charset not in masks:
            masks[charset] = _ascii_mask(charset, by_property)
        return masks[charset]
    form = _pattern_form(program.tree, mask_of)
    return _reference_forms.get(form, "none") if form is not None else "none"
