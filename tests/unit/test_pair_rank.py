"""The pair-rank rule (HF `tokenizers`' BPE) in the compiled core equals `_reference.py` and HF itself.

Random vocabularies are built as HF's trainer builds them (each merge joins two existing tokens), then made
adversarial: ids shuffled (independent of merge ranks), merges listed in a shuffled order (a merge may come
before the merges that make its parts), extra merges that make an existing token from another split, a pair
listed twice, stray tokens no merge makes, and sometimes single bytes left out of the vocabulary (HF drops
such a byte, and its neighbours become adjacent). Pieces longer than the flat-scan limit take the heap path.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _core
from bytebpe._core import SCAN_MAX_BYTES
from bytebpe._reference import bpe_encode_piece, bpe_encode_piece_by_pair_rank
from bytebpe.hf_json import _byte_to_char

SCAN_LIMIT = SCAN_MAX_BYTES  # longer pieces (after dropping unknown bytes) use the heap

BYTE_CHARS = _byte_to_char()


def random_pair_vocab(seed: int, n_merges: int, alphabet: bytes, drop_bytes: bool = False
                      ) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]]]:
    """(token bytes -> id, merges as byte pairs in rank order) with the adversarial twists above."""
    rng = random.Random(seed)
    tokens = [bytes([b]) for b in range(256)]
    if drop_bytes:
        missing = set(rng.sample(list(alphabet), k=max(1, len(alphabet) // 4)))
        tokens = [t for t in tokens if t[0] not in missing]
    reachable = [t for t in tokens if t[0] in alphabet]
    known = set(tokens)
    merges: list[tuple[bytes, bytes]] = []
    for _ in range(n_merges):
        if not reachable:
            break
        left, right = rng.choice(reachable), rng.choice(reachable)
        merges.append((left, right))    # may repeat an existing pair or make an existing token another way
        if left + right not in known:
            known.add(left + right)
            tokens.append(left + right)
            reachable.append(left + right)
    for _ in range(n_merges // 10):     # tokens no merge makes
        stray = bytes(rng.choice(alphabet) for _ in range(rng.randint(2, 5)))
        if stray not in known:
            known.add(stray)
            tokens.append(stray)
    # Another split of an existing token, when both halves are tokens.
    for token in rng.sample(tokens, k=min(len(tokens), n_merges // 5)):
        for cut in range(1, len(token)):
            if token[:cut] in known and token[cut:] in known:
                merges.append((token[:cut], token[cut:]))
                break
    if seed % 3:
        rng.shuffle(merges)
    else:   # mostly in order, with some pairs swapped: HF's order with local inversions
        for _ in range(len(merges) // 4):
            i, j = rng.randrange(len(merges) or 1), rng.randrange(len(merges) or 1)
            if merges:
                merges[i], merges[j] = merges[j], merges[i]
    ids = list(range(len(tokens) + rng.randint(0, 20)))
    rng.shuffle(ids)
    return dict(zip(tokens, ids)), merges


def core_table(token_ids: dict[bytes, int], merges: list[tuple[bytes, bytes]], ignore_merges: bool
               ) -> _core.MergeTable:
    return _core.MergeTable.from_pair_merges(
        token_ids, [(token_ids[a], token_ids[b]) for a, b in merges], ignore_merges)


def hf_model(token_ids: dict[bytes, int], merges: list[tuple[bytes, bytes]], ignore_merges: bool):
    from tokenizers.models import BPE

    def text(token: bytes) -> str:
        return "".join(BYTE_CHARS[b] for b in token)

    return BPE({text(t): i for t, i in token_ids.items()}, [(text(a), text(b)) for a, b in merges],
               ignore_merges=ignore_merges)


def hf_ids(model, piece: bytes) -> list[int]:
    return [token.id for token in model.tokenize("".join(BYTE_CHARS[b] for b in piece))]


vocabularies = st.builds(
    random_pair_vocab,
    seed=st.integers(0, 2**32 - 1),
    n_merges=st.integers(0, 300),
    alphabet=st.sampled_from([b"ab", b"abc", b"abcde ", "é日😀a ".encode()]),
    drop_bytes=st.booleans(),
)


def check_piece(vocab, ignore_merges: bool, data, min_size: int, max_size: int, with_hf: bool) -> None:
    """Draw a piece over the merges' bytes; the core (and HF's model) must give the reference's ids."""
    token_ids, merges = vocab
    table = core_table(token_ids, merges, ignore_merges)
    alphabet = sorted({b for pair in merges for part in pair for b in part} or {97})
    piece = bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size)))
    expected = bpe_encode_piece_by_pair_rank(piece, token_ids, merges, ignore_merges=ignore_merges)
    assert table.encode_single_piece(piece) == expected
    if with_hf:
        assert hf_ids(hf_model(token_ids, merges, ignore_merges), piece) == expected


@settings(max_examples=250, deadline=None)
@given(vocab=vocabularies, ignore_merges=st.booleans(), data=st.data())
def test_core_equals_reference_and_hf(vocab, ignore_merges, data):
    check_piece(vocab, ignore_merges, data, 1, 3 * SCAN_LIMIT, with_hf=True)


@settings(max_examples=100, deadline=None)
@given(vocab=vocabularies, ignore_merges=st.booleans(), data=st.data())
def test_heap_path_equals_reference_on_long_pieces(vocab, ignore_merges, data):
    check_piece(vocab, ignore_merges, data, SCAN_LIMIT + 1, 700, with_hf=True)


@settings(max_examples=40, deadline=None)
@given(vocab=vocabularies, ignore_merges=st.booleans())
def test_every_token_encoded_whole_equals_reference(vocab, ignore_merges):
    # A piece that is itself a token: found whole only when the rule (or ignore_merges) gives that token.
    token_ids, merges = vocab
    table = core_table(token_ids, merges, ignore_merges)
    for token in token_ids:
        expected = bpe_encode_piece_by_pair_rank(token, token_ids, merges, ignore_merges=ignore_merges)
        assert table.encode_single_piece(token) == expected


def issue_example() -> tuple[dict[bytes, int], list[tuple[bytes, bytes]]]:
    token_ids = {bytes([b]): b for b in range(256)} | {b"bc": 256, b"ab": 257, b"abc": 258}
    return token_ids, [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]


def test_issue_example_pair_rank_against_token_rank():
    # merges (b, c) before (a, b), token "abc" made by (ab, c): HF gives [a, bc], tiktoken's rule [abc].
    token_ids, merges = issue_example()
    for piece in (b"abc", b"xabcx", b"abc" * 30):      # whole, inside a piece, on the heap path
        ids = core_table(token_ids, merges, False).encode_single_piece(piece)
        assert ids == bpe_encode_piece_by_pair_rank(piece, token_ids, merges) == hf_ids(
            hf_model(token_ids, merges, False), piece)
    assert core_table(token_ids, merges, False).encode_single_piece(b"abc") == [ord("a"), 256]
    assert _core.MergeTable(token_ids).encode_single_piece(b"abc") == [258] == bpe_encode_piece(b"abc", token_ids)
    # ignore_merges: a piece that is a token is that token; inside a longer piece the merges still rule.
    assert core_table(token_ids, merges, True).encode_single_piece(b"abc") == [258]
    assert core_table(token_ids, merges, True).encode_single_piece(b"abcx") == [ord("a"), 256, ord("x")]


def test_ties_merge_the_leftmost_pair_first():
    token_ids = {bytes([b]): b for b in range(256)} | {b"aa": 300, b"aaa": 256}
    merges = [(b"a", b"a"), (b"aa", b"a")]
    for length in (4, 5, SCAN_LIMIT + 3, 1001):
        piece = b"a" * length
        assert core_table(token_ids, merges, False).encode_single_piece(piece) == \
            bpe_encode_piece_by_pair_rank(piece, token_ids, merges)
    assert core_table(token_ids, merges, False).encode_single_piece(b"aaaa") == [300, 300]


def test_a_byte_without_a_token_is_dropped_and_its_neighbours_merge():
    token_ids = {b"a": 0, b"c": 1, b"ac": 2}
    table = core_table(token_ids, [(b"a", b"c")], False)
    assert table.encode_single_piece(b"abc") == [2] == hf_ids(hf_model(token_ids, [(b"a", b"c")], False), b"abc")
    assert table.encode_single_piece(b"b") == []
    assert table.encode_single_piece(b"b" * 100 + b"ac") == [2]


def test_a_pair_listed_twice_keeps_its_last_rank():
    token_ids = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257}
    merges = [(b"a", b"b"), (b"b", b"c"), (b"a", b"b")]
    table = core_table(token_ids, merges, False)
    assert table.pair_merge(97, 98) == (2, 256)
    assert table.encode_single_piece(b"abc") == [97, 257] == bpe_encode_piece_by_pair_rank(b"abc", token_ids, merges)
    assert hf_ids(hf_model(token_ids, merges, False), b"abc") == [97, 257]


@pytest.mark.parametrize("merges, message", [
    ([(97, 98)], "makes b'ab', which is not a token"),
    ([(97, 5000)], "names id 5000, which is not a token"),
    ([(97,)], "must be a (left id, right id) pair"),
    ([(-1, 97)], "names id -1"),
])
def test_bad_merges_are_refused(merges, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _core.MergeTable.from_pair_merges({bytes([b]): b for b in range(256)}, merges)


def test_token_rank_tables_are_unchanged():
    table = _core.MergeTable({bytes([b]): b for b in range(256)})
    assert not table.by_pair_rank and table.pair_merge(97, 98) is None


@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab c'\n1é日😀")), max_size=200), seed=st.integers(0, 2**32 - 1),
       ignore_merges=st.booleans())
def test_whole_pipeline_equals_regex_split_then_reference(text, seed, ignore_merges):
    # Through Encoding: the compiled scanner's fused loop (whole-piece lookups, merge cache, piece cache)
    # and the regex engine's path.
    import regex

    from bytebpe import Encoding
    from bytebpe.patterns import CL100K_PATTERN

    token_ids, merges = random_pair_vocab(seed, 300, "ab c'\n1é日😀".encode())
    table = core_table(token_ids, merges, ignore_merges)
    text = f"{text}\n{text}"     # every piece twice: the second time it may come from the merge cache
    expected = [i for piece in regex.findall(CL100K_PATTERN, text) for i in bpe_encode_piece_by_pair_rank(
        piece.encode(), token_ids, merges, ignore_merges=ignore_merges)]
    for pretokenizer in ("compiled", "regex"):
        enc = Encoding._from_table("pairs", pat_str=CL100K_PATTERN, table=table, special_tokens={},
                                   pretokenizer=pretokenizer)
        assert enc.encode_ordinary(text) == expected


# ---- merges that are tiktoken's rule in disguise ---------------------------------------------------------------
# A tokenizer.json made from a tiktoken vocabulary lists, for each token, the two parts tiktoken's rule leaves
# on its bytes, in id order; from_pair_merges then merges by tiktoken's rule (MergeTable._is_token_rank_rule
# has the proof). Checked here against the pair-rank reference and HF on vocabularies made that way, and on
# the same after one edit that may or may not break the equivalence: the ids may never tell.


def token_rank_split(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes] | None:
    """The two parts tiktoken's rule stops at on `token`'s bytes when it may not make `token` itself."""
    without = {t: r for t, r in ranks.items() if t != token}
    parts = bpe_encode_piece(token, without, whole_pieces=False)
    by_rank = {r: t for t, r in without.items()}
    return (by_rank[parts[0]], by_rank[parts[1]]) if len(parts) == 2 else None


def tiktoken_shaped_vocab(seed: int, n_tokens: int, alphabet: bytes, edit: str
                          ) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]]]:
    """Ranks grown by joining two tokens at random (ids in the order made); merges: each token's split,
    in id order; then `edit`: none, two merges swapped, one dropped, another split of a token added, or
    two tokens' ids swapped."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    pool = [bytes([b]) for b in alphabet]
    while len(ranks) < 256 + n_tokens:
        token = rng.choice(pool) + rng.choice(pool)
        if token not in ranks and len(token) <= 12:
            ranks[token] = len(ranks)
            pool.append(token)
    splits = [(token, token_rank_split(token, ranks)) for token in sorted(ranks, key=ranks.get) if len(token) > 1]
    merges = [split for _, split in splits if split is not None]
    if edit == "swap" and len(merges) > 1:
        i, j = rng.sample(range(len(merges)), 2)
        merges[i], merges[j] = merges[j], merges[i]
    elif edit == "drop" and merges:
        del merges[rng.randrange(len(merges))]
    elif edit == "another split":
        token = rng.choice([t for t in ranks if len(t) > 1] or [b"ab"])
        cuts = [c for c in range(1, len(token)) if token[:c] in ranks and token[c:] in ranks]
        if cuts:
            merges.insert(rng.randrange(len(merges) + 1), (token[:(cut := rng.choice(cuts))], token[cut:]))
    elif edit == "swap ids" and len(ranks) > 257:
        a, b = rng.sample([t for t in ranks if len(t) > 1], 2) if n_tokens > 1 else (b"a", b"b")
        ranks[a], ranks[b] = ranks[b], ranks[a]
    return ranks, merges


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_tokens=st.integers(1, 150),
       alphabet=st.sampled_from([b"ab", b"abc", b"abcde "]),
       edit=st.sampled_from(["none", "none", "swap", "drop", "another split", "swap ids"]),
       ignore_merges=st.booleans(), data=st.data())
def test_merges_of_a_tiktoken_vocabulary_give_the_pair_rank_ids_by_tiktokens_rule(
        seed, n_tokens, alphabet, edit, ignore_merges, data):
    token_ids, merges = tiktoken_shaped_vocab(seed, n_tokens, alphabet, edit)
    table = core_table(token_ids, merges, ignore_merges)
    kept = _core.MergeTable.from_pair_merges(
        token_ids, [(token_ids[a], token_ids[b]) for a, b in merges], ignore_merges, detect_token_rank=False)
    assert kept.by_pair_rank
    if edit == "none":
        assert not table.by_pair_rank, "a tiktoken vocabulary's own merges were not recognised"
    model = hf_model(token_ids, merges, ignore_merges)
    pieces = [token for token in token_ids if len(token) > 1] + [
        bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=3 * SCAN_LIMIT)))
        for _ in range(20)]
    for piece in pieces:
        expected = bpe_encode_piece_by_pair_rank(piece, token_ids, merges, ignore_merges=ignore_merges)
        assert table.encode_single_piece(piece) == expected == kept.encode_single_piece(piece), piece
        assert hf_ids(model, piece) == expected


def test_gpt2s_own_tokenizer_json_merges_by_tiktokens_rule_with_r50ks_ids(data_dir):
    # GPT-2's file (from vocab.bpe, without ignore_merges; the corpora check it against HF elsewhere).
    import bytebpe

    from ..hf_files import gpt2_tokenizer

    gpt2 = bytebpe.from_tokenizer_json(gpt2_tokenizer(data_dir).to_str())
    assert not gpt2._table.by_pair_rank
    text = "Hello world, 1234 ünïcödé 日本語 \n\n  x" * 3
    assert gpt2.encode_ordinary(text) == bytebpe.get_encoding("r50k_base").encode_ordinary(text)


# ---- runs of one byte (_merge_run by pair rank) -----------------------------------------------------------------

RUN_MIN_BYTES = 4096    # _core.pyx's RUN_MIN_BYTES: a one-byte piece this long merges as runs of equal parts


def run_vocab(seed: int, lengths: list[int]) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]]]:
    """Tokens b"a" * L for the given lengths, each made by a random split into two tokens already there
    (sometimes two splits, listed twice), merges in a random order; other bytes' tokens around them."""
    rng = random.Random(seed)
    tokens = [bytes([b]) for b in range(256)]
    made = {1}
    merges = []
    for length in sorted(set(lengths)):
        splits = [cut for cut in range(1, length) if cut in made and length - cut in made]
        if not splits:
            continue
        for cut in rng.sample(splits, k=min(len(splits), rng.choice([1, 1, 2]))):
            merges.append((b"a" * cut, b"a" * (length - cut)))
        if length not in made:
            made.add(length)
            tokens.append(b"a" * length)
    rng.shuffle(merges)
    ids = list(range(len(tokens)))
    rng.shuffle(ids)
    return dict(zip(tokens, ids)), merges


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(2, 12), min_size=1, max_size=11),
       extra=st.integers(0, 300), ignore_merges=st.booleans())
def test_runs_of_one_byte_equal_hf_whatever_the_merge_order(seed, lengths, extra, ignore_merges):
    # The run merge takes a whole run's pairs at once only when no pair that creates ranks below them, and
    # hands every other case to the general path: random orders reach both. HF's model is the oracle.
    token_ids, merges = run_vocab(seed, lengths)
    table = core_table(token_ids, merges, ignore_merges)
    model = hf_model(token_ids, merges, ignore_merges)
    for size in (RUN_MIN_BYTES + extra, RUN_MIN_BYTES - 1 + extra % 2):
        piece = b"a" * size
        assert table.encode_single_piece(piece) == hf_ids(model, piece), size


# Merge lists (as lengths of b"a" parts, in rank order) where merging a whole run's pairs at once would not be
# BPE's order: a pair the first merge creates ranks below the run's own pair, so BPE takes it in between.
INVERSIONS = {
    "(2L, L) first": [(2, 1), (1, 1)],                          # BPE: aaa aaa ...
    "(2L, 2L) then (4L, L)": [(4, 1), (2, 2), (1, 1)],          # BPE: aaaaa aaaaa ...
    "after a neighbour run": [(1, 1), (2, 1), (2, 2), (4, 1), (5, 2), (3, 2)],
    "before a neighbour run": [(2, 1), (2, 2), (1, 1), (4, 2), (4, 4)],
}


@pytest.mark.parametrize("order", INVERSIONS)
@pytest.mark.parametrize("size", [RUN_MIN_BYTES, RUN_MIN_BYTES + 1, RUN_MIN_BYTES + 2, RUN_MIN_BYTES + 3, 5001])
def test_runs_whose_pairs_bpe_interleaves_equal_hf(order, size):
    merges = [(b"a" * left, b"a" * right) for left, right in INVERSIONS[order]]
    tokens = [bytes([b]) for b in range(256)] + sorted({a + b for a, b in merges}, key=len)
    token_ids = {token: i for i, token in enumerate(tokens)}
    piece = b"a" * size
    for ignore_merges in (False, True):
        expected = hf_ids(hf_model(token_ids, merges, ignore_merges), piece)
        assert core_table(token_ids, merges, ignore_merges).encode_single_piece(piece) == expected


@pytest.fixture(scope="module")
def gpt2_file(data_dir):
    """GPT-2's tokenizer in HF and its import's table, built once: ~4 s each under ASan."""
    from bytebpe import from_tokenizer_json

    from ..hf_files import gpt2_tokenizer

    tok = gpt2_tokenizer(data_dir)
    return tok, from_tokenizer_json(tok.to_str())._table


@pytest.mark.parametrize("byte", list(b"a -=x.#*_~\t\n!0") + [0xE6, 0xFF])
def test_runs_of_one_byte_equal_hf_on_gpt2s_file(byte, gpt2_file):
    tok, table = gpt2_file
    for size in (RUN_MIN_BYTES, RUN_MIN_BYTES + 1, RUN_MIN_BYTES + 7, 6000 + byte):
        piece = bytes([byte]) * size
        expected = [token.id for token in tok.model.tokenize("".join(BYTE_CHARS[b] for b in piece))]
        assert table.encode_single_piece(piece) == expected, (byte, size)
