"""The compiled scanner's Unicode tables follow stock tiktoken, the oracle of the ids, on every code point.

tools/gen_unicode_tables.py reads the tables off tiktoken's own regex engine with the probe in
tiktoken_probe.py; these tests ask the installed tiktoken again, through the same probe, about all
1,114,112 code points (not the `regex` package: its newer Unicode disagrees with tiktoken's on thousands
of them), then compare ids end to end: bytebpe's named encodings against tiktoken's on every code point in
contexts that exercise each class.
"""
from __future__ import annotations

import numpy as np
import pytest

import bytebpe
from bytebpe import _pretokenize

from .. import hf_probe
from .. import tiktoken_probe as probe

LETTER, NUMBER, SPACE, UPPER, LOWER, LETTER_OR_MARK, PUNCT_OR_SYMBOL = (_pretokenize.CLASS_BITS[name] for name in (
    "letter", "number", "space", "upper", "lower", "letter_or_mark", "punct_or_symbol"))


def table_bits() -> np.ndarray:
    return np.frombuffer(_pretokenize.code_point_classes(), dtype=np.uint8)


def first_few(code_points: list[int]) -> str:
    return ", ".join(f"U+{cp:04X}" for cp in code_points[:10]) + (" ..." if len(code_points) > 10 else "")


def regenerate_hint() -> str:
    return (f"tables read off tiktoken {_pretokenize.TIKTOKEN_VERSION}, tiktoken {probe.tiktoken_version()} "
            f"installed; run tools/gen_unicode_tables.py")


# ---- the tables against tiktoken's engine, code point by code point -----------------------------------------

def test_every_class_of_the_scanner_is_checked():
    assert set(_pretokenize.CLASS_BITS) == set(probe.CLASSES) | set(hf_probe.CLASSES)


@pytest.mark.parametrize("name", probe.CLASSES)
def test_class_table_agrees_with_tiktoken_on_every_code_point(name):
    expected = np.frombuffer(probe.tiktoken_matches(probe.CLASSES[name]), dtype=np.uint8) != 0
    claimed = (table_bits() & _pretokenize.CLASS_BITS[name]) != 0
    wrong = np.flatnonzero(claimed != expected).tolist()
    assert not wrong, f"{probe.CLASSES[name]}: {len(wrong)} code points differ ({first_few(wrong)}); {regenerate_hint()}"


@pytest.mark.parametrize("name", [*probe.CLASSES, *hf_probe.CLASSES])
def test_class_table_agrees_with_hf_tokenizers_on_every_code_point(name):
    # HF `tokenizers` is the oracle of imported tokenizer.json files, and the scanners cut their text: GPT-2's
    # ByteLevel regex and cl100k/o200k-style Splits on tiktoken's classes, DeepSeek's Splits on all but the
    # case classes. So every class must be HF's (Oniguruma's) as well.
    pytest.importorskip("tokenizers")
    fragment = {**probe.CLASSES, **hf_probe.CLASSES}[name]
    expected = np.frombuffer(hf_probe.hf_matches(fragment), dtype=np.uint8) != 0
    claimed = (table_bits() & _pretokenize.CLASS_BITS[name]) != 0
    wrong = np.flatnonzero(claimed != expected).tolist()
    assert not wrong, (f"{fragment}: {len(wrong)} code points differ from tokenizers {hf_probe.tokenizers_version()} "
                       f"({first_few(wrong)}); tables read off tokenizers {_pretokenize.TOKENIZERS_VERSION}; run "
                       "tools/gen_unicode_tables.py")


def test_contraction_letters_agree_with_tiktoken_on_every_code_point():
    claimed = np.array([_pretokenize.contraction_letter(cp) or "-" for cp in range(probe.N_CODE_POINTS)])
    assert set(claimed.tolist()) == set(probe.CONTRACTION_LETTERS) | {"-"}
    for letter, matches in probe.tiktoken_contraction_matches().items():
        expected = np.frombuffer(matches, dtype=np.uint8) != 0
        wrong = np.flatnonzero((claimed == letter) != expected).tolist()
        assert not wrong, f"(?i:{letter}): {len(wrong)} code points differ ({first_few(wrong)}); {regenerate_hint()}"
    assert _pretokenize.contraction_letter(0x17F) == "s"     # LATIN SMALL LETTER LONG S folds to s


def test_surrogates_have_no_class():
    # tiktoken cannot be asked (it replaces them before matching) and the scanner never sees them
    # (`Encoding` repairs lone surrogates to U+FFFD first; UTF-8 cannot carry them).
    assert not table_bits()[0xD800:0xE000].any()
    assert not any(_pretokenize.contraction_letter(cp) for cp in range(0xD800, 0xE000))


def test_ascii_is_what_the_scanner_hard_codes():
    # _ascii_runs.h takes a-z (lower) and A-Z (upper) as letters without the tables, and the scanner reads
    # ASCII through a copy of the first 128 entries: the tables must say the same.
    def expected(c: str) -> int:
        if "a" <= c <= "z":
            return LETTER | LOWER | LETTER_OR_MARK
        if "A" <= c <= "Z":
            return LETTER | UPPER | LETTER_OR_MARK
        if c.isdigit():
            return NUMBER
        if c in " \t\n\x0b\x0c\r":
            return SPACE
        # DeepSeek's scanner takes these 32 as its [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~] without the tables
        return PUNCT_OR_SYMBOL if 0x21 <= ord(c) <= 0x7E else 0

    assert table_bits()[:128].tolist() == [expected(chr(cp)) for cp in range(128)]


def test_tables_are_not_unicodedata():
    # Python's own notion of space differs from \s: U+001C..U+001F are str.isspace() but not \s.
    for cp in range(0x1C, 0x20):
        assert chr(cp).isspace() and not table_bits()[cp] & SPACE


def test_the_probe_reads_the_engine():
    # The probe itself, on answers known without it (U+0000 goes through its second marker).
    assert probe.tiktoken_matches_at(r"\p{L}", [0x41, 0, 0x31, 0x4E2D, 0x10FFFF]).tolist() == [
        True, False, False, True, False]
    assert probe.tiktoken_matches_at(r"\x00", [0, 0x41]).tolist() == [True, False]
    with pytest.raises(ValueError):
        probe.tiktoken_matches_at(r"\p{L}", [0xD800])


# ---- ids end to end -----------------------------------------------------------------------------------------

# Each code point c: before a contraction, after a space and before a letter, between an upper- and a
# lower-case letter before an upper-case contraction (o200k's case classes), doubled before a digit. The
# contexts of CHUNK code points are joined by newlines into one text.
CONTEXTS = ["{0}'s", " {0}x", "A{0}b'S", "{0}{0}1"]
CHUNK = 8192


@pytest.mark.parametrize("context", CONTEXTS)
def test_ids_equal_tiktoken_on_every_code_point_in_context(context, data_dir, tiktoken_encoding):
    chunks = [probe.PROBED[i:i + CHUNK] for i in range(0, len(probe.PROBED), CHUNK)]
    texts = ["\n".join(context.format(chr(cp)) for cp in chunk) for chunk in chunks]
    for name in ["gpt2", "cl100k_base", "o200k_base"]:      # the three pattern families
        ours = bytebpe.get_encoding(name)
        theirs = tiktoken_encoding(name)
        assert ours.pretokenizer == "compiled"
        got = ours.encode_ordinary_batch(texts)
        expected = theirs.encode_ordinary_batch(texts)
        for chunk, got_ids, expected_ids in zip(chunks, got, expected):
            if got_ids != expected_ids:
                wrong = [cp for cp in chunk if ours.encode_ordinary(context.format(chr(cp)))
                         != theirs.encode_ordinary(context.format(chr(cp)))]
                pytest.fail(f"{name}: ids differ from tiktoken's in {context!r} for {first_few(wrong) or 'the joined text'}")
