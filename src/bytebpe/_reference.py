"""Pure-Python byte-pair encoding: the algorithm read in one sitting, and the test oracle for the core.

Never imported at runtime. Slow on purpose: no tables, no heap, just the rule.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence


def bpe_encode_piece(piece: bytes, mergeable_ranks: Mapping[bytes, int], *, whole_pieces: bool = True) -> list[int]:
    """Ids of one pre-tokenized piece under `mergeable_ranks` (token bytes -> rank).

    Start from single bytes; while some adjacent pair concatenates to a token, merge the pair whose token
    has the lowest rank (the earliest-learned merge), the leftmost one on ties.

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258}
    >>> bpe_encode_piece(b"abc", ranks)     # a whole token is a single lookup
    [258]
    >>> bpe_encode_piece(b"abcbc", ranks)   # "ab" (256), then the last "bc" (257), then "ab" + "c" (258)
    [258, 257]

    `whole_pieces=False` skips the whole-piece lookup (to compare the merge rules alone).
    """
    if whole_pieces and piece in mergeable_ranks:
        return [mergeable_ranks[piece]]
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best_index, best_rank = -1, None
        for i in range(len(parts) - 1):
            rank = mergeable_ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best_index, best_rank = i, rank
        if best_rank is None:
            break
        parts[best_index : best_index + 2] = [parts[best_index] + parts[best_index + 1]]
    return [mergeable_ranks[part] for part in parts]


def bpe_encode_piece_by_pair_rank(
    piece: bytes,
    token_ids: Mapping[bytes, int],
    merges: Sequence[tuple[bytes, bytes]] | Mapping[tuple[bytes, bytes], int],
    *,
    ignore_merges: bool = False,
) -> list[int]:
    """Ids of one piece under HF `tokenizers`' BPE rule: merges by the rank of the *pair*.

    `token_ids` maps token bytes to ids; merge i joins the adjacent parts `merges[i]` (a pair listed twice
    keeps its last index, as HF's map does; a mapping pair -> rank may be passed instead). Start from the single bytes that are tokens (the others are
    dropped, as HF drops a character without an id when there is no unk token); while some adjacent pair
    is listed, merge the one listed first, the leftmost on ties. A token that no listed pair makes from
    the piece is never produced. With `ignore_merges`, a piece that is itself a token is that token.

    >>> ids = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258}
    >>> merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]
    >>> bpe_encode_piece_by_pair_rank(b"abc", ids, merges)   # (b, c) first; (a, bc) is no merge
    [97, 257]
    >>> bpe_encode_piece_by_pair_rank(b"abc", ids, merges, ignore_merges=True)
    [258]
    >>> bpe_encode_piece(b"abc", ids)                        # the token-rank rule takes "abc" whole
    [258]
    """
    if ignore_merges and piece in token_ids:
        return [token_ids[piece]]
    pair_rank = merges if isinstance(merges, Mapping) else {pair: index for index, pair in enumerate(merges)}
    parts = [piece[i : i + 1] for i in range(len(piece)) if piece[i : i + 1] in token_ids]
    while len(parts) > 1:
        ranked = [(pair_rank[pair], i) for i, pair in enumerate(zip(parts, parts[1:])) if pair in pair_rank]
        if not ranked:
            break
        _rank, best = min(ranked)
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return [token_ids[part] for part in parts]


def bpe_train(
    piece_counts: Mapping[bytes, int],
    n_merges: int,
    *,
    min_frequency: int = 1,
    max_token_length: int | None = None,
) -> list[tuple[int, int]]:
    """The merges BPE training learns from pre-tokens (bytes) and their counts: the seeds' loop on bytes.

    Each round counts every adjacent pair of ids in every piece (times the piece's count) and merges the
    best pair: the highest count, and among equal counts the smallest (left id, right id). Merge i gets
    id 256 + i and replaces each non-overlapping occurrence, scanning left to right. A pair whose merged
    token would exceed `max_token_length` bytes is never chosen; training stops early when no pair is
    left or the best count is below `min_frequency`.

    >>> bpe_train({b"aaa": 1}, 5)       # (a, a) counts 2 in "aaa"; replaced once, leftmost: [aa, a]
    [(97, 97), (256, 97)]
    """
    words = [(list(piece), count) for piece, count in piece_counts.items() if count > 0]
    token_len = [1] * 256
    merges: list[tuple[int, int]] = []
    while len(merges) < n_merges:
        pair_counts: dict[tuple[int, int], int] = {}
        for ids, count in words:
            for pair in zip(ids, ids[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + count
        allowed = [
            (count, pair) for pair, count in pair_counts.items()
            if max_token_length is None or token_len[pair[0]] + token_len[pair[1]] <= max_token_length
        ]
        if not allowed:
            break
        best_count, best = min(allowed, key=lambda item: (-item[0], item[1]))
        if best_count < min_frequency:
            break
        new_id = 256 + len(merges)
        merges.append(best)
        token_len.append(token_len[best[0]] + token_len[best[1]])
        words = [(_replace_pair(ids, best, new_id), count) for ids, count in words]
    return merges


def _replace_pair(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """`ids` with each non-overlapping occurrence of `pair` replaced by `new_id`, leftmost first."""
    out: list[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
