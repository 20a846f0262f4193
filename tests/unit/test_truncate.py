"""`truncate` and `chunks`: the longest prefix that fits a token budget, against brute force.

Brute force is the oracle: for every budget and text here, the answer is the longest prefix whose tiktoken count
(or, for generated patterns, bytebpe's own count, which the pattern tests check against tiktoken) fits. The
search rests on what the scanner reports about each piece (`Scanner.pieces_seen`), which is checked for every
hand-written and compiled scanner on its own first: every prefix longer than what pieces 1..i looked at starts with those same pieces.
"""
from __future__ import annotations

import json
import random
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe._pretokenize import PatternKind, Scanner
from bytebpe.pattern_compiler import compile_split_pattern, looks_at_the_start

from ..exactness.test_pattern_compiler import (  # noqa: F401  (fixtures: small_ranks needs cl100k_ranks)
    FAST, GENERATED, cl100k_ranks, compiled_or_none, family_cases, small_ranks)

NAMES = ["gpt2", "cl100k_base", "o200k_base"]

# Short texts where counts are least monotone: runs, digits, CJK, emoji and combining marks, whitespace runs,
# contractions, special-token text.
SHORT_TEXTS = [
    "Hello world, this is a test of truncation!  ",
    "a" * 300,
    "日本語のテキストです。中文文本，한국어 텍스트." * 2,
    "x = 12345678 + 9;\n\n    y = x**2  # comment\n\t\t",
    "😀😀👍🏽 e\u0301 a\u0308\u0301 ﬁ ẞ",
    "I'm sure they've seen it; we'll see, you'd think.   \n\n\n   end",
    "1234567890123456789 3.14159 1,000,000",
    "<|endoftext|> between <|endoftext|><|endoftext|> text <|endo",
]


def longest_fitting(count, text: str, budget: int) -> str:
    best = 0
    for k in range(len(text) + 1):
        if count(text[:k]) <= budget:
            best = k
    return text[:best]


def longest_fitting_suffix(count, text: str, budget: int) -> str:
    for start in range(len(text) + 1):
        if count(text[start:]) <= budget:
            return text[start:]
    raise AssertionError("the empty suffix always fits")


# ---- what the scanner reports ----------------------------------------------------------------------------------

def check_pieces_seen(scanner: Scanner, text: str, by_blocks: bool = False) -> None:
    data = text.encode()
    ends, seen = scanner.pieces_seen(data, 0, len(data), len(data) + 1, by_blocks)
    furthest, reach = [], -1
    for at in seen:
        reach = max(reach, at)
        furthest.append(reach)
    for k in range(len(data) + 1):
        if k < len(data) and (data[k] & 0xC0) == 0x80:
            continue
        prefix_ends, _ = scanner.pieces_seen(data, 0, k, k + 1)
        stable = sum(1 for reach in furthest if reach < k)
        assert prefix_ends[:stable] == ends[:stable], (text, k)


def hand_written_and_compiled():
    """Every hand-written scanner (the one the budget searches use for its pattern), and the compiled
    scanners of the same patterns."""
    found = [pytest.param(Scanner(PatternKind.DEEPSEEK), id="deepseek")]
    for name in NAMES:
        pattern = bytebpe.get_encoding(name)._pat_str
        found.append(pytest.param(Scanner.for_pattern(pattern, compile=False), id=f"{name}-hand-written"))
        found.append(pytest.param(Scanner.compiled(pattern), id=f"{name}-compiled"))
    return found


@pytest.mark.parametrize("by_blocks", [False, True], ids=["piece by piece", "by blocks"])
@pytest.mark.parametrize("scanner", hand_written_and_compiled())
def test_every_prefix_starts_with_the_pieces_that_looked_no_further(scanner, by_blocks):
    for text in SHORT_TEXTS:
        check_pieces_seen(scanner, text[:120], by_blocks)
    check_pieces_seen(scanner, " ".join(SHORT_TEXTS)[:400], by_blocks)


# The characters the hand-written scanners branch on: both cases and caseless letters, marks, digits of
# several scripts, every kind of whitespace and line break, apostrophes and the contraction letters (with
# their non-ASCII case partners), punctuation, CJK, emoji.
SCANNER_CHARS = list("aAsStTmMdDlLrRvVeExX 'ss  \r\n\t\n\r\n0129.,!?-_/$([{") + [
    chr(cp) for cp in (0x17F, 0x212A, 0xDF, 0xE9, 0xC9, 0x1C5, 0x2B0, 0x300, 0x301, 0x4E2D, 0x3042, 0x30A2, 0xAC00,
                       0x0627, 0x064E, 0x0660, 0x2160, 0xB2, 0xA0, 0x85, 0x2028, 0x3000, 0x1F600, 0x200D, 0xFB01)]


@settings(max_examples=150, deadline=None)
@given(text=st.text(st.sampled_from(SCANNER_CHARS), max_size=30))
@pytest.mark.parametrize("scanner", [pytest.param(Scanner(kind), id=kind.name)
                                     for kind in (PatternKind.R50K, PatternKind.CL100K, PatternKind.O200K,
                                                  PatternKind.DEEPSEEK)])
def test_what_a_hand_written_scanner_reports_holds_for_every_prefix_of_generated_text(scanner, text):
    check_pieces_seen(scanner, text)


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from([*"aAsStdlrve xy 'ss  \r\n\t01239.,!?-_/$([{", "é", "中"]),
                    min_size=60, max_size=200))
@pytest.mark.parametrize("scanner", [pytest.param(Scanner(kind), id=kind.name)
                                     for kind in (PatternKind.R50K, PatternKind.CL100K, PatternKind.O200K)])
def test_what_a_block_scan_reports_holds_for_every_prefix_of_generated_text(scanner, text):
    """A piece a 64-byte block ends reports the block's last byte: every prefix holding the block cuts it so."""
    check_pieces_seen(scanner, text, by_blocks=True)


def test_a_hand_written_scanner_reports_no_further_than_the_compiled_program():
    """(What it reports is what the searches re-cut: no more than the program reports, on real text.)"""
    text = "".join(SHORT_TEXTS) * 3
    data = text.encode()
    for name in NAMES:
        pattern = bytebpe.get_encoding(name)._pat_str
        hand, compiled = Scanner.for_pattern(pattern, compile=False), Scanner.compiled(pattern, blocks=False)
        hand_ends, hand_seen = hand.pieces_seen(data, 0, len(data), len(data))
        compiled_ends, compiled_seen = compiled.pieces_seen(data, 0, len(data), len(data))
        assert hand_ends == compiled_ends
        assert all(h <= c for h, c in zip(hand_seen, compiled_seen)), name


@FAST
@given(case=family_cases())
def test_every_prefix_starts_with_the_pieces_that_looked_no_further_for_generated_patterns(case):
    pattern, texts = case
    scanner = compiled_or_none(pattern, "tiktoken")
    if scanner is not None:
        for text in texts:
            check_pieces_seen(scanner, text)


def test_pieces_seen_refuses_a_start_past_the_end():
    for scanner in (Scanner(PatternKind.CL100K), Scanner.compiled(r"\s+|\S+")):
        with pytest.raises(ValueError, match="start"):
            scanner.pieces_seen(b"abc", 2, 1, 10)


# ---- truncate -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_truncate_is_the_longest_prefix_whose_tiktoken_count_fits(name, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for text in SHORT_TEXTS:
        text = text[:160]
        for budget in [0, 1, 2, 3, 5, 8, 13, 21, 34]:
            expected = longest_fitting(lambda t: len(tik.encode_ordinary(t)), text, budget)
            assert enc.truncate(text, budget, disallowed_special=()) == expected, (text, budget)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_truncate_on_corpus_slices(name, side, tiktoken_encoding, corpus_dir):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    longest = longest_fitting if side == "right" else longest_fitting_suffix
    for file in ("english_prose.txt", "code.txt", "multilingual.txt"):
        whole = (corpus_dir / file).read_text(encoding="utf-8")
        for offset in (0, 5_000, 50_001):
            text = whole[offset:offset + 90]
            for budget in (4, 11, 19):
                expected = longest(lambda t: len(tik.encode_ordinary(t)), text, budget)
                assert enc.truncate(text, budget, side=side) == expected, (file, offset, budget)


@pytest.mark.parametrize("allowed", [set(), {"<|endoftext|>"}, "all"])
def test_truncate_with_special_tokens_follows_the_policy(allowed, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding("cl100k_base"), tiktoken_encoding("cl100k_base")
    text = "say <|endoftext|> then <|endoftext|><|endoftext|> more<|endoftext|>"
    for budget in range(0, 16):
        expected = longest_fitting(lambda t: len(tik.encode(t, allowed_special=allowed, disallowed_special=())),
                                   text, budget)
        assert enc.truncate(text, budget, allowed_special=allowed, disallowed_special=()) == expected, budget
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.truncate(text, 50)  # encode's rule, on the text returned
    # A disallowed token beyond the result is not its concern.
    assert enc.truncate(text, 3) == longest_fitting(lambda t: len(tik.encode_ordinary(t)), text, 3) == "say <|endo"


# ---- truncate(side="left"): the longest suffix -------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_truncate_left_is_the_longest_suffix_whose_tiktoken_count_fits(name, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for text in SHORT_TEXTS:
        text = text[-160:]
        for budget in [0, 1, 2, 3, 5, 8, 13, 21, 34]:
            expected = longest_fitting_suffix(lambda t: len(tik.encode_ordinary(t)), text, budget)
            assert enc.truncate(text, budget, side="left", disallowed_special=()) == expected, (text, budget)


@pytest.mark.parametrize("allowed", [set(), {"<|endoftext|>"}, "all"])
def test_truncate_left_with_special_tokens_follows_the_policy(allowed, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding("cl100k_base"), tiktoken_encoding("cl100k_base")
    for text in ["say <|endoftext|> then <|endoftext|><|endoftext|> more<|endoftext|>",
                 "<|endoftext|>x<|endoftext|> a long tail of ordinary words after it"]:
        for budget in range(0, 18):
            expected = longest_fitting_suffix(
                lambda t: len(tik.encode(t, allowed_special=allowed, disallowed_special=())), text, budget)
            assert enc.truncate(text, budget, side="left", allowed_special=allowed,
                                disallowed_special=()) == expected, (text, budget)
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.truncate("say <|endoftext|> then", 50, side="left")


def test_truncate_left_after_an_allowed_special_token_and_a_huge_segment_stays_fast():
    enc = bytebpe.get_encoding("cl100k_base")
    text = "<|endoftext|>" + "word " * 400_000 + "<|endoftext|> end"
    start = time.process_time()
    kept = enc.truncate(text, 10, side="left", allowed_special="all")
    assert time.process_time() - start < 2      # the special token's inside is not counted over 2 MB
    assert enc.count(kept, allowed_special="all") <= 10 < enc.count(text[len(text) - len(kept) - 1:],
                                                                     allowed_special="all")


def test_truncate_left_reads_a_huge_text_only_near_its_end():
    enc = bytebpe.get_encoding("o200k_base")
    text = "The quick brown fox jumps over the lazy dog. " * 90_000 + "And the end."
    kept = enc.truncate(text, 100, side="left")
    assert enc.count(kept) <= 100 < enc.count(text[-len(kept) - 1:])
    assert kept == longest_fitting_suffix(enc.count, text[-100 * 128:], 100)


def test_truncate_left_refuses_a_pattern_that_reads_the_start_of_the_text():
    anchored = bytebpe.Encoding("anchored", pat_str=r"^\S+|\s+|\S+", mergeable_ranks={bytes([b]): b for b in range(256)},
                                special_tokens={})
    assert anchored.truncate("ab cd", 2) == "ab"
    with pytest.raises(TypeError, match=r"\^ or \\A"):
        anchored.truncate("ab cd", 2, side="left")


def test_truncate_of_text_that_fits_is_the_text_and_a_zero_budget_is_empty():
    enc = bytebpe.get_encoding("o200k_base")
    assert enc.truncate("short text", 100) == "short text"
    assert enc.truncate("short text", 0) == ""
    assert enc.truncate("", 3) == ""


def test_truncate_reads_a_huge_text_only_near_the_cut():
    # 4 MB with the budget reached early: the answer comes from a window at the start (and is exact there).
    enc = bytebpe.get_encoding("cl100k_base")
    text = "The quick brown fox jumps over the lazy dog. " * 90_000
    cut = enc.truncate(text, 100)
    assert len(enc.encode(cut)) <= 100 < len(enc.encode(text[:len(cut) + 1]))
    assert cut == longest_fitting(enc.count, text[:len(cut) + 80], 100)


@pytest.mark.parametrize("side", ["right", "left"])
@settings(max_examples=30, **GENERATED)
@given(case=family_cases(), budget=st.integers(0, 9))
def test_truncate_for_generated_patterns_equals_brute_force(side, case, budget, small_ranks):  # noqa: F811
    pattern, texts = case
    if compiled_or_none(pattern, "tiktoken") is None:
        return
    enc = bytebpe.Encoding("generated", pat_str=pattern, mergeable_ranks=small_ranks, special_tokens={})
    longest = longest_fitting if side == "right" else longest_fitting_suffix
    for text in texts:
        if side == "left" and looks_at_the_start(compile_split_pattern(pattern)):
            with pytest.raises(TypeError):
                enc.truncate(text, budget, side="left")
            continue
        assert enc.truncate(text, budget, side=side) == longest(enc.count_ordinary, text, budget), (pattern, text)


def test_bad_arguments_are_clear_errors():
    enc = bytebpe.get_encoding("cl100k_base")
    with pytest.raises(ValueError, match="max_tokens"):
        enc.truncate("text", -1)
    with pytest.raises(TypeError):
        enc.truncate("text", "5")       # type: ignore[arg-type]
    with pytest.raises(TypeError):
        enc.truncate(b"bytes", 5)       # type: ignore[arg-type]
    with pytest.raises(ValueError, match='side must be "right"'):
        enc.truncate("text", 5, side="middle")    # type: ignore[arg-type]
    with pytest.raises(ValueError, match="surrogates"):
        enc.truncate("a\ud800b", 5)
    for search in (lambda: enc._table.chunk_ends(enc._budget_scanner(), b"hello", -1, False),
                   lambda: enc._table.longest_prefix(enc._budget_scanner(), b"hello", -1, 5, True)):
        with pytest.raises(ValueError, match="budget must be 0 or more"):   # (the core's own entry points)
            search()
    outside = bytebpe.Encoding("outside", pat_str=r"(a|b)+|[\s\S]", mergeable_ranks={bytes([b]): b for b in range(256)},
                               special_tokens={})
    with pytest.raises(TypeError, match="compiled scanner runs"):
        outside.truncate("abab", 1)
    # (tokenizer.json files: tests/exactness/test_truncate_tokenizer_json.py, against HF.)


@pytest.mark.parametrize("budget", [sys.maxsize - 1, sys.maxsize, 2**63, 2**100])
def test_a_budget_larger_than_any_text_keeps_the_whole_text(budget):
    """(Up to and past the largest C integer: no overflow, no hang.)"""
    enc = bytebpe.get_encoding("cl100k_base")
    text = "hello world " * 30 + "日本語のテキスト" * 20
    assert enc.truncate(text, budget) == text == enc.truncate(text, budget, side="left")
    assert enc.chunks(text, budget) == [text] == enc.chunks(text, budget, boundary="piece")
    assert enc.encode(text, max_tokens=budget) == enc.encode(text)


def test_a_normalizing_encoding_truncates_normalized_text_and_refuses_the_rest():
    base = bytebpe.get_encoding("cl100k_base")
    nfc = bytebpe.Encoding("nfc", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks, special_tokens={},
                           normalizer="NFC")
    assert nfc.truncate("café au lait", 2) == base.truncate("café au lait", 2)
    with pytest.raises(ValueError, match="normalizes text to NFC"):
        nfc.truncate("cafe\u0301", 2)


# ---- chunks -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_chunks_are_greedy_truncations_that_join_to_the_text(name, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for text in SHORT_TEXTS[:7]:
        for budget in (1, 3, 7, 20):
            found = enc.chunks(text, budget)
            assert "".join(found) == text
            rest = text
            for chunk in found:
                expected = longest_fitting(lambda t: len(tik.encode_ordinary(t)), rest, budget) or rest[:1]
                assert chunk == expected
                rest = rest[len(chunk):]


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_chunks_of_corpus_slices_are_greedy_truncations(name, tiktoken_encoding, corpus_dir):
    """Slices long enough for the scan's 64-byte blocks (what the search first learns of a block's pieces is
    coarse, then re-cut exactly near each cut)."""
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for file in ("english_prose.txt", "code.txt", "multilingual.txt"):
        text = (corpus_dir / file).read_text(encoding="utf-8")[20_000:20_300]
        for budget in (9, 40):
            rest = text
            for chunk in enc.chunks(text, budget):
                assert chunk == (longest_fitting(lambda t: len(tik.encode_ordinary(t)), rest, budget) or rest[:1]), \
                    (file, budget, len(text) - len(rest))
                rest = rest[len(chunk):]
            assert not rest


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chunks_at_piece_boundaries_end_where_the_pattern_starts_a_piece(name, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    scanner = Scanner.compiled(enc._pat_str)
    for text in [*SHORT_TEXTS[:7], "Supercalifragilisticexpialidocious " * 3]:
        for budget in (1, 2, 5, 12):
            found = enc.chunks(text, budget, boundary="piece")
            assert "".join(found) == text
            rest = text
            for chunk in found:
                ends = [len(rest.encode()[:end].decode()) for end in
                        scanner.pieces_seen(rest.encode(), 0, len(rest.encode()), 10**6)[0]]
                fitting = [k for k in ends if len(tik.encode_ordinary(rest[:k])) <= budget]
                expected = rest[:max(fitting)] if fitting else (
                    longest_fitting(lambda t: len(tik.encode_ordinary(t)), rest, budget) or rest[:1])
                assert chunk == expected, (text, budget)
                rest = rest[len(chunk):]
    with pytest.raises(ValueError, match="boundary"):
        enc.chunks("text", 3, boundary="word")      # type: ignore[arg-type]


def long_pieces() -> list[str]:
    """Texts that are one long piece, or a few: letters that BPE merges far from the fewest tokens (random
    DNA), CJK, one repeated byte, a repeated pair, a long whitespace run before a word."""
    rng = random.Random(7)
    return ["".join(rng.choice("ACGT") for _ in range(700)),
            "".join(rng.choice("的一是不了人我在有他这中大来上") for _ in range(300)),
            "a" * 700, "ab" * 350, " " * 600 + "x", "x" + "\n" * 400 + "y"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chunks_and_truncate_of_long_pieces_are_the_longest_that_fit(name, tiktoken_encoding):
    """(A long piece at the cut: its candidates are bounded by the fewest tokens that spell them before any
    is merged, and a window that ends inside it is settled by that bound.)"""
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for text in long_pieces():
        for budget in (60, 200):
            rest = text
            for chunk in enc.chunks(text, budget):
                counts = [len(tik.encode_ordinary(rest[:k])) for k in range(len(chunk), len(rest) + 1)]
                assert counts[0] <= budget and all(count > budget for count in counts[1:]), (text[:20], budget)
                rest = rest[len(chunk):]
            assert not rest
        assert enc.truncate(text, 60) == enc.chunks(text, 60)[0]


def test_a_piece_end_past_the_first_piece_over_the_budget_is_a_candidate():
    """A whitespace piece's match looks to the end of its run: in "ab   \\n  y" the piece "   \\n" (2 tokens
    here, over a budget of 3) looked as far as "y". The prefix that ends after the next piece, " ", cuts the
    run as one piece at the end of the text ("   \\n " one token here), and fits."""
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"  ", b"   ", b"\n ", b"   \n "):
        ranks[token] = len(ranks)
    enc = bytebpe.Encoding("runs", pat_str=bytebpe.get_encoding("cl100k_base")._pat_str, mergeable_ranks=ranks,
                           special_tokens={})
    text = "ab   \n  y"
    assert [enc.count(text[:k]) for k in (6, 7)] == [4, 3]
    assert enc.truncate(text, 3) == longest_fitting(enc.count, text, 3) == "ab   \n "
    assert enc.chunks(text, 3, boundary="piece")[0] == "ab   \n "
    assert enc.chunks(text, 3) == ["ab   \n ", " y"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chunks_with_special_tokens_follow_encodes_rules(name, tiktoken_encoding):
    """Allowed special tokens are one token each; a disallowed one is an error where a chunk holds it whole."""
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    eot = "<|endoftext|>"
    text = SHORT_TEXTS[7] + " and " + SHORT_TEXTS[0]
    for budget in (1, 2, 3, 5, 8, 40):
        for options in ({"allowed_special": {eot}}, {"disallowed_special": ()}):
            found = enc.chunks(text, budget, **options)
            assert "".join(found) == text
            rest = text
            for chunk in found:
                expected = longest_fitting(lambda t: len(tik.encode(t, **options)), rest, budget) or rest[:1]
                assert chunk == expected, (budget, options)
                rest = rest[len(chunk):]
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.chunks(text, 40)
    assert "".join(enc.chunks(text, 2)) == text     # no chunk of 2 tokens holds the token whole


CHUNK_TEXTS = st.lists(st.one_of(st.sampled_from(list("ab xy\n\t'.,1234") + [" the", " and", "日本", "😀", "e\u0301"]),
                                 st.characters(exclude_categories=["Cs"])), max_size=60).map("".join)


@settings(max_examples=80, deadline=None)
@given(text=CHUNK_TEXTS, budget=st.integers(1, 12), boundary=st.sampled_from(["char", "piece"]))
def test_chunks_in_one_compiled_loop_equal_chunks_found_one_by_one(text, budget, boundary):
    """With no special token in play all chunks come from one compiled loop that uses the piece cache; an
    allowed special token the text does not hold sends the same text through `_fit`, chunk by chunk."""
    enc = bytebpe.get_encoding("o200k_base")
    assert enc.chunks(text, budget, boundary=boundary) == \
        enc.chunks(text, budget, boundary=boundary, allowed_special={"<|endofprompt|>"})


def test_chunks_with_ids_and_in_batches(tiktoken_encoding, corpus_dir):
    enc, tik = bytebpe.get_encoding("cl100k_base"), tiktoken_encoding("cl100k_base")
    docs = [json.loads(line)["text"] for line in (corpus_dir / "docs_code.jsonl").read_text().splitlines()[:5]]
    for doc in docs:
        pairs = enc.chunks_with_ids(doc, 40, boundary="piece")
        assert [chunk for chunk, _ in pairs] == enc.chunks(doc, 40, boundary="piece")
        assert all(ids == tik.encode_ordinary(chunk) and len(ids) <= 40 for chunk, ids in pairs)
    assert enc.chunks_batch(docs, 40) == [enc.chunks(doc, 40) for doc in docs]
    assert enc.chunks_batch([], 40) == [] and enc.chunks_with_ids("", 40) == []
    with pytest.raises(TypeError, match="sequence of texts"):
        enc.chunks_batch("one text", 40)


def test_chunks_of_a_corpus_file_fit_and_join(corpus_dir):
    enc = bytebpe.get_encoding("o200k_base")
    docs = [json.loads(line)["text"] for line in (corpus_dir / "docs_english.jsonl").read_text().splitlines()[:20]]
    for doc in docs:
        found = enc.chunks(doc, 64)
        assert "".join(found) == doc
        assert all(enc.count(chunk) <= 64 for chunk in found)
        assert all(enc.count(chunk + following[:1]) > 64 for chunk, following in zip(found, found[1:]))


# ---- the command line ---------------------------------------------------------------------------------------------

def test_the_chunk_command_writes_each_documents_chunks_with_their_spans(tmp_path, capsys):
    from bytebpe import cli

    docs = ["The quick brown fox jumps over the lazy dog. " * 7, "日本語のテキスト、" * 9, "short", ""]
    inputs = tmp_path / "docs.jsonl"
    inputs.write_text("".join(json.dumps({"text": doc}) + "\n" for doc in docs), encoding="utf-8")
    output = tmp_path / "out" / "chunks.jsonl"
    assert cli.main(["chunk", str(inputs), "--encoding", "o200k_base", "--max-tokens", "16", "--boundary", "piece",
                     "-o", str(output)]) == 0
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    enc = bytebpe.get_encoding("o200k_base")
    for number, doc in enumerate(docs):
        mine = [row for row in rows if row["document"] == number]
        assert [row["text"] for row in mine] == enc.chunks(doc, 16, boundary="piece")
        assert all(doc[row["start"]:row["end"]] == row["text"] and row["tokens"] == enc.count(row["text"]) <= 16
                   and row["line"] == number + 1 and row["file"] == str(inputs) for row in mine)
    assert "chunks of at most 16 tokens from 4 documents" in capsys.readouterr().err
    assert [path.name for path in output.parent.iterdir()] == ["chunks.jsonl"]     # no temporary left
    with pytest.raises(SystemExit) as refused:
        cli.main(["chunk", str(inputs), "--encoding", "o200k_base", "--max-tokens", "0"])
    assert refused.value.code == 2 and "must be at least 1" in capsys.readouterr().err
