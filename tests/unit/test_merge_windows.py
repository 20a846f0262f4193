"""Long pieces merge window by window (_merge_windows.pxi): cut only where no token's bytes can span the cut,
and each window merged alone, with the ids of one merge of the whole piece -- tiktoken's under its rule, HF's
under the pair-rank rule. Every cut is checked against the vocabulary by brute force."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _core
from bytebpe._core import WINDOW_BYTES, WINDOWS_MIN_BYTES
from .test_huge_documents import tiktoken_oracle
from .test_pair_rank import core_table, hf_ids, hf_model, random_pair_vocab


def long_pieces(seed: int) -> dict[str, bytes]:
    """Pieces of a few windows that repeat nothing, as a pattern passes them whole (random data). (Words run
    together -- "theofandthe..." -- have a token across nearly every offset, so they are rarely cut.)"""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    n = 2 * WINDOWS_MIN_BYTES + WINDOW_BYTES    # three windows at least
    return {
        "lowercase": "".join(rng.choices(letters, k=n)).encode(),
        "mixed case": "".join(rng.choices(letters + letters.upper(), k=n)).encode(),
        "CJK": "".join(chr(rng.randrange(0x4E00, 0xA000)) for _ in range(n // 3)).encode(),
        "letters and accents": "".join(rng.choices(letters + "éèüñçåøß", k=n)).encode(),
    }


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("kind", list(long_pieces(0)))
def test_long_pieces_merged_by_windows_have_tiktokens_ids(name, kind, tiktoken_encoding):
    reference = tiktoken_encoding(name)
    table = _core.MergeTable(reference._mergeable_ranks)
    piece = long_pieces(len(kind) + len(name))[kind]
    cuts = table.window_cuts(piece)
    assert len(cuts) >= 2, "the piece was not cut: this test would compare one merge with itself"
    assert all(b - a >= WINDOW_BYTES for a, b in zip([0, *cuts], cuts))
    expected = reference._encode_single_piece(piece)
    assert table.merge_bytes(piece) == expected
    assert table.merge_bytes(piece, windows=False) == expected


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_no_token_spans_a_window_cut(name, tiktoken_encoding):
    # The cut rule checks hashed 2-4 byte grams; here every token that could span each cut is looked up.
    ranks = tiktoken_encoding(name)._mergeable_ranks
    table = _core.MergeTable(ranks)
    longest = max(map(len, ranks))
    for kind, piece in long_pieces(1).items():
        for cut in table.window_cuts(piece):
            assert piece[cut] & 0xC0 != 0x80, (kind, cut)     # a character boundary
            for start in range(max(0, cut - longest + 1), cut):
                for end in range(cut + 1, min(len(piece), start + longest) + 1):
                    assert piece[start:end] not in ranks, (kind, cut, piece[start:end])


def spanning_vocab(seed: int) -> dict[bytes, int]:
    """Ranks made as a trainer makes them (each new token joins two earlier ones), favouring long tokens, so
    that many tokens of 4+ bytes join parts whose junction is no 2- or 3-byte token: offsets that only the
    4-byte grams of the cut rule show to be spanned."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    tokens = [bytes([b]) for b in b"abcdef"]
    while len(tokens) < 70:
        left, right = rng.choice(tokens), rng.choice(tokens[len(tokens) // 2:])
        if left + right not in ranks and len(left + right) <= 12:
            ranks[left + right] = len(ranks)
            tokens.append(left + right)
    return ranks


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_cuts_avoid_long_tokens_that_join_at_no_short_token(seed):
    ranks = spanning_vocab(seed)
    table = _core.MergeTable(ranks)
    rng = random.Random(seed)
    piece = b"".join(rng.choice(list(ranks)[256:] + [b"a", b"b", b"c", b"d", b"e", b"f"])
                     for _ in range(WINDOWS_MIN_BYTES // 3))
    longest = max(map(len, ranks))
    for cut in table.window_cuts(piece):
        for start in range(cut - longest + 1, cut):
            for end in range(cut + 1, start + longest + 1):
                assert piece[start:end] not in ranks, (cut, piece[start:end])
    assert table.merge_bytes(piece) == tiktoken_oracle(ranks)._encode_single_piece(piece)


def test_a_piece_with_no_cut_merges_whole():
    # "abab...": every offset lies inside the token "abab" or its like, so nothing can be cut.
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"ab", b"abab", b"ba", b"bab"):
        ranks[token] = len(ranks)
    table = _core.MergeTable(ranks)
    piece = b"ab" * WINDOWS_MIN_BYTES
    assert table.window_cuts(piece) == []
    assert table.merge_bytes(piece) == [ranks[b"abab"]] * (WINDOWS_MIN_BYTES // 2)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), drop_bytes=st.booleans(), n_merges=st.integers(50, 600))
def test_long_pieces_merged_by_windows_under_the_pair_rank_rule_have_hfs_ids(seed, drop_bytes, n_merges):
    # HF's rule with adversarial vocabularies (tests/unit/test_pair_rank.py), some bytes without a token.
    token_ids, merges = random_pair_vocab(seed, n_merges, b"abcdefghij", drop_bytes)
    table = core_table(token_ids, merges, ignore_merges=False)
    piece = bytes(random.Random(seed).choices(b"abcdefghij", k=2 * WINDOWS_MIN_BYTES + 999))
    cuts = table.window_cuts(piece)
    assert len(cuts) >= 2, "the piece was not cut: this test would compare one merge with itself"
    expected = hf_ids(hf_model(token_ids, merges, ignore_merges=False), piece)
    assert table.merge_bytes(piece) == expected
    assert table.merge_bytes(piece, windows=False) == expected
    for cut in cuts:
        assert all(bytes([b]) in token_ids for b in piece[cut - 3:cut + 3])
