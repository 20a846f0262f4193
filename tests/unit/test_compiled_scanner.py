"""The compiled scanner runs every construct of the family as a backtracking engine does.

Each pattern here leans on one part of the matcher (_pattern_scan.h): lazy, possessive and bounded runs, runs that
give back to where the rest can start, optional and alternative groups, lookaheads, atomic groups, anchors.
The reference is the `regex` package on ASCII text, where its classes and tiktoken's agree (tiktoken itself is
the oracle in tests/exactness/test_pattern_compiler.py); the ends of text and of each scan batch are where a reader
could stray, so texts are short, long and cut anywhere. This module runs under ASan and the debug allocator
(.ci/memory-tests.txt).
"""
from __future__ import annotations

import pickle

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe._pretokenize import PatternKind, Scanner
from bytebpe.pattern_compiler import UnsupportedPattern

# Every pattern ends in a branch that matches anywhere, as the compiler requires.
PATTERNS = {
    "lazy run": r"\p{L}+?[a-c]|\p{L}{2,}?|[\s\S]",
    "possessive run": r"\p{L}++[a-z]|\p{L}*+\d|[\s\S]",
    "bounded runs": r"\p{N}{2,3}|\p{L}{1,2}x|[\s\S]",
    "greedy give-back": r"[\p{Lu}\p{Ll}]*[\p{Ll}]+'?|\s*[\r\n]+|\s+(?!\S)|\s+|[\s\S]",
    "optional groups": r"(?:ab)?c|(?:ab)??b|(?:x|xy)?+y|[\s\S]",
    "alternatives in groups": r"'(?:s|t|re|ve|m|ll|d)|(?i:'s|'t)|a(?:b|bc|bcd)d|[\s\S]",
    "lookaheads": r"\s+(?!\S)|\p{L}+(?=\d)|\p{L}+(?!x)|\s+|[\s\S]",
    "atomic group": r"(?>a|ab)c|(?>a+)|[\s\S]",
    "anchors": r"\s+$|^\p{L}+|\p{L}+\z|[\s\S]",
    "dot": r"x.y|.|\n",
}

ALPHABET = "aAbcdxyzXY 12'\r\n\t.-_"


def regex_pieces(pattern: str, text: str) -> list[str]:
    return [match.group() for match in regex.finditer(pattern, text)]


@pytest.mark.parametrize("name", PATTERNS)
def test_each_construct_cuts_as_a_backtracking_engine_does(name):
    pattern = PATTERNS[name]
    scanner = Scanner.compiled(pattern)
    for text in ["", "a", "ab", "abc", "abcd", "xy", "xxy", "aab1", "Hello world's  x\r\n\n  y", "a" * 500 + "b",
                 " " * 300 + "x", "12345 678 9", "x\ny", "ab" * 300, "'s'S'll 'RE"]:
        assert scanner.split(text) == regex_pieces(pattern, text), text


@pytest.mark.parametrize("name", PATTERNS)
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=80))
def test_generated_ascii_text_is_cut_as_regex_cuts_it(name, text):
    assert Scanner.compiled(PATTERNS[name]).split(text) == regex_pieces(PATTERNS[name], text)


def test_pieces_resume_across_scan_batches_and_count_equals_split():
    # More pieces than one scan batch holds, so the scan restarts in the middle of the text many times.
    pattern = PATTERNS["greedy give-back"]
    text = "Ab cd\n\n  ef " * 3000
    scanner = Scanner.compiled(pattern)
    assert scanner.split(text) == regex_pieces(pattern, text)
    assert scanner.count(text) == len(regex_pieces(pattern, text))


def test_the_compiled_scanner_is_cached_pickles_and_names_its_pattern():
    scanner = Scanner.compiled(PATTERNS["dot"])
    assert Scanner.compiled(PATTERNS["dot"]) is scanner
    assert scanner.kind == PatternKind.COMPILED and scanner.pattern == PATTERNS["dot"]
    copy = pickle.loads(pickle.dumps(scanner))
    assert copy.split("x-y z") == scanner.split("x-y z")
    assert "Scanner.compiled(" in repr(copy)


@pytest.mark.parametrize("pattern, why", [
    (r"(?<=a)b|[\s\S]", "lookbehind"),
    (r"(?:ab)+|[\s\S]", "repeated"),
    (r"\p{Greek}|[\s\S]", "Greek"),
    (r"[a[b]]|[\s\S]", "nested"),
    (r"[\w&&\d]|[\s\S]", "&&"),
    (r"(a)\1|[\s\S]", "escape"),
    (r"a*|[\s\S]", "empty string"),
    (r"\p{L}+|\s+", "may match nothing"),
    (r"(?i:é)|[\s\S]", "case-insensitive"),
    (r"\bx|[\s\S]", "escape"),
])
def test_patterns_outside_the_family_are_refused_with_the_reason(pattern, why):
    with pytest.raises(UnsupportedPattern, match=why):
        Scanner.compiled(pattern)


def test_an_encoding_uses_it_and_gives_the_ids_of_the_regex_engine():
    ranks = bytebpe.get_encoding("gpt2")._mergeable_ranks
    pattern = PATTERNS["greedy give-back"]
    compiled = bytebpe.Encoding("x", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    forced = compiled.with_pretokenizer("regex")
    assert compiled.pretokenizer == "compiled" and forced.pretokenizer == "regex"
    texts = ["Hello World's  \n\n x", "aBcD eF\r\n", "  "]
    assert compiled.encode_ordinary_batch(texts) == forced.encode_ordinary_batch(texts)
    assert compiled.encode_ordinary(texts[0]) == forced.encode_ordinary(texts[0])
