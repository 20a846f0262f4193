"""The split patterns and special-token strings are tiktoken's, character for character.

Token ids only match tiktoken's when text is cut into the same pieces, so the patterns are compared
with the strings tiktoken_ext itself builds, and a few splits document what each pattern does.
"""
from __future__ import annotations

import pytest
import regex

from bytebpe import patterns

openai_public = pytest.importorskip("tiktoken_ext.openai_public")

PATTERN_OF_ENCODING = {
    "gpt2": patterns.R50K_PATTERN,
    "r50k_base": patterns.R50K_PATTERN,
    "p50k_base": patterns.R50K_PATTERN,
    "p50k_edit": patterns.R50K_PATTERN,
    "cl100k_base": patterns.CL100K_PATTERN,
    "o200k_base": patterns.O200K_PATTERN,
    "o200k_harmony": patterns.O200K_PATTERN,
}


@pytest.mark.parametrize("name", sorted(PATTERN_OF_ENCODING))
def test_pattern_is_the_one_tiktoken_uses_for_the_encoding(name, tiktoken_cache, monkeypatch):
    # The constructors load the real vocabulary too, so they need tiktoken's offline cache.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    expected = openai_public.ENCODING_CONSTRUCTORS[name]()["pat_str"]
    assert PATTERN_OF_ENCODING[name] == expected


def test_r50k_pattern_equals_tiktoken_constant():
    # This one is also a module-level constant in tiktoken_ext, checked without loading any file.
    assert patterns.R50K_PATTERN == openai_public.r50k_pat_str


def test_special_token_strings_are_tiktokens():
    for constant in ("ENDOFTEXT", "FIM_PREFIX", "FIM_MIDDLE", "FIM_SUFFIX", "ENDOFPROMPT"):
        assert getattr(patterns, constant) == getattr(openai_public, constant), constant
    assert patterns.ENDOFTEXT == "<|endoftext|>"


def pieces(pattern: str, text: str) -> list[str]:
    return regex.findall(pattern, text)


def test_r50k_keeps_a_leading_space_with_the_word_and_splits_contractions():
    assert pieces(patterns.R50K_PATTERN, "Hello world's end") == ["Hello", " world", "'s", " end"]


def test_r50k_contractions_are_case_sensitive():
    assert pieces(patterns.R50K_PATTERN, "IT'S") == ["IT", "'", "S"]


def test_cl100k_cuts_digit_runs_into_threes_and_ignores_contraction_case():
    assert pieces(patterns.CL100K_PATTERN, "1234567") == ["123", "456", "7"]
    assert pieces(patterns.CL100K_PATTERN, "IT'S") == ["IT", "'S"]


def test_o200k_splits_words_at_case_changes():
    assert pieces(patterns.O200K_PATTERN, "HelloWorld") == ["Hello", "World"]
    assert pieces(patterns.O200K_PATTERN, "XMLHttpRequest") == ["XMLHttp", "Request"]


@pytest.mark.parametrize("pattern", [patterns.R50K_PATTERN, patterns.CL100K_PATTERN, patterns.O200K_PATTERN])
def test_pieces_cover_the_text_without_loss(pattern):
    text = "Hi  there!\n\n  It's 2024, naïve café — 数字 12345\t\r\nend   "
    assert "".join(pieces(pattern, text)) == text
