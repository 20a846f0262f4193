"""The compiled merge loop equals the pure-Python reference (`bytebpe._reference`) on random inputs.

Random merge tables are built the way BPE training builds them (each merge joins two existing tokens,
ranked in the order learned), plus stray tokens no merge can reach, so that whole-piece lookups and
merging disagree whenever either side has a bug. Pieces longer than the flat-scan limit take the heap path,
and pieces of BUCKETS_LIMIT bytes or more the rank-bucket path.
"""
from __future__ import annotations

import random
import string

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import Encoding, _core
from bytebpe._core import BUCKETS_MIN_BYTES, SCAN_MAX_BYTES, MergeTable
from bytebpe._reference import bpe_encode_piece
from bytebpe.patterns import CL100K_PATTERN

SCAN_LIMIT = SCAN_MAX_BYTES  # pieces longer than this use the heap
BUCKETS_LIMIT = BUCKETS_MIN_BYTES  # pieces this long or longer use rank buckets


def random_merge_table(seed: int, n_merges: int, alphabet: bytes, inverted: bool = False) -> dict[bytes, int]:
    """All 256 bytes (in a shuffled rank order), then `n_merges` merges of existing tokens over `alphabet`.

    With `inverted`, the merged tokens' ranks are shuffled among themselves, so that a token often ranks
    below the tokens it is made of: merging a pair then completes a pair of *lower* rank, which must be
    merged before any other pair of the rank being processed.
    """
    rng = random.Random(seed)
    byte_order = list(range(256))
    rng.shuffle(byte_order)
    ranks = {bytes([b]): rank for rank, b in enumerate(byte_order)}
    reachable = [bytes([b]) for b in alphabet]
    for _ in range(n_merges):
        token = rng.choice(reachable) + rng.choice(reachable)
        if token not in ranks:
            ranks[token] = len(ranks)
            reachable.append(token)
    for _ in range(n_merges // 10):  # tokens no sequence of merges produces
        stray = bytes(rng.choice(alphabet) for _ in range(rng.randint(3, 6)))
        ranks.setdefault(stray, len(ranks))
    if inverted:
        merged = [token for token in ranks if len(token) > 1]
        shuffled = [ranks[token] for token in merged]
        rng.shuffle(shuffled)
        ranks.update(zip(merged, shuffled))
    return ranks


tables = st.builds(
    random_merge_table,
    seed=st.integers(0, 2**32 - 1),
    n_merges=st.integers(0, 400),
    alphabet=st.sampled_from([b"ab", b"abc", b"abcde ", bytes(range(256)), "é日😀a ".encode()]),
    inverted=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(ranks=tables, data=st.data())
def test_merge_loop_equals_reference(ranks, data):
    table = _core.MergeTable(ranks)
    alphabet = sorted({b for token in ranks if len(token) > 1 for b in token} or {0})
    piece = bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=3 * SCAN_LIMIT)))
    assert table.encode_single_piece(piece) == bpe_encode_piece(piece, ranks)


@settings(max_examples=300, deadline=None)
@given(ranks=tables, long_tokens=st.integers(0, 60), seed=st.integers(0, 2**32 - 1))
def test_short_pieces_of_every_length_equal_reference(ranks, long_tokens, seed):
    # The flat-scan merge of short pieces, with tokens of 9-16 bytes among the spans it looks up (a slot holds
    # only 8 bytes of them, the rest is compared in the blob): each length from 1 to 18, as tokens glued
    # together, cut anywhere and changed in one byte.
    rng = random.Random(seed)
    alphabet = sorted({b for token in ranks if len(token) > 1 for b in token} or {0})
    merged = [token for token in ranks if len(token) > 1] or [bytes([alphabet[0]])]
    for _ in range(long_tokens):   # long stray tokens, some of them inside the pieces below
        ranks.setdefault(b"".join(rng.choice(merged) for _ in range(6))[: rng.randint(9, 16)], len(ranks))
    table = _core.MergeTable(ranks)
    long_ones = [token for token in ranks if len(token) > 8] or merged
    for length in range(1, 19):
        glued = b"".join(rng.choice(long_ones if rng.random() < 0.3 else merged) for _ in range(length))
        start = rng.randrange(max(1, len(glued) - length + 1))
        piece = bytearray((glued * length)[start : start + length])
        if rng.random() < 0.5:
            piece[rng.randrange(length)] = rng.choice(alphabet)
        assert table.encode_single_piece(bytes(piece)) == bpe_encode_piece(bytes(piece), ranks), bytes(piece)


@settings(max_examples=100, deadline=None)
@given(ranks=tables, data=st.data())
def test_heap_path_equals_reference_on_long_pieces(ranks, data):
    table = _core.MergeTable(ranks)
    alphabet = sorted({b for token in ranks if len(token) > 1 for b in token} or {0})
    piece = bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=SCAN_LIMIT + 1, max_size=600)))
    assert table.encode_single_piece(piece) == bpe_encode_piece(piece, ranks)


@settings(max_examples=60, deadline=None)
@given(ranks=tables, data=st.data())
def test_bucket_path_equals_reference_on_long_runs(ranks, data):
    # Few distinct bytes in long runs: many pending pairs share a rank, and merges often complete a token
    # ranked below the pair just merged (random tables are full of such inversions).
    table = _core.MergeTable(ranks)
    alphabet = sorted({b for token in ranks if len(token) > 1 for b in token} or {0})[:3]
    runs = data.draw(st.lists(st.tuples(st.sampled_from(alphabet), st.integers(1, 40)), min_size=1, max_size=60))
    piece = b"".join(bytes([byte]) * count for byte, count in runs)
    piece = (piece * (BUCKETS_LIMIT // len(piece) + 1))[: BUCKETS_LIMIT + data.draw(st.integers(0, 500))]
    assert table.encode_single_piece(piece) == bpe_encode_piece(piece, ranks)


@settings(max_examples=200, deadline=None)
@given(piece=st.binary(min_size=1, max_size=300))
def test_random_bytes_equal_reference(piece):
    ranks = random_merge_table(7, 2000, bytes(range(256)))
    assert _core.MergeTable(ranks).encode_single_piece(piece) == bpe_encode_piece(piece, ranks)


def test_ties_merge_the_leftmost_pair_first():
    ranks = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"aaa": 257}
    table = _core.MergeTable(ranks)
    # "aaaa": aa|aa by leftmost-first. Were the middle pair merged first, a|aa|a would result.
    assert table.encode_single_piece(b"aaaa") == [256, 256] == bpe_encode_piece(b"aaaa", ranks)
    # "aaaaa": (aa)(aa)a, then "aa"+"a" (rank 257) beats nothing else: [256, 257]
    assert table.encode_single_piece(b"aaaaa") == bpe_encode_piece(b"aaaaa", ranks) == [256, 257]
    long_piece = b"a" * (3 * SCAN_LIMIT + 1)
    assert table.encode_single_piece(long_piece) == bpe_encode_piece(long_piece, ranks)


@pytest.mark.parametrize("length", [4, 5, SCAN_LIMIT + 3, BUCKETS_LIMIT + 1, 1001])
def test_a_merge_that_completes_a_lower_ranked_token_is_followed_by_that_token(length):
    # "yyy" ranks below "yy": after the first "yy", the pair ("yy", "y") outranks every other "y"+"y" pair.
    ranks = {bytes([b]): b for b in range(256)} | {b"yyy": 256, b"yy": 257}
    piece = b"y" * length
    expected = bpe_encode_piece(piece, ranks)
    assert expected[0] == 256      # yyy|..., not yy|yy|...
    assert _core.MergeTable(ranks).encode_single_piece(piece) == expected


def test_a_piece_that_is_a_token_is_one_id_even_if_merges_cannot_reach_it():
    ranks = {bytes([b]): b for b in range(256)} | {b"xyz": 256}
    assert _core.MergeTable(ranks).encode_single_piece(b"xyz") == [256]
    assert _core.MergeTable(ranks).encode_single_piece(b"xyzx") == list(b"xyzx")


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.tuples(st.sampled_from(list("abé日本😀")), st.integers(1, 60)), min_size=3, max_size=40),
       seed=st.integers(0, 2**32 - 1))
def test_long_unbroken_pieces_through_the_whole_pipeline_equal_the_reference(runs, seed):
    # Runs of letters are single pieces of tens to thousands of bytes: every merge path (flat scan, heap,
    # rank buckets) runs with the per-call merge cache and (left, right) pair memo, which is small for a
    # short text, so its entries are overwritten often.
    ranks = random_merge_table(seed, 400, "abé日本😀".encode(), inverted=seed % 2 == 0)
    enc = Encoding("random", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    text = "".join(char * count for char, count in runs)
    twice = f"{text}\n{text}"     # every piece twice: the second time it may come from the merge cache
    expected = [rank for piece in regex.findall(CL100K_PATTERN, twice) for rank in bpe_encode_piece(piece.encode(), ranks)]
    assert enc.encode_ordinary(twice) == expected


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab c'\n1é日😀")), max_size=200), seed=st.integers(0, 2**32 - 1))
def test_whole_pipeline_equals_regex_split_then_reference(text, seed):
    ranks = random_merge_table(seed, 300, "ab c'\n1é日😀".encode(), inverted=seed % 2 == 0)
    enc = Encoding("random", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    expected = [
        rank for piece in regex.findall(CL100K_PATTERN, text) for rank in bpe_encode_piece(piece.encode(), ranks)]
    assert enc.encode_ordinary(text) == expected
    assert enc.decode(expected) == text


# Words that make pieces of every kind the fused loop sorts: short tokens, longer ones, pieces that are no
# token (merged, then cache hits), pieces longer than any token, apostrophes and other scripts.
BATCH_WORDS = ["a", " a", " ab", "abc", " abcab", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", " é日", "'s", "1234567",
               "\n", "  ", " c", "cabbage", " 😀😀"]


@settings(max_examples=25, deadline=None)
@given(words=st.lists(st.sampled_from(BATCH_WORDS), min_size=_core.SCAN_BATCH, max_size=4 * _core.SCAN_BATCH),
       seed=st.integers(0, 2**32 - 1))
def test_texts_of_several_scan_batches_equal_the_reference_as_lists_and_arrays(words, seed):
    # The fused loop takes SCAN_BATCH pieces at a time and, within a batch, lists the pieces that are not a
    # short token in their home slot, then of those the ones that are no token: batches of every mix, ids
    # appended in order across the batches' ends.
    ranks = random_merge_table(seed, 200, "ab c'\n1é日😀".encode(), inverted=seed % 2 == 0)
    enc = Encoding("random", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    text = "".join(words)
    expected = [
        rank for piece in regex.findall(CL100K_PATTERN, text) for rank in bpe_encode_piece(piece.encode(), ranks)]
    assert enc.encode_ordinary(text) == expected
    assert enc.encode_to_numpy(text).tolist() == expected


@pytest.mark.parametrize("n", range(1, 17))
def test_the_head_word_of_a_piece_is_its_first_bytes_zero_padded_both_ways_it_is_read(n):
    # The table is built with `_head_word` (reads only the piece) and the fused loop looks pieces up with
    # `_head_word_of_8` (one 8-byte load and a mask): a difference would turn token pieces into merges.
    rng = random.Random(n)
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(max(n, 8) + rng.randrange(4)))
        expected = int.from_bytes(data[: min(n, 8)], "little")
        assert _core._head_words(data, n) == (expected, expected)


@pytest.mark.parametrize("length", range(1, 21))
def test_a_token_piece_of_every_length_is_one_id_wherever_it_ends(length):
    # Tokens that no merge reaches tell a whole-piece hit from merging. The fused loop reads a piece's head
    # word with one load where 8 bytes of text remain and byte by byte closer to the end: the token piece
    # ends 0 to 11 bytes before the end of the text, after ids of other pieces waiting to be appended. A
    # piece of the same length that differs from the token in its last byte only is not that token.
    rng = random.Random(length)
    word = "".join(rng.choice("xyzw") for _ in range(length))
    near = word[:-1] + "v"
    ranks = {bytes([b]): b for b in range(256)} | {word.encode(): 256, f" {word}".encode(): 257}
    enc = Encoding("strays", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for tail in range(12):
        text = f"{word} {word} {near}" + "!" * tail
        expected = [rank for piece in regex.findall(CL100K_PATTERN, text)
                    for rank in bpe_encode_piece(piece.encode(), ranks)]
        assert expected[:2] == [256, 257]
        assert enc.encode_ordinary(text) == expected
        assert enc.encode_to_numpy(text).tolist() == expected


def _twin_in_the_home_slot(length: int, longer: bool) -> tuple[str, bytes]:
    """A piece of `length` bytes (a space and letters) and a token that shares its head word (first 8 bytes,
    zero-padded) and home slot in a table of 257 tokens, and differs from it: in the last byte, or by one more
    byte (a NUL below 8 bytes, where the zero padding makes the head words equal)."""
    sizing = MergeTable({bytes([b]): b for b in range(256)} | {b"\x00" * (length + 1): 256})
    for seed in range(1000):
        stem = "".join(random.Random(seed).choice(string.ascii_letters) for _ in range(length - 2))
        pieces = [f" {stem}{last}" for last in string.ascii_letters]
        if longer:
            for piece in pieces:
                twin = piece.encode() + (b"\x00" if length < 8 else b"a")
                if sizing._home_slot(twin) == sizing._home_slot(piece.encode()):
                    return piece, twin
            continue
        by_home: dict[int, str] = {}
        for piece in pieces:
            found = by_home.setdefault(sizing._home_slot(piece.encode()), piece)
            if found != piece:
                return piece, found.encode()
    raise AssertionError("no piece shares a home slot with a twin")


@pytest.mark.parametrize("longer", [False, True], ids=["last-byte-differs", "one-byte-longer"])
@pytest.mark.parametrize("length", [3, 7, 8, 9, 10, 16, 17])
def test_a_piece_in_the_home_slot_of_a_token_with_its_head_word_is_that_token_only_if_equal(length, longer):
    # The fused loop takes a piece of up to 8 bytes for the token in its home slot when head word and length
    # agree; a longer one must match the rest too.
    piece, twin = _twin_in_the_home_slot(length, longer)
    ranks = {bytes([b]): b for b in range(256)} | {twin: 256}
    assert MergeTable(ranks)._home_slot(piece.encode()) == MergeTable(ranks)._home_slot(twin)
    enc = Encoding("twins", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for text in (piece, f"{piece}{piece}", f"{piece} {piece}!!!!!!!!"):
        expected = [rank for part in regex.findall(CL100K_PATTERN, text)
                    for rank in bpe_encode_piece(part.encode(), ranks)]
        assert 256 not in expected
        assert enc.encode_ordinary(text) == expected
        assert enc.encode_to_numpy(text).tolist() == expected


def test_a_longer_piece_in_the_home_slot_of_a_token_of_256_bytes_with_its_head_word_is_not_that_token():
    # With a token of 256+ bytes a slot's length is the plain length (MergeTable.length_mask), so 256 is a slot
    # length like any other: the fused loop's home-slot test, which takes only pieces of up to 8 bytes, must
    # not take a longer piece for such a token whose head word it shares.
    for letter in "abcdefghijklmnopqrstuvwxyz":
        token = f" {letter * 255}".encode()
        ranks = {bytes([b]): b for b in range(256)} | {token: 256}
        table = MergeTable(ranks)
        home = table._home_slot(token)
        if all(not 0 <= home - table._home_slot(bytes([b])) <= 16 for b in range(256)):
            break   # no single byte's slot in or just before the token's: it sits in its home slot
    assert table.length_mask == 0xFFFFFFFF
    rng = random.Random(5)
    for _ in range(100_000):
        piece = f" {letter * 7}" + "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(2, 32)))
        if table._home_slot(piece.encode()) == home:
            break
    else:
        raise AssertionError("no piece shares the token's home slot")
    enc = Encoding("long-token", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for text in (piece, f"{piece}{piece}!", f"x{token.decode()}{piece}"):
        expected = [rank for part in regex.findall(CL100K_PATTERN, text)
                    for rank in bpe_encode_piece(part.encode(), ranks)]
        assert enc.encode_ordinary(text) == expected
        assert enc.encode_to_numpy(text).tolist() == expected
    assert enc.encode_ordinary(token.decode()) == [256]


def _vocabulary_with_blob_of(total_bytes: int | None, longest: int) -> dict[bytes, int]:
    """All 256 bytes, filler tokens of bytes >= 0x80 up to `total_bytes` bytes of tokens in all (None: no
    filler) with one of `longest` bytes among them, then words of 9-40 and 64 letters (with and without a
    leading space) ranked last, so that their bytes lie at the end of the table's blob."""
    rng = random.Random(total_bytes or 0)
    words = {"".join(rng.choice("xyzw") for _ in range(n)) for n in [*range(9, 41), 64]}
    tokens = [bytes([b]) for b in range(256)]
    last = [spaced.encode() for word in sorted(words) for spaced in (word, f" {word}")]
    used = sum(map(len, tokens)) + sum(map(len, last))
    filler: set[bytes] = set()
    if longest > 255:
        filler.add(bytes([0x80]) * longest)
        used += longest
    high = bytes(b | 0x80 for b in range(256))
    while total_bytes is not None and used < total_bytes:
        remaining = total_bytes - used     # never left at 1: every single byte is a token already
        size = 255 if remaining >= 257 else remaining if remaining <= 255 else 128
        token = rng.randbytes(size).translate(high)
        if token not in filler:
            filler.add(token)
            used += size
    tokens += sorted(filler) + last
    assert sum(map(len, tokens)) == (total_bytes if total_bytes is not None else used)
    return {token: rank for rank, token in enumerate(tokens)}


@pytest.mark.parametrize(("total_bytes", "longest", "mask"), [
    (None, 0, 0xFF),                    # slots hold the tails' offsets
    ((1 << 24) - 1, 0, 0xFF),           # the last offsets that fit in 24 bits
    (1 << 24, 0, 0xFFFFFFFF),           # one byte more: the tails are found through token_start
    (None, 256, 0xFFFFFFFF),            # a token too long for an 8-bit length
], ids=["small", "blob-under-16MiB", "blob-of-16MiB", "token-of-256-bytes"])
def test_tokens_longer_than_8_bytes_are_found_in_both_slot_layouts(total_bytes, longest, mask):
    # A slot keeps a token's first 8 bytes; where lengths fit 8 bits and blob offsets 24, it also keeps
    # where the rest are (MergeTable.length_mask). Either way a long token is found, and a piece with its
    # length and head word that differs after byte 8 is not it.
    ranks = _vocabulary_with_blob_of(total_bytes, longest)
    table = MergeTable(ranks)
    assert table.length_mask == mask
    long_tokens = [token for token in ranks if len(token) > 8 and token[-1] < 0x80]
    assert len(long_tokens) == 2 * 33
    for token in long_tokens:
        assert table.rank(token) == ranks[token]
        for at in (8, len(token) // 2 + 4, len(token) - 1):   # one byte changed after the head word
            twin = token[:at] + b"v" + token[at + 1 :]
            assert table.rank(twin) is None
            assert table.encode_single_piece(twin) == bpe_encode_piece(twin, ranks)
    if longest > 255:
        assert table.rank(bytes([0x80]) * longest) == ranks[bytes([0x80]) * longest]
    enc = Encoding("layouts", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    text = " ".join(token.decode().strip() + suffix for token in long_tokens[::7] for suffix in ("", "v"))
    expected = [rank for piece in regex.findall(CL100K_PATTERN, text)
                for rank in bpe_encode_piece(piece.encode(), ranks)]
    assert enc.encode_ordinary(text) == expected
    assert enc.encode_to_numpy(text).tolist() == expected
