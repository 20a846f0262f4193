"""The compiled scanners cut text exactly where ``regex.findall`` does with the pattern they stand for.

`regex` is the reference: the scanners' Unicode tables are generated from it, and every comparison here is
scanner output == regex output on the same string — whole corpora, every code point in several contexts,
and generated strings biased toward the classes where the patterns are subtle.
"""
from __future__ import annotations

import pickle

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _pretokenize, patterns
from bytebpe._pretokenize import Scanner

PATTERNS = {
    "r50k": patterns.R50K_PATTERN,
    "cl100k": patterns.CL100K_PATTERN,
    "o200k": patterns.O200K_PATTERN,
}
N_CODE_POINTS = 0x110000
# Surrogates cannot be encoded to UTF-8; `Encoding` repairs them before the scanner sees text.
SCANNABLE = [chr(cp) for cp in range(N_CODE_POINTS) if not 0xD800 <= cp < 0xE000]


def assert_same_pieces(pattern: str, text: str) -> None:
    expected = regex.findall(pattern, text)
    actual = Scanner.for_pattern(pattern).split(text)
    if actual != expected:
        first = next((i for i, (a, b) in enumerate(zip(actual, expected)) if a != b), min(len(actual), len(expected)))
        raise AssertionError(
            f"scanner and regex disagree at piece {first}: "
            f"scanner {actual[max(0, first - 2):first + 3]!a}, regex {expected[max(0, first - 2):first + 3]!a}")


# ---- the tables ------------------------------------------------------------------------------------------

def regex_class_bits() -> bytearray:
    every_code_point = "".join(map(chr, range(N_CODE_POINTS)))
    bits = bytearray(N_CODE_POINTS)
    fragments = {
        "letter": r"\p{L}",
        "number": r"\p{N}",
        "space": r"\s",
        "upper": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
        "lower": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    }
    for name, fragment in fragments.items():
        bit = _pretokenize.CLASS_BITS[name]
        for run in regex.finditer(f"(?:{fragment})+", every_code_point):
            bits[run.start():run.end()] = bytes(b | bit for b in bits[run.start():run.end()])
    return bits


def test_class_tables_agree_with_regex_on_every_code_point():
    generated = _pretokenize.code_point_classes()
    expected = regex_class_bits()
    wrong = [cp for cp in range(N_CODE_POINTS) if generated[cp] != expected[cp]]
    assert not wrong, (
        f"{len(wrong)} code points classed differently from regex {regex.__version__} (tables made from "
        f"regex {_pretokenize.REGEX_VERSION}), first U+{wrong[0]:04X}; run tools/gen_unicode_tables.py")


def test_contraction_letters_agree_with_case_insensitive_regex_on_every_code_point():
    for letter in "dlmrstve":
        pattern = regex.compile(f"(?i:{letter})")
        matching = {cp for cp in range(N_CODE_POINTS) if pattern.fullmatch(chr(cp))}
        claimed = {cp for cp in range(N_CODE_POINTS) if _pretokenize.contraction_letter(cp) == letter}
        assert claimed == matching, letter
    assert _pretokenize.contraction_letter(0x17F) == "s"     # LATIN SMALL LETTER LONG S folds to s


def test_tables_are_not_unicodedata():
    # Python's own notion of space differs from \s: U+001C..U+001F are str.isspace() but not \s.
    classes = _pretokenize.code_point_classes()
    for cp in range(0x1C, 0x20):
        assert chr(cp).isspace() and not classes[cp] & _pretokenize.CLASS_BITS["space"]


# ---- scanner == regex --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PATTERNS)
def test_scanner_equals_regex_on_every_corpus_file(name, corpus_dir):
    files = sorted(p for p in corpus_dir.rglob("*") if p.is_file() and p.suffix in (".txt", ".jsonl"))
    assert files
    for path in files:
        assert_same_pieces(PATTERNS[name], path.read_text(encoding="utf-8")[:2_000_000])


# Each code point between letters, after a space, around digits and apostrophes, at case boundaries,
# before combining marks and around every kind of line break.
CONTEXTS = ["a{}b", " {}{}x", "'{}", "{}'s ", "A{}a", "\n{} \n", "1{}2", "{}\u0301a", " {}\r\n", "  {}'LL", "{}"]


@pytest.mark.slow
@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", PATTERNS)
def test_scanner_equals_regex_on_every_code_point_in_context(name, context):
    assert_same_pieces(PATTERNS[name], "".join(context.format(c, c) for c in SCANNABLE))


TRICKY = st.sampled_from(
    list(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000\x1c\x1f")      # every kind of space
    + list("'\u2019\u02bcsStTdDmMlLvVeErR\u017f")                                    # contractions
    + list("09\u0660\u0969\u4e00\u2155\u2460\U0001d7ce")                              # digits of every script
    + list("aZ\u00e9\u00c9\u01c5\u02b0\u05d0\u3042\u4e2d\u0301\u0308\u20dd\U0001f600\u200d\ufe0f")
    + list(".,-/!?_()[]{}<>@#$%^&*\\|~`\"")                                           # punctuation
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(TRICKY, st.characters(exclude_categories=("Cs",))), max_size=60).map("".join))
def test_scanner_equals_regex_on_generated_text(text):
    for pattern in PATTERNS.values():
        assert_same_pieces(pattern, text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TRICKY, st.integers(1, 300)), max_size=6))
def test_scanner_equals_regex_on_long_runs(runs):
    text = "".join(char * count for char, count in runs)
    for pattern in PATTERNS.values():
        assert_same_pieces(pattern, text)


@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("text", ["", " ", "\n", "x", "  ", " \n ", "'", "''s", "a'", "I'M", "HTTPServer's",
                                  "camelCaseWORDS", "\r\n\r\n  x", "1234567", "  \u3000x", "ab  \t\n"])
def test_scanner_equals_regex_on_edge_cases(name, text):
    assert_same_pieces(PATTERNS[name], text)


# ---- behaviour of the Scanner object ----------------------------------------------------------------------

def test_o200k_splits_at_case_changes_and_keeps_contractions():
    scanner = Scanner.for_pattern(patterns.O200K_PATTERN)
    assert scanner.split("camelCase HTTPServer") == ["camel", "Case", " HTTPServer"]
    assert scanner.split("YOU'RE right") == ["YOU'RE", " right"]


def test_unknown_patterns_have_no_scanner():
    assert Scanner.for_pattern(r"\w+|\s+") is None
    assert Scanner.for_pattern(patterns.CL100K_PATTERN + "|x") is None


def test_count_equals_the_number_of_pieces(corpus_dir):
    text = (corpus_dir / "english_prose.txt").read_text()[:200_000]
    for pattern in PATTERNS.values():
        scanner = Scanner.for_pattern(pattern)
        assert scanner.count(text) == len(scanner.split(text)) == len(regex.findall(pattern, text))


def test_scanner_pickles_and_names_its_pattern():
    scanner = Scanner.for_pattern(patterns.O200K_PATTERN)
    copy = pickle.loads(pickle.dumps(scanner))
    assert copy.kind == scanner.kind and repr(copy) == "Scanner(O200K)"


def test_bad_input_is_a_clear_error():
    scanner = Scanner.for_pattern(patterns.CL100K_PATTERN)
    with pytest.raises(TypeError):
        scanner.split(b"bytes")
    with pytest.raises(UnicodeEncodeError):
        scanner.split("lone \ud800 surrogate")
    with pytest.raises(ValueError):
        Scanner(7)
