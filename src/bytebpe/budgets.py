"""Token budgets: the longest prefix of an ordinary text that fits in a number of tokens, exactly.

Token counts are not monotone in the length of a prefix — a longer prefix can merge into fewer tokens, and a
split pattern can cut a prefix's end differently from the whole text's — so cutting the ids of the whole
text (``decode(ids[:n])``) can give a text that encodes to more than n tokens, or stop short of the longest
one that fits. The search here is exact, and reads only the text near the cut.

Why it is exact. The compiled scanner reports, for each piece of the text, the furthest byte its match looked
at (`Scanner.pieces_seen`). Let S_i be the largest of those over pieces 1..i and F_i their token count. A
prefix of k bytes with k > S_i is cut into pieces 1..i exactly as the whole text is (their matches looked at
nothing that the prefix changes), followed by the pieces of the rest of the prefix, so

    count(prefix k) = F_j + count(the prefix's own pieces after piece j),   j = the number of i with S_i < k,

and count(prefix k) >= F_j, which never decreases as k grows. With i* the first piece where F exceeds the
budget, every prefix longer than S_i* has more tokens than the budget: the answer is the longest prefix of at
most S_i* bytes that fits, found by trying each character boundary from there down, each by the formula above
(only the prefix's last pieces are cut and merged again). The text is read in windows that grow until they
hold S_i*, so a 4 MB text truncated to 100 tokens reads a few hundred bytes of it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["longest_fitting_prefix"]

_FIRST_WINDOW_CHARS = 256
_CHARS_PER_TOKEN_GUESS = 8      # the first window: enough for the budget on most text, then doubled
_BATCH_PIECES = 1024


def longest_fitting_prefix(scanner: Any, table: Any, text: str, start: int, stop: int, budget: int,
                           limit: int, at_pieces: bool = False) -> tuple[int, int]:
    """(k, its tokens) for the largest k <= `limit` such that the ordinary text ``text[start:start + k]`` has
    at most `budget` tokens, cut into pieces by the compiled `scanner` and merged by the MergeTable `table`;
    the text ends at `stop` (``limit <= stop - start``). `text` must have no surrogates (its UTF-8 is the one
    the tokens are counted on). Reads ``text[start:stop]`` only as far as the answer needs. With `at_pieces`,
    k is where one of the text's pieces ends (or 0): the pieces before k are the text's own, whole."""
    size = stop - start
    window = min(size, max(_FIRST_WINDOW_CHARS, _CHARS_PER_TOKEN_GUESS * budget))
    while True:
        found = _search(scanner, table, text[start:start + window], window >= size, budget, limit, at_pieces)
        if found is not None:
            return found
        window = min(size, 2 * window)


def _search(scanner: Any, table: Any, window: str, whole: bool, budget: int, limit: int,
            at_pieces: bool) -> tuple[int, int] | None:
    """The answer from `window`, the text's first characters (all of them if `whole`), or None when they do
    not settle it. (The search itself runs in the compiled core: MergeTable.longest_prefix.)"""
    data = window.encode("utf-8")
    limit_bytes = len(window[:limit].encode("utf-8")) if limit < len(window) else len(data) + 1
    found = table.longest_prefix(scanner, data, budget, limit_bytes, whole, at_pieces)
    if found is None:
        return None
    k, tokens = found
    return (k if window.isascii() else len(data[:k].decode("utf-8"))), tokens
