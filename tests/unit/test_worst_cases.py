"""Pathological inputs: a megabyte of one character (and friends) encodes correctly in linear-ish time."""
from __future__ import annotations

import random
import time

import pytest

import bytebpe

MEGA = 1_000_000


def worst_inputs() -> dict[str, str]:
    rng = random.Random(1234)
    return {
        "one letter": "a" * MEGA,
        "spaces": " " * MEGA,
        "spaces then a letter": " " * MEGA + "x",
        "newlines": "\n" * MEGA,
        "digits": "1234567890" * (MEGA // 10),
        "dashes": "-" * MEGA,
        "random letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(MEGA)),
        "one CJK character": "日" * (MEGA // 3),
        "emoji": "😀" * (MEGA // 4),
    }


def encode_seconds(enc: bytebpe.Encoding, text: str, repeat: int = 1) -> tuple[list[int], float]:
    """The ids of `text` and the best of `repeat` timings (the machine is shared and noisy)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        ids = enc.encode_ordinary(text)
        best = min(best, time.perf_counter() - started)
    return ids, best


@pytest.mark.slow
@pytest.mark.parametrize("encoding_name", ["r50k_base", "cl100k_base", "o200k_base"])
@pytest.mark.parametrize("kind", list(worst_inputs()))
def test_megabyte_inputs_round_trip_and_scale_linearly(encoding_name, kind, data_dir):
    enc = bytebpe.get_encoding(encoding_name)
    text = worst_inputs()[kind]
    ids, seconds = encode_seconds(enc, text, repeat=2)
    assert enc.decode(ids) == text
    # Quadratic behaviour would show as 100x from a 10x smaller input, n log n as ~12x; allow 40x for noise.
    small = text[: len(text) // 10]
    _, small_seconds = encode_seconds(enc, small, repeat=3)
    assert seconds < 40 * max(small_seconds, 0.002), f"{kind}: {seconds:.3f}s vs {small_seconds:.4f}s for 1/10"
    assert seconds < 10, f"{kind} took {seconds:.1f}s"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["one letter", "digits", "dashes", "random letters", "one CJK character"])
def test_megabyte_inputs_equal_tiktoken(kind, tiktoken_encoding):
    text = worst_inputs()[kind]
    assert bytebpe.get_encoding("cl100k_base").encode_ordinary(text) == tiktoken_encoding("cl100k_base").encode_ordinary(text)


def test_a_million_spaces_encode_where_tiktoken_may_refuse(data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    ids = enc.encode_ordinary(" " * MEGA)
    assert enc.decode(ids) == " " * MEGA
    # The longest run of spaces in cl100k_base's vocabulary is far shorter, so this is many tokens.
    assert len(ids) > 1000
    # Before a letter, the run splits as tiktoken's pattern says: all spaces but the last, then " x".
    # (tiktoken itself panics on this input: its regex engine gives up on the backtracking.)
    assert enc.encode_ordinary(" " * MEGA + "x") == enc.encode_ordinary(" " * (MEGA - 1)) + enc.encode_ordinary(" x")
