"""Compiled patterns that cut ASCII text as r50k, cl100k or o200k do get their 64-byte block scan, and cut
exactly what their program cuts.

The block scan (_piece_starts.h) finds where pieces start in 64 bytes of ASCII at once. It was written for
tiktoken's three patterns, but its rules hold for any pattern that behaves as one of them on ASCII text
without apostrophes (`pattern_compiler.block_rules`: Llama 3's, Qwen's, Tekken's...): it trusts only starts
before the first apostrophe or non-ASCII byte, and the program cuts from there. So the property checked
here, on the patterns in use and on generated variants of them, is that a scanner with block rules cuts
every text as the same pattern's program alone (`Scanner.compiled(..., blocks=False)`); the program is
checked against the oracles in tests/exactness/test_pattern_compiler.py, which runs the scanners with their blocks.
The texts are long stretches of ASCII (a block needs 64 bytes) with code points of every kind the block
scan stops at, at every alignment.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bytebpe import patterns
from bytebpe._pretokenize import Scanner
from bytebpe.pattern_compiler import UnsupportedPattern

from ..exactness.test_pattern_compiler import GPT2_ORIGINAL, LLAMA3, QWEN2, QWEN3_5, TEKKEN

CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
CL100K_WITH_PL = patterns.CL100K_PATTERN.replace(r"\p{L}", r"\pL")     # no hand-written scanner knows it

# Each pattern in use, per dialect, and the block rules it gets ("none": its program alone).
EXPECTED_RULES = {
    ("gpt2-original", "tiktoken"): (GPT2_ORIGINAL, "r50k"),
    ("gpt2-original", "hf"): (GPT2_ORIGINAL, "r50k"),
    ("r50k", "tiktoken"): (patterns.R50K_PATTERN, "r50k"),
    ("r50k", "hf"): (patterns.R50K_PATTERN, "none"),         # Oniguruma's `$` is the end of a line
    ("cl100k", "tiktoken"): (patterns.CL100K_PATTERN, "cl100k"),
    ("cl100k-spelled-pL", "tiktoken"): (CL100K_WITH_PL, "cl100k"),
    ("o200k", "tiktoken"): (patterns.O200K_PATTERN, "o200k"),
    ("o200k", "hf"): (patterns.O200K_PATTERN, "o200k"),
    ("llama3", "tiktoken"): (LLAMA3, "cl100k"),
    ("llama3", "hf"): (LLAMA3, "cl100k"),
    ("qwen2", "tiktoken"): (QWEN2, "cl100k_1"),
    ("qwen2", "hf"): (QWEN2, "cl100k_1"),
    ("qwen3.5", "tiktoken"): (QWEN3_5, "cl100k_1"),
    ("qwen3.5", "hf"): (QWEN3_5, "cl100k_1"),
    ("tekken", "tiktoken"): (TEKKEN, "o200k_1"),
    ("tekken", "hf"): (TEKKEN, "o200k_1"),
}

# Code points the block scan stops at, of every kind the patterns tell apart: letters of each case class,
# marks, digits and other numbers, whitespace beyond ASCII (which `\s+(?!\S)` looks at), punctuation and
# symbols, the letters `(?i:s)` and `(?i:k)` also match, an emoji, and the apostrophe.
HARD = ["é", "É", "ǅ", "ʰ", "中", "\u0301", "٣", "²", "\u00a0", "\u2028", "\u0085", "\u3000", "ſ", "\u212a",
        "«", "€", "😀", "'"]
# ASCII stretches holding every class and the transitions the rules deal with: cased words, digit runs of
# every length, whitespace runs with and without line breaks before words and punctuation, punctuation runs
# followed by line breaks and slashes.
BASES = [
    "The quick Brown fox's 12345 jumps,\r\n  over 7 lazy DOGs...\n\n   and\tthen /path/to\n/x 2024-12-04 ",
    "def f(x):\n    return x[1:] + 'abc'  # comment\n\n\n    if a == b: pass\r\n\t\tEND 000 1 22 333 4444",
    "aB Cd eFG hij KLMno pQ  rS\x0b\x0ct\n \n \t x\n\n  y \r\r z ?!\n/\n/ ,.\n ;;  \n9 99 999 9999 99999",
]


def texts_with_hard_code_points():
    for base in BASES:
        yield base * 2
        for hard in HARD:
            for at in range(0, 72):
                yield (base * 2)[:at] + hard + (base * 2)[at:]
                yield (base * 2)[:at] + hard * 3 + " " + (base * 2)[at:]


def cuts_alike(pattern: str, dialect: str, texts) -> list[str]:
    with_blocks = Scanner.compiled(pattern, dialect)
    program_alone = Scanner.compiled(pattern, dialect, blocks=False)
    assert program_alone.block_rules == "none"
    return [text for text in texts if with_blocks.split(text) != program_alone.split(text)]


@pytest.mark.parametrize("name, dialect", EXPECTED_RULES)
def test_patterns_in_use_get_the_block_rules_they_share(name, dialect):
    pattern, rules = EXPECTED_RULES[name, dialect]
    assert Scanner.compiled(pattern, dialect).block_rules == rules


@pytest.mark.parametrize("name, dialect", [key for key, (_, rules) in EXPECTED_RULES.items() if rules != "none"])
def test_block_scan_cuts_as_the_program_around_every_kind_of_hard_code_point(name, dialect):
    pattern, _ = EXPECTED_RULES[name, dialect]
    differing = cuts_alike(pattern, dialect, texts_with_hard_code_points())
    assert not differing, f"{len(differing)} texts cut differently, first {differing[0]!r}"


@pytest.mark.parametrize("name, dialect", [key for key, (_, rules) in EXPECTED_RULES.items() if rules != "none"])
def test_block_scan_cuts_as_the_program_on_the_corpora(name, dialect, corpus_dir):
    pattern, _ = EXPECTED_RULES[name, dialect]
    texts = [(corpus_dir / file).read_text(encoding="utf-8")[:300_000]
             for file in ("english_prose.txt", "code.txt", "multilingual.txt", "multi/emoji.txt")]
    assert not cuts_alike(pattern, dialect, texts)


# Patterns one of whose branches could join text on both sides of a start the block scan trusts, through a
# code point it stops at: each must get no block rules, though the rest of it is Qwen's pattern.
JOINING = {
    "a run through a space then a non-ASCII letter": r"[a-z ]+é|" + QWEN2,
    "an apostrophe inside a word": r"\p{L}+'\p{L}+|" + QWEN2,
    "an optional ASCII letter then a non-ASCII one after a word":
        r"[^\r\n\p{L}\p{N}]?\p{L}+(?:xé)?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
JOINING_TEXT = "ab cd" + "é" + " x" * 40 + "\n" + "ab cdxé" + " y" * 40


@pytest.mark.parametrize("dialect", ["tiktoken", "hf"])
@pytest.mark.parametrize("name", JOINING)
def test_pattern_that_joins_text_across_a_hard_code_point_gets_no_block_rules(name, dialect):
    scanner = Scanner.compiled(JOINING[name], dialect)
    assert scanner.block_rules == "none"
    # (what the rules would have cut wrongly: the branch takes a piece over a start they trust)
    assert any(" " in piece[1:] or "x" in piece[1:] for piece in scanner.split(JOINING_TEXT))


@pytest.mark.parametrize("pattern", [
    QWEN2.replace(r"|\p{N}|", r"|\p{N}{1,2}|"),                        # digits cut every second digit
    QWEN2.replace(r"[^\r\n\p{L}\p{N}]?", r"[^\n\p{L}\p{N}]?"),          # \r may start a word
    QWEN2.replace(r"[\r\n]*", ""),                                     # punctuation keeps no line breaks
    QWEN2.replace(r"\s*[\r\n]+|", ""),                                 # whitespace as r50k cuts it
    QWEN2.replace(r"\p{L}+", r"[\p{L}\p{M}]+"),                        # (same on ASCII: rules kept)
])
def test_a_pattern_that_cuts_ascii_otherwise_gets_other_rules_or_none(pattern):
    rules = Scanner.compiled(pattern, "tiktoken").block_rules
    assert rules == ("cl100k_1" if r"\p{M}" in pattern else "none")


# ---- generated variants of the patterns in use ----------------------------------------------------------
#
# Each part of a family pattern spelled one of several ways, most of which cut ASCII text alike and some of
# which do not (other digit groups, other prefixes, other line-break handling, branches that need a
# non-ASCII code point or an apostrophe). Whatever rules the pattern gets, its block scan must cut as its
# program.

O200K_WORDS = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+{c}"
               r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*{c}")
# Per family, spellings of each part that cut ASCII text alike: words, digits, punctuation, whitespace.
SPELLINGS = {
    "r50k": ([r" ?\p{L}+", r" ?\p{L}++", r" ?[\p{L}\p{M}]+"], [r" ?\p{N}+", r" ?\p{N}++", r" ?\d+"],
             [r" ?[^\s\p{L}\p{N}]+", r" ?[^\s\p{L}\p{N}]++"], [r"\s+(?!\S)|\s+", r"\s++$|\s+(?!\S)|\s"]),
    "cl100k": ([r"[^\r\n\p{L}\p{N}]?\p{L}+", r"[^\r\n\p{L}\p{N}]?+\p{L}++", r"[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+",
                r"[^\n\r\p{N}\p{L}]?[\p{L}]+"],
               [r"\p{N}", r"\p{N}{1,3}", r"\p{N}{1,3}+", r"\p{N}+", r"\d{1,3}", r"[0-9]"],
               [r" ?[^\s\p{L}\p{N}]+[\r\n]*", r" ?[^\s\p{L}\p{N}]++[\r\n]*+", r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"],
               [r"\s*[\r\n]+|\s+(?!\S)|\s+", r"\s++$|\s*[\r\n]|\s+(?!\S)|\s"]),
    "o200k": ([O200K_WORDS.replace("{c}", ""), O200K_WORDS.replace("{c}", CONTRACTIONS + "?"),
               r"[^\r\n\p{L}\p{N}]?[A-Z]*[a-z]+|[^\r\n\p{L}\p{N}]?[A-Z]+[a-z]*"],
              [r"\p{N}", r"\p{N}{1,3}", r"\p{N}+"],
              [r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r" ?[^\s\p{L}\p{N}]++[\r\n/]*+"],
              [r"\s*[\r\n]+|\s+(?!\S)|\s+", r"\s++$|\s*[\r\n]|\s+(?!\S)|\s"]),
}
# Spellings that cut ASCII text otherwise, or need a code point the block scan stops at mid-branch.
MUTATIONS = ([r"[^\n\p{L}\p{N}]?\p{L}+", r"[^\s\p{L}\p{N}]?\p{L}+", r"[^\r\n\p{L}\p{N}]?[A-Za-z\u00c0-\u024f]+",
              r"\p{L}+'\p{L}+|\p{L}+", r"[^\r\n\p{L}\p{N}]?\p{L}+(?:x\p{M})?"],
             [r"\p{N}{1,2}", r"\p{N}{2,3}|\p{N}", r" ?\p{N}"],
             [r" ?[^\s\p{L}\p{N}]+", r"[^\s\p{L}\p{N}]+[\r\n]*", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r" ?[^\s\p{L}]+"],
             [r"\s*[\r\n]+|\s+", r"\s*[\r\n]|\s+(?!\S)|\s", r"\s+(?!\S)|\s+", r"\s+|\s+(?!\S)"])
EXTRAS = ["", CONTRACTIONS, r"'s|'t|'re|'ve|'m|'ll|'d", r"'(?:[sdmt]|ll|ve|re)"]
EXTRA_MUTATIONS = [r"[a-z ]+é", r"\p{L}+'\p{L}+", r"é[a-z]+", r"'[a-z ]+", r"x\p{L}*(?:'s)?"]
HARD_WEIGHTED = st.sampled_from(list("aZbQy 0123456789\n\r\t   '/.,-_(){}") * 3 + HARD + ["\x0b", "\x0c"])


@st.composite
def family_variants(draw):
    """A pattern of one family, each part spelled one of the ways that cut ASCII alike (mostly) or not."""
    family = draw(st.sampled_from(sorted(SPELLINGS)))
    parts = [draw(st.sampled_from(EXTRAS if draw(st.integers(0, 4)) else EXTRA_MUTATIONS))]
    for spellings, mutations in zip(SPELLINGS[family], MUTATIONS):
        parts.append(draw(st.sampled_from(spellings if draw(st.integers(0, 5)) else mutations)))
    if draw(st.integers(0, 3)) == 0:
        parts[0], parts[1] = parts[1], parts[0]
    # (A catch-all makes any pattern cover every position, and takes the block rules away.)
    return "|".join(part for part in parts if part) + draw(st.sampled_from(["", "", "", "|[\\s\\S]"]))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(pattern=family_variants(), dialect=st.sampled_from(["tiktoken", "hf"]),
       texts=st.lists(st.text(HARD_WEIGHTED, min_size=64, max_size=400), min_size=1, max_size=6))
def test_generated_variant_cuts_as_its_program(pattern, dialect, texts):
    try:
        scanner = Scanner.compiled(pattern, dialect)
    except UnsupportedPattern:
        event("refused")
        return
    event(f"rules: {scanner.block_rules}")
    texts = texts + [text * 3 for text in texts] + list(texts_with_hard_code_points())[::97]
    differing = cuts_alike(pattern, dialect, texts)
    assert not differing, f"{pattern!r} ({scanner.block_rules}) cuts {differing[0]!r} differently"


def test_the_tekken_files_pattern_gets_block_rules():
    mistral_common = pytest.importorskip("mistral_common")
    for path in sorted((Path(mistral_common.__file__).parent / "data").glob("tekken_*.json")):
        pattern = json.loads(path.read_text())["config"]["pattern"]
        assert Scanner.compiled(pattern, "tiktoken").block_rules == "o200k_1", path.name
