"""tiktoken's `encode_with_unstable`: the ids of a text that more text cannot change, and every way the rest
can come out once more text follows.

The reference is tiktoken's own (`CoreBPE._encode_unstable_native`), whose completions this reproduces as a
set, rule for rule, including its approximations (they are its contract, not bytebpe's to fix):

- The unstable part is the last piece's tokens (tiktoken's `last_piece_token_len`: none when the text ends
  with an allowed special token), widened back over tokens of spaces, tabs and newlines when the last piece
  starts with one (a whitespace split can vanish when text follows).
- Its completions: every single token whose bytes start with the unstable bytes; for each way to cut those
  bytes into a prefix and a non-empty rest, the prefix followed by each token that starts with the rest,
  encoded again (`encode_ordinary` where that is UTF-8, the merge loop alone otherwise) and kept up to the
  first token that reaches past the unstable bytes; and, when the unstable bytes end in a whitespace
  character, their merge with that character split off.

Known only through functions of the encoding (`UnstableParts`), so that it sits below `Encoding`.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["UnstableParts", "unstable_completions", "widened_last_piece"]

# Rust's char::is_whitespace (Unicode White_Space), which tiktoken asks of the last character.
_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                         "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_SPACE_BYTES = frozenset(b" \n\t")


class UnstableParts(NamedTuple):
    sorted_tokens: Sequence[bytes]                  # every mergeable token's bytes, sorted
    token_id: Callable[[bytes], int]                # a mergeable token's id
    token_bytes: Callable[[int], bytes]             # an id's bytes
    encode_ordinary_batch: Callable[[list[str]], list[list[int]]]
    merge_bytes: Callable[[bytes], list[int]]       # the merge loop alone (tiktoken's byte_pair_encode)


def widened_last_piece(tokens: Sequence[int], last_piece_tokens: int, token_bytes: Callable[[int], bytes]) -> int:
    """How many of the last tokens are unstable: `last_piece_tokens`, and the tokens of spaces, tabs and
    newlines before them when the first of them is one (tiktoken's `_increase_last_piece_token_len`)."""
    def all_space(token: int) -> bool:
        return all(byte in _SPACE_BYTES for byte in token_bytes(token))

    count = last_piece_tokens
    if count and all_space(tokens[len(tokens) - count]):
        while count < len(tokens) and all_space(tokens[len(tokens) - count - 1]):
            count += 1
    return count


def unstable_completions(unstable: bytes, parts: UnstableParts) -> set[tuple[int, ...]]:
    """Every id sequence that the unstable bytes can come out as once more text follows (see above)."""
    completions: set[tuple[int, ...]] = set()
    if not unstable:
        return completions
    for token in _tokens_starting_with(parts.sorted_tokens, unstable):
        completions.add((parts.token_id(token),))
    texts: list[str] = []
    for cut in range(1, len(unstable)):
        prefix, rest = unstable[:cut], unstable[cut:]
        for token in _tokens_starting_with(parts.sorted_tokens, rest):
            possibility = prefix + token
            try:
                texts.append(possibility.decode("utf-8"))
            except UnicodeDecodeError:
                completions.add(_covering(parts.merge_bytes(possibility), len(unstable), parts.token_bytes))
    for encoded in parts.encode_ordinary_batch(texts):     # (one call for all: most of the work)
        completions.add(_covering(encoded, len(unstable), parts.token_bytes))
    if len(unstable) > 1:
        last = _last_character(unstable)
        if last is not None and len(unstable) > len(last.encode("utf-8")) and last in _WHITE_SPACE:
            split = len(unstable) - len(last.encode("utf-8"))
            completions.add(tuple(parts.merge_bytes(unstable[:split]) + parts.merge_bytes(unstable[split:])))
    return completions


def _covering(encoded: list[int], size: int, token_bytes: Callable[[int], bytes]) -> tuple[int, ...]:
    """The first ids of `encoded`, up to the first whose bytes reach `size` bytes or past."""
    sequence, covered = [], 0
    for token_id in encoded:
        sequence.append(token_id)
        covered += len(token_bytes(token_id))
        if covered >= size:
            break
    return tuple(sequence)


def _tokens_starting_with(sorted_tokens: Sequence[bytes], prefix: bytes) -> list[bytes]:
    found = []
    point = bisect.bisect_left(sorted_tokens, prefix)
    while point < len(sorted_tokens) and sorted_tokens[point].startswith(prefix):
        found.append(sorted_tokens[point])
        point += 1
    return found


def _last_character(data: bytes) -> str | None:
    """The character the last bytes of `data` encode, or None when they are not one whole character."""
    start = len(data) - 1
    while start > 0 and len(data) - start < 4 and 0x80 <= data[start] < 0xC0:
        start -= 1
    try:
        decoded = data[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decoded if len(decoded) == 1 else None
