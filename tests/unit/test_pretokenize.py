"""The compiled scanners cut text exactly where the pattern they stand for does.

``regex.findall`` is the reference for the patterns' structure (branch order, backtracking, possessive
runs): every comparison here is scanner output == regex output on the same string — a representative of
every class combination in many contexts, whole corpora, and generated strings biased toward the classes
where the patterns are subtle. The scanners' character classes, though, follow tiktoken, whose Unicode is
older than that of `regex` (test_unicode_tables.py checks the tables against tiktoken on every code point);
so the text compared here leaves out the code points that the tables and `regex` class differently, or the
comparison would measure Unicode versions instead of the scanners.
"""
from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _pretokenize, pattern_compiler, patterns
from bytebpe._pretokenize import PatternKind, Scanner

from .. import tiktoken_probe as probe

PATTERNS = {
    "r50k": patterns.R50K_PATTERN,
    "cl100k": patterns.CL100K_PATTERN,
    "o200k": patterns.O200K_PATTERN,
}


def assert_same_pieces(pattern: str, text: str) -> None:
    expected = regex.findall(pattern, text)
    actual = Scanner.for_pattern(pattern).split(text)
    if actual != expected:
        first = next((i for i, (a, b) in enumerate(zip(actual, expected)) if a != b), min(len(actual), len(expected)))
        raise AssertionError(
            f"scanner and regex disagree at piece {first}: "
            f"scanner {actual[max(0, first - 2):first + 3]!a}, regex {expected[max(0, first - 2):first + 3]!a}")


# ---- where regex can be the reference ----------------------------------------------------------------------

@functools.cache
def regex_disagreements() -> frozenset[int]:
    """The code points whose class bits or contraction letter differ between the tables (tiktoken's) and
    `regex` (17,560 with tiktoken 0.14.0 and regex 2026.11.19)."""
    # (Only tiktoken's classes: the two that DeepSeek's scanner alone uses are not asked of `regex` here.)
    tiktoken_bits = np.uint8(sum(_pretokenize.CLASS_BITS[name] for name in probe.CLASSES))
    table = np.frombuffer(_pretokenize.code_point_classes(), dtype=np.uint8) & tiktoken_bits
    regex_bits = np.zeros(probe.N_CODE_POINTS, dtype=np.uint8)
    for name, matches in probe.class_matches(probe.regex_matches).items():
        regex_bits |= np.frombuffer(matches, dtype=np.uint8) * np.uint8(_pretokenize.CLASS_BITS[name])
    differ = table != regex_bits
    letters = np.array([_pretokenize.contraction_letter(cp) or "-" for cp in range(probe.N_CODE_POINTS)])
    for letter, matches in probe.contraction_matches(probe.regex_matches).items():
        differ |= (letters == letter) != (np.frombuffer(matches, dtype=np.uint8) != 0)
    return frozenset(np.flatnonzero(differ).tolist())


def regex_agrees(char: str) -> bool:
    return ord(char) not in regex_disagreements()


def agreeing_text(text: str) -> str:
    """`text` without the code points on which regex and the tables disagree."""
    disagreeing = {ord(char) for char in set(text)} & regex_disagreements()
    return text.translate(dict.fromkeys(disagreeing)) if disagreeing else text


# Every code point the scanners read byte by byte (ASCII: the patterns name \r, \n, ' and / themselves),
# and beyond ASCII one code point per class combination (class bits, contraction letter) and UTF-8 length.
# (Every code point goes through the scanners in test_unicode_tables.py, compared with tiktoken's ids.)
REPRESENTATIVES = [chr(cp) for cp in range(128)] + list(
    "\xa7\x85\u02b0\u0660\xe9\xc9\u017f\u0301"    # § NEL ʰ ٠ é É ſ (folds to s) combining acute
    "\u4e2d\u20dd\u2019\u0966\u1e9e\u1e01\u3000"     # 中, enclosing circle, ’ ० ẞ ḁ ideographic space
    "\U00020000\U0001f600\U0001d7ce\U0001d167\U0001d400\U0001d41a"  # CJK ext. B, 😀, 𝟎, tremolo, 𝐀 𝐚
    "\x80\u200b\U000f0000"   # none of the classes, in 2, 3 and 4 bytes: a control, zero width space, private use
)


def combination(cp: int, classes: bytes) -> tuple[int, str, int]:
    return classes[cp], _pretokenize.contraction_letter(cp), len(chr(cp).encode())


def test_representatives_cover_every_class_combination():
    classes = _pretokenize.code_point_classes()
    covered = {combination(ord(char), classes) for char in REPRESENTATIVES}
    first_of: dict[tuple[int, str, int], int] = {}
    for cp in probe.PROBED:
        first_of.setdefault(combination(cp, classes), cp)
    missing = [f"U+{cp:04X}" for key, cp in first_of.items() if key not in covered]
    assert not missing, f"no representative of the class combinations of {missing}"


def test_regex_and_tiktoken_agree_on_the_representatives():
    code_points = [ord(char) for char in REPRESENTATIVES]
    fragments = list(probe.CLASSES.values()) + [f"(?i:{letter})" for letter in probe.CONTRACTION_LETTERS]
    for fragment in fragments:
        by_tiktoken = probe.tiktoken_matches_at(fragment, code_points).tolist()
        by_regex = [bool(regex.fullmatch(fragment, char)) for char in REPRESENTATIVES]
        assert by_regex == by_tiktoken, fragment
    assert all(map(regex_agrees, REPRESENTATIVES))


# ---- scanner == regex --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PATTERNS)
def test_scanner_equals_regex_on_every_corpus_file(name, corpus_dir):
    files = sorted(p for p in corpus_dir.rglob("*") if p.is_file() and p.suffix in (".txt", ".jsonl"))
    assert files
    for path in files:
        assert_same_pieces(PATTERNS[name], agreeing_text(path.read_text(encoding="utf-8")[:2_000_000]))


# Each code point between letters, after a space, around digits and apostrophes, at case boundaries,
# before combining marks and around every kind of line break.
CONTEXTS = ["a{}b", " {}{}x", "'{}", "{}'s ", "A{}a", "\n{} \n", "1{}2", "{}\u0301a", " {}\r\n", "  {}'LL", "{}"]


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", PATTERNS)
def test_scanner_equals_regex_on_every_representative_in_context(name, context):
    assert_same_pieces(PATTERNS[name], "".join(context.format(c, c) for c in REPRESENTATIVES))


# Every ordered pair of representatives: a case change, a caseless letter or mark between cases, a space
# or line break before anything, a contraction letter after an apostrophe...
PAIR_CONTEXTS = ["{}{}", " {}{}x", "A{}{}'re ", "'{}{}\n"]


@pytest.mark.parametrize("context", PAIR_CONTEXTS)
@pytest.mark.parametrize("name", PATTERNS)
def test_scanner_equals_regex_on_every_pair_of_representatives(name, context):
    assert_same_pieces(PATTERNS[name], "".join(context.format(a, b) for a in REPRESENTATIVES for b in REPRESENTATIVES))


TRICKY_CHARS = (
    list(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000\x1c\x1f")      # every kind of space
    + list("'\u2019\u02bcsStTdDmMlLvVeErR\u017f")                                    # contractions
    + list("09\u0660\u0969\u4e00\u2155\u2460\U0001d7ce")                              # digits of every script
    + list("aZ\u00e9\u00c9\u01c5\u02b0\u05d0\u3042\u4e2d\u0301\u0308\u20dd\U0001f600\u200d\ufe0f")
    + list(".,-/!?_()[]{}<>@#$%^&*\\|~`\"")                                           # punctuation
)
TRICKY = st.sampled_from(TRICKY_CHARS)
# Any code point but surrogates (which never reach the scanner) and those regex classes differently.
AGREEING = st.characters(exclude_categories=("Cs",)).filter(regex_agrees)


def test_the_tricky_characters_are_classed_alike_by_regex_and_the_tables():
    assert all(map(regex_agrees, TRICKY_CHARS))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(TRICKY, AGREEING), max_size=60).map("".join))
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
def test_runs_of_spaces_of_every_length_end_where_regex_ends_them(name):
    # Runs of spaces are skipped 16 bytes at a time: every length across two blocks, after and before each
    # kind of space, line break, letter, digit, punctuation, contraction and non-ASCII character.
    around = ["", "a", "1", ".", "'s", "\n", "\r\n", "\t", "\xa0", "\u3000", "\u00e9", "\U0001f600"]
    for length in range(1, 41):
        for before in around:
            for after in around:
                assert_same_pieces(PATTERNS[name], before + " " * length + after)


@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("text", ["", " ", "\n", "x", "  ", " \n ", "'", "''s", "a'", "I'M", "HTTPServer's",
                                  "camelCaseWORDS", "\r\n\r\n  x", "1234567", "  \u3000x", "ab  \t\n"])
def test_scanner_equals_regex_on_edge_cases(name, text):
    assert_same_pieces(PATTERNS[name], text)


# ---- the 64-byte blocks ------------------------------------------------------------------------------------
# The tiktoken patterns' scanners find the piece starts of 64 bytes of ASCII at once (_piece_starts.h),
# stop before an apostrophe or a non-ASCII byte, or inside a whitespace run that reaches the block's end;
# the byte-at-a-time scanner takes over there. The tests above mostly feed them short or non-ASCII text:
# these feed them long ASCII text, where every rule of the bit masks and every way a block can stop is met
# at every alignment.

BLOCK_CHARS = [" ", "\t", "\x0b", "\x0c", "\r", "\n", "a", "Z", "0", ".", "/", "\x00", "\x1c", "'", "s", "\u00e9"]
BLOCK_PATTERNS = ["r50k", "cl100k", "o200k"]


def test_the_block_scan_is_on():
    # It only runs when its byte-range classes are the tables' (tiktoken's) for all of ASCII.
    assert _pretokenize.BLOCK_SCAN_ENABLED


# A block's bytes are classed by one of several instruction sets (the widest the CPU runs); the tests of
# whole texts below run with each this machine has, and the ones here compare the variants block by block.

@pytest.fixture(params=_pretokenize.block_isas())
def block_isa(request):
    previous = _pretokenize.set_block_isa(request.param)
    yield request.param
    _pretokenize.set_block_isa(previous)


def test_the_widest_instruction_set_the_cpu_runs_is_in_use():
    isas = _pretokenize.block_isas()
    assert isas[0] == "portable" and set(isas) <= set(_pretokenize.BLOCK_ISAS)
    previous = _pretokenize.set_block_isa("portable")
    assert previous == isas[-1]
    assert _pretokenize.set_block_isa(previous) == "portable"


def test_an_instruction_set_the_cpu_lacks_or_an_unknown_one_is_refused():
    with pytest.raises(ValueError, match="not available here"):
        _pretokenize.set_block_isa("sse9")
    with pytest.raises(ValueError, match="a block is 64 bytes"):
        _pretokenize.block_starts(b"abc", "cl100k", "portable")


def test_every_byte_at_every_place_of_a_block_is_classed_alike_by_every_instruction_set():
    # Every byte value at each of the 64 places, among fillers of each class: the starts and the hard
    # bytes come from the class masks, so equal results for all of them mean equal masks.
    rules = [name for name in pattern_compiler.BLOCK_RULES if name != "none"]
    isas = _pretokenize.block_isas()
    fillers = [bytes(range(32, 96)), b"ab cd\n\n  x1234567 .,;/\r\n\t\tZz" * 3, bytes(64)]
    for filler in fillers:
        for place in range(64):
            for value in range(256):
                block = filler[:place] + bytes([value]) + filler[place + 1:64]
                for name in rules:
                    results = {isa: _pretokenize.block_starts(block, name, isa) for isa in isas}
                    if len(set(results.values())) != 1:
                        raise AssertionError(f"byte {value:#x} at {place} in {filler!r} ({name}): {results}")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([c.encode() for c in BLOCK_CHARS[:-1]] + [b"\xc3", b"\xa9", b"\x80", b"\xff"]),
                min_size=64, max_size=64))
def test_blocks_of_mixed_classes_get_the_same_starts_from_every_instruction_set(chars):
    block = b"".join(chars)
    for name in ["r50k", "cl100k", "cl100k_1", "o200k", "o200k_any"]:
        assert len({_pretokenize.block_starts(block, name, isa) for isa in _pretokenize.block_isas()}) == 1


@pytest.mark.parametrize("name", BLOCK_PATTERNS)
@pytest.mark.parametrize("shift", range(4))
def test_every_three_characters_repeated_across_blocks_are_cut_as_regex_cuts_them(name, shift, block_isa):
    # Each gram repeated 30 times makes a text of 90+ characters that crosses a block's end at every offset
    # the repetition allows; the shift moves it against the start.
    scanner = Scanner.for_pattern(PATTERNS[name])
    pattern = regex.compile(PATTERNS[name])
    for a in BLOCK_CHARS:
        for b in BLOCK_CHARS:
            for c in BLOCK_CHARS:
                text = "x" * shift + (a + b + c) * 30
                if scanner.split(text) != pattern.findall(text):
                    assert_same_pieces(PATTERNS[name], text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(BLOCK_CHARS), st.integers(1, 9)), min_size=10, max_size=90))
def test_runs_of_ascii_classes_are_cut_as_regex_cuts_them(runs):
    # Runs (of whitespace with several line breaks, of digits past three, of punctuation) that start and end
    # anywhere in a block or across two; with each instruction set.
    for isa in _pretokenize.block_isas():
        previous = _pretokenize.set_block_isa(isa)
        try:
            for name in BLOCK_PATTERNS:
                assert_same_pieces(PATTERNS[name], "".join(char * count for char, count in runs))
        finally:
            _pretokenize.set_block_isa(previous)


@pytest.mark.parametrize("name", BLOCK_PATTERNS)
def test_line_breaks_at_every_distance_in_a_whitespace_run_are_cut_as_regex_cuts_them(name, block_isa):
    # A run's last line break decides where its pieces start; the mask finds it across up to 63 bytes.
    # (o200k: a run of punctuation takes line breaks and slashes after it, "\n/" repeated.)
    for gap in range(64):
        for space in [" ", "\t", "\r\n"]:
            assert_same_pieces(PATTERNS[name], "a\n" + space * gap + "\n" + "  b" + "x" * 64)
            assert_same_pieces(PATTERNS[name], "." + "\n" * gap + " \n" + " " * gap + "b" + "x" * 64)
            assert_same_pieces(PATTERNS[name], "a\n" + "/\n" * gap + space + "/b" + "x" * 64)


@pytest.mark.parametrize("name", BLOCK_PATTERNS)
@pytest.mark.parametrize("filler", ["a" * 70, " " * 70, "\n" * 70, "7" * 70, "." * 70, "ab " * 30, "aB" * 35])
def test_a_block_full_of_one_piece_or_one_run_hands_over_and_goes_on(name, filler, block_isa):
    for after in ["", "x", " x", "\n", "'s", "\u00e9", "1234", "/\n"]:
        assert_same_pieces(PATTERNS[name], filler + after + filler)


# ---- behaviour of the Scanner object ----------------------------------------------------------------------

def test_o200k_splits_at_case_changes_and_keeps_contractions():
    scanner = Scanner.for_pattern(patterns.O200K_PATTERN)
    assert scanner.split("camelCase HTTPServer") == ["camel", "Case", " HTTPServer"]
    assert scanner.split("YOU'RE right") == ["YOU'RE", " right"]


def test_known_patterns_have_their_own_scanner_and_other_patterns_of_the_family_are_compiled():
    assert Scanner.for_pattern(patterns.CL100K_PATTERN).kind == PatternKind.CL100K
    assert Scanner.for_pattern(patterns.CL100K_PATTERN + "|x").kind == PatternKind.COMPILED
    assert Scanner.for_pattern(patterns.CL100K_PATTERN + "|x", compile=False) is None


def test_patterns_outside_the_family_have_no_scanner():
    assert Scanner.for_pattern(r"\w+|\s+") is None          # matches nothing at "!"
    assert Scanner.for_pattern(r"(?<=a)b|[\s\S]") is None    # lookbehind
    assert Scanner.for_pattern(r"(?:ab)+|[\s\S]") is None    # a repeated group


def test_count_equals_the_number_of_pieces(corpus_dir):
    text = agreeing_text((corpus_dir / "english_prose.txt").read_text()[:200_000])
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
