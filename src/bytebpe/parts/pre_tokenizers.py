"""A tokenizer.json's pre-tokenizer: HF `tokenizers`' pre-tokenizers as one table of variants.

Each variant cuts one piece into pieces as HF's does (tokenizers/src/pre_tokenizers/), is read from its JSON
through `PRE_TOKENIZERS` and written back by `to_json`. `PreTokenizer` (the stage) holds the file's list of
them and gives the encoding what it runs: a compiled `Scanner` when the whole list is one split the
scanners cut (GPT-2's, the tiktoken patterns, DeepSeek's three, any Isolated split of the GPT family with
HF's classes), else a Python callable over the variants, in which a Split by a pattern of the family still
finds its matches with the compiled scanner, and any other pattern runs on `regex` with HF's classes.

Metaspace's "first" prepend scheme asks whether a piece starts where the text starts; the added-token
splitter knows that, not the pre-tokenizer, so the stage hands it over (`prepend_first`): the replacement
goes before the first segment, which is what Metaspace would do when it is the first step.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _pretokenize, patterns
from ..file_formats import TokenizerJsonError
from ..hf_json import _byte_to_char, oniguruma_pattern
from ..pattern_compiler import UnsupportedPattern
from . import chars
from .fields import field, kind_of
from .patterns import BEHAVIORS, compiled_pattern, matches, split_by

__all__ = ["GPT2_BYTE_LEVEL_PATTERN", "PRE_TOKENIZERS", "PreTokenizer", "PreTokenizerStep", "metaspace_options"]

Pieces = list[str]

# The regex of HF's ByteLevel pre-tokenizer with use_regex (byte_level.rs): GPT-2's original pattern.
GPT2_BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"

# Patterns as HF files write them (Oniguruma) -> the hand-written scanner's pattern that cuts the same pieces.
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


# Byte (as a Latin-1 character) -> GPT-2's byte character, and back.
_BYTES_TO_CHARS = {byte: char for byte, char in enumerate(_byte_to_char())}
_CHARS_TO_LATIN1 = {ord(char): byte for byte, char in enumerate(_byte_to_char())}


class PreTokenizerStep:
    """One variant: `split` one piece into pieces, as HF's does for one of its splits."""

    type_name = ""

    def split(self, piece: str) -> Pieces:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


def _predicate_split(piece: str, test: Callable[[str], bool], behavior: str) -> Pieces:
    """HF's split by a character predicate: each character that passes is a match of its own."""
    spans = [(i, i + 1) for i, char in enumerate(piece) if test(char)]
    return split_by(spans, piece, behavior, False) if spans else [piece]


def _behavior(spec: dict[str, Any], component: str, default: str) -> str:
    behavior = field(spec, "behavior", str, component, default)
    if behavior not in BEHAVIORS:
        raise TokenizerJsonError(f"{component}: behavior {behavior!r} is not one of HF's ({', '.join(BEHAVIORS)})")
    return behavior


class ByteLevel(PreTokenizerStep):
    """GPT-2's split (with `use_regex`) after a prefix space (with `add_prefix_space`, on each piece that
    does not start with one); the bytes-to-characters mapping is the model's (model.py)."""

    type_name = "ByteLevel"

    def __init__(self, spec: dict[str, Any]) -> None:
        component = "pre_tokenizer ByteLevel"
        self.add_prefix_space = field(spec, "add_prefix_space", bool, component, True)
        self.use_regex = field(spec, "use_regex", bool, component, True)
        self.trim_offsets = field(spec, "trim_offsets", bool, component, True)
        self._gpt2 = _PatternMatcher(GPT2_BYTE_LEVEL_PATTERN, component) if self.use_regex else None

    def split(self, piece: str) -> Pieces:
        if self.add_prefix_space and not piece.startswith(" "):
            piece = " " + piece
        return self._gpt2.pieces(piece) if self._gpt2 is not None else [piece]

    def to_json(self) -> dict[str, Any]:
        return {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}


class _PatternMatcher:
    """An Oniguruma pattern's matches: with the compiled scanner (HF's classes) when the compiler takes the
    pattern and its matches cover the piece, else with `regex` (HF's classes spelled out)."""

    def __init__(self, source: str, component: str, literal: bool = False) -> None:
        self.component = component
        self.scanner: _pretokenize.Scanner | None = None
        if not literal:
            try:
                self.scanner = _pretokenize.Scanner.compiled(source, "hf")
            except UnsupportedPattern:
                pass
        self.compiled = compiled_pattern({"String" if literal else "Regex": source}, component)

    def spans(self, piece: str) -> list[tuple[int, int]]:
        if self.scanner is not None:
            found = self.scanner(piece)
            if sum(map(len, found)) == len(piece):     # every character in a match: the matches are the pieces
                spans, at = [], 0
                for part in found:
                    spans.append((at, at + len(part)))
                    at += len(part)
                return spans
        return matches(self.compiled, piece, self.component)

    def pieces(self, piece: str) -> Pieces:
        if self.scanner is not None:
            found = self.scanner(piece)
            if sum(map(len, found)) == len(piece):
                return found
        return split_by(matches(self.compiled, piece, self.component), piece, "Isolated", False)


class Split(PreTokenizerStep):
    type_name = "Split"

    def __init__(self, spec: dict[str, Any]) -> None:
        component = "pre_tokenizer Split"
        self.pattern = spec.get("pattern")
        self.behavior = _behavior(spec, component, "")
        self.invert = field(spec, "invert", bool, component, False)
        compiled_pattern(self.pattern, component)       # (the pattern's errors first)
        (kind, source), = self.pattern.items()
        self._matcher = _PatternMatcher(source, component, literal=kind == "String")

    def split(self, piece: str) -> Pieces:
        if self.behavior == "Isolated" and not self.invert:
            return self._matcher.pieces(piece)
        return split_by(self._matcher.spans(piece), piece, self.behavior, self.invert)

    def to_json(self) -> dict[str, Any]:
        return {"type": "Split", "pattern": dict(self.pattern), "behavior": self.behavior, "invert": self.invert}


class Digits(PreTokenizerStep):
    type_name = "Digits"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.individual_digits = field(spec, "individual_digits", bool, "pre_tokenizer Digits", False)

    def split(self, piece: str) -> Pieces:
        return _predicate_split(piece, chars.is_numeric, "Isolated" if self.individual_digits else "Contiguous")

    def to_json(self) -> dict[str, Any]:
        return {"type": "Digits", "individual_digits": self.individual_digits}


class Punctuation(PreTokenizerStep):
    type_name = "Punctuation"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.behavior = _behavior(spec, "pre_tokenizer Punctuation", "Isolated")

    def split(self, piece: str) -> Pieces:
        return _predicate_split(piece, chars.is_punctuation, self.behavior)

    def to_json(self) -> dict[str, Any]:
        return {"type": "Punctuation", "behavior": self.behavior}


class Whitespace(PreTokenizerStep):
    """Runs of word characters and runs of other non-space characters (``\\w+|[^\\w\\s]+``); spaces dropped."""

    type_name = "Whitespace"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def split(self, piece: str) -> Pieces:
        # (its \w is Rust's regex crate's, not Oniguruma's: chars.py's table)
        return [part for part, _ in chars.whitespace_pretokenize(piece)]

    def to_json(self) -> dict[str, Any]:
        return {"type": "Whitespace"}


class WhitespaceSplit(PreTokenizerStep):
    type_name = "WhitespaceSplit"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def split(self, piece: str) -> Pieces:
        return _predicate_split(piece, chars.is_whitespace, "Removed")

    def to_json(self) -> dict[str, Any]:
        return {"type": "WhitespaceSplit"}


class CharDelimiterSplit(PreTokenizerStep):
    type_name = "CharDelimiterSplit"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.delimiter = field(spec, "delimiter", str, "pre_tokenizer CharDelimiterSplit")
        if len(self.delimiter) != 1:
            raise TokenizerJsonError(f"pre_tokenizer CharDelimiterSplit: 'delimiter' must be one character, got "
                                     f"{self.delimiter[:20]!r}")

    def split(self, piece: str) -> Pieces:
        delimiter = self.delimiter
        return _predicate_split(piece, lambda char: char == delimiter, "Removed")

    def to_json(self) -> dict[str, Any]:
        return {"type": "CharDelimiterSplit", "delimiter": self.delimiter}


def metaspace_options(spec: dict[str, Any], component: str) -> tuple[str, str, bool]:
    """(replacement, prepend_scheme, split) as HF reads them; the older `add_prefix_space` false means the
    scheme "never" (and must not contradict a scheme given beside it)."""
    replacement = field(spec, "replacement", str, component, "\u2581")
    if len(replacement) != 1:
        raise TokenizerJsonError(f"{component}: 'replacement' must be one character, got {replacement[:20]!r}")
    scheme = field(spec, "prepend_scheme", str, component, "always")
    if scheme not in ("first", "never", "always"):
        raise TokenizerJsonError(f"{component}: prepend_scheme {scheme!r} is not first, never or always")
    if spec.get("add_prefix_space") is False:
        if scheme != "never" and "prepend_scheme" in spec:
            raise TokenizerJsonError(f"{component}: add_prefix_space false does not match prepend_scheme {scheme!r}")
        scheme = "never"
    return replacement, scheme, field(spec, "split", bool, component, True)


class Metaspace(PreTokenizerStep):
    """Spaces become the replacement character (▁), which starts each piece with `split`; the replacement
    is put first on every piece ("always") or on the text's first ("first", by the splitter)."""

    type_name = "Metaspace"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.replacement, self.prepend_scheme, self.split_pieces = metaspace_options(spec, "pre_tokenizer Metaspace")

    def prepared(self, piece: str) -> str:
        """The piece with its spaces replaced, and the replacement put first with the "always" scheme."""
        piece = piece.replace(" ", self.replacement)
        if self.prepend_scheme == "always" and not piece.startswith(self.replacement):
            piece = self.replacement + piece
        return piece

    def split(self, piece: str) -> Pieces:
        piece = self.prepared(piece)
        if not self.split_pieces:
            return [piece]
        replacement = self.replacement
        return _predicate_split(piece, lambda char: char == replacement, "MergedWithNext")

    def to_json(self) -> dict[str, Any]:
        return {"type": "Metaspace", "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split_pieces}


class BertPreTokenizer(PreTokenizerStep):
    """Whitespace removed, then each punctuation character a piece of its own."""

    type_name = "BertPreTokenizer"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def split(self, piece: str) -> Pieces:
        return [part for word in _predicate_split(piece, chars.is_whitespace, "Removed")
                for part in _predicate_split(word, chars.is_punctuation, "Isolated")]

    def to_json(self) -> dict[str, Any]:
        return {"type": "BertPreTokenizer"}


class FixedLength(PreTokenizerStep):
    type_name = "FixedLength"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.length = field(spec, "length", int, "pre_tokenizer FixedLength", 5)
        if self.length < 0:
            raise TokenizerJsonError(f"pre_tokenizer FixedLength: 'length' must be >= 0, got {self.length}")

    def split(self, piece: str) -> Pieces:
        if self.length == 0:
            return [piece]
        return [piece[i:i + self.length] for i in range(0, len(piece), self.length)]

    def to_json(self) -> dict[str, Any]:
        return {"type": "FixedLength", "length": self.length}


PRE_TOKENIZERS: dict[str, type[PreTokenizerStep]] = {cls.type_name: cls for cls in (
    ByteLevel, Split, Digits, Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, Metaspace,
    BertPreTokenizer, FixedLength)}


def _steps(spec: Any) -> list[PreTokenizerStep]:
    """The pre-tokenizer as a flat list of steps (a Sequence's members in order)."""
    kind = kind_of(spec, "pre_tokenizer")
    if kind == "Sequence":
        return [step for inner in field(spec, "pretokenizers", list, "pre_tokenizer Sequence") for step in _steps(inner)]
    variant = PRE_TOKENIZERS.get(kind)
    if variant is None:
        raise TokenizerJsonError(f"pre_tokenizer {kind[:40]!r} is not supported (supported: "
                                 f"{', '.join(PRE_TOKENIZERS)}, Sequence)")
    return [variant(spec)]


class PreTokenizer:
    """The stage: the file's steps, and what the encoding runs for them (`pretokenize`: a compiled Scanner,
    or a callable text -> pieces; None for no pre-tokenizer, the whole text one piece).

    `byte_level`: whether a ByteLevel step maps the pieces' bytes to characters, so that the model's
    vocabulary is of byte characters. `prefix_space`: ByteLevel's prefix space when the scanner runs (the
    splitter puts it on each segment; a scanner cannot). `prepend_first`: Metaspace's replacement when its
    scheme is "first" (the splitter puts it before the text's first segment). `budget_split`: what truncate
    and chunks cut text with — the (pattern, dialect) of the one split that cuts it, or DeepSeek's scanner
    (it reads nothing before a piece's start either); None when the pre-tokenizer is Python steps.
    """

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.steps = [] if spec is None else _steps(spec)
        byte_levels = [i for i, step in enumerate(self.steps) if isinstance(step, ByteLevel)]
        self.byte_level = bool(byte_levels)
        self.prefix_space = False
        self.prepend_first: str | None = None
        self.budget_split: tuple[str, str] | _pretokenize.Scanner | None = None
        self.known_pattern: str | None = None
        self.pretokenize: Any = None
        for i, step in enumerate(self.steps):
            if isinstance(step, Metaspace) and step.prepend_scheme == "first":
                if i != 0:
                    raise TokenizerJsonError("pre_tokenizer: Metaspace with prepend_scheme 'first' after another "
                                             "pre-tokenizer is not supported")
                self.prepend_first = step.replacement
        if not self.steps:
            return
        self.known_pattern = self._known_pattern()
        if self.known_pattern is not None:
            self.pretokenize = _pretokenize.Scanner.for_pattern(self.known_pattern)
            self.prefix_space = self.steps[-1].add_prefix_space      # type: ignore[attr-defined]
            self.budget_split = (self.known_pattern, "tiktoken")
        elif self._is_deepseek():
            self.pretokenize = self.budget_split = _pretokenize.Scanner(_pretokenize.PatternKind.DEEPSEEK)
        elif (compiled := self._compiled_split()) is not None:
            self.pretokenize = compiled
            self.budget_split = (compiled.pattern, "hf")
        else:
            self.pretokenize = self._python_steps()

    def _python_steps(self) -> Callable[[str], list[Any]]:
        """The steps in Python. Steps after a ByteLevel see its byte characters, as in HF (a Digits after it
        finds ASCII digits only); their pieces go to the core as bytes, since they may cut a character."""
        splits = [step.split for step in self.steps]
        first_byte_level = next((i for i, step in enumerate(self.steps) if isinstance(step, ByteLevel)), None)
        if first_byte_level is None or first_byte_level == len(self.steps) - 1:
            def pretokenize(text: str) -> Pieces:
                pieces = [text] if text else []
                for split in splits:
                    pieces = [part for piece in pieces for part in split(piece) if part]
                return pieces
            return pretokenize
        before, after = splits[:first_byte_level + 1], splits[first_byte_level + 1:]
        to_chars, to_latin1 = _BYTES_TO_CHARS, _CHARS_TO_LATIN1

        def pretokenize_bytes(text: str) -> list[Any]:
            pieces = [text] if text else []
            for split in before:
                pieces = [part for piece in pieces for part in split(piece) if part]
            pieces = [piece.encode("utf-8", "surrogatepass").decode("latin-1").translate(to_chars)
                      for piece in pieces]
            for split in after:
                pieces = [part for piece in pieces for part in split(piece) if part]
            return [piece.translate(to_latin1).encode("latin-1") for piece in pieces]
        return pretokenize_bytes

    def to_json(self) -> Any:
        return self.spec

    def _single_split(self) -> str | None:
        """The Oniguruma pattern of steps that are one Split by a regex whose pieces are its matches, then
        ByteLevel without prefix space or regex (the shape the compiled scanners can cut), else None.

        Its pieces are its matches when the Split is Isolated, or inverted with any behaviour but Contiguous
        (which joins runs of matches): a scanner's pattern matches at every position (pattern_compiler.py
        refuses any other), so it leaves no text between its matches, and inverted, those gaps are the only
        delimiters the other behaviours act on (OLMo 2's file: cl100k's pattern, Removed, inverted)."""
        if len(self.steps) != 2:
            return None
        split, last = self.steps
        if not isinstance(last, ByteLevel) or last.use_regex or last.add_prefix_space:
            return None
        if not isinstance(split, Split) or not (split.behavior == "Isolated" or
                                                 (split.invert and split.behavior != "Contiguous")) \
                or "Regex" not in split.pattern:
            return None
        return split.pattern["Regex"]

    def _known_pattern(self) -> str | None:
        """The tiktoken pattern whose hand-written scanner cuts the pieces these steps cut, if any."""
        last = self.steps[-1]
        if len(self.steps) == 1 and isinstance(last, ByteLevel) and last.use_regex:
            return patterns.R50K_PATTERN
        split = self._single_split()
        return None if split is None else _KNOWN_PATTERNS.get(split)

    def _is_deepseek(self) -> bool:
        *splits, last = self.steps
        return (len(splits) == len(_DEEPSEEK_SPLITS)
                and all(isinstance(step, Split) and step.pattern == {"Regex": pattern} and step.behavior == "Isolated"
                        and not step.invert for step, pattern in zip(splits, _DEEPSEEK_SPLITS))
                and isinstance(last, ByteLevel) and not last.add_prefix_space and not last.use_regex)

    def _compiled_split(self) -> _pretokenize.Scanner | None:
        split = self._single_split()
        if split is None:
            return None
        try:
            return _pretokenize.Scanner.compiled(split, "hf")
        except UnsupportedPattern:
            return None
