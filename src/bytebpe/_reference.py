"""Pure-Python byte-pair encoding: the algorithm read in one sitting, and the test oracle for the core.

Never imported at runtime. Slow on purpose: no tables, no heap, just the rule.
"""
from __future__ import annotations

from collections.abc import Mapping


def bpe_encode_piece(piece: bytes, mergeable_ranks: Mapping[bytes, int]) -> list[int]:
    """Ids of one pre-tokenized piece under `mergeable_ranks` (token bytes -> rank).

    Start from single bytes; while some adjacent pair concatenates to a token, merge the pair whose token
    has the lowest rank (the earliest-learned merge), the leftmost one on ties.

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258}
    >>> bpe_encode_piece(b"abc", ranks)     # a whole token is a single lookup
    [258]
    >>> bpe_encode_piece(b"abcbc", ranks)   # "ab" (256) merges before "bc" (257); then "bc" remains
    [256, 99, 257]
    """
    if piece in mergeable_ranks:
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
