"""Which engine cuts text into pieces: the compiled scanner for the known patterns, `regex` otherwise or
when asked for, and both give the same ids."""
from __future__ import annotations

import pickle

import pytest

import bytebpe
from bytebpe import patterns

RANKS = {bytes([b]): b for b in range(256)} | {b"ab": 256, b" a": 257}


def make(pat_str: str, **kwargs) -> bytebpe.Encoding:
    return bytebpe.Encoding("toy", pat_str=pat_str, mergeable_ranks=RANKS, special_tokens={"<|x|>": 300}, **kwargs)


def test_patterns_of_the_family_use_the_compiled_scanner_and_others_use_regex():
    assert make(patterns.CL100K_PATTERN).pretokenizer == "compiled"
    assert make(patterns.R50K_PATTERN).pretokenizer == "compiled"
    assert make(r"\w+|\s+|\W+").pretokenizer == "compiled"
    assert make(r"(?<=a)b|\w+|\s+|\W+").pretokenizer == "regex"     # a lookbehind: outside the family


def test_regex_can_be_forced_and_gives_the_same_ids():
    compiled = make(patterns.O200K_PATTERN)
    forced = make(patterns.O200K_PATTERN, pretokenizer="regex")
    assert forced.pretokenizer == "regex"
    text = "ab abab\n\n  a<|x|>b 12345 'S"
    assert forced.encode(text, allowed_special="all") == compiled.encode(text, allowed_special="all")
    assert compiled.with_pretokenizer("regex").pretokenizer == "regex"
    assert forced.with_pretokenizer("auto").pretokenizer == "compiled"


def test_the_environment_can_force_regex_for_auto(monkeypatch):
    monkeypatch.setenv("BYTEBPE_PRETOKENIZER", "regex")
    assert make(patterns.CL100K_PATTERN).pretokenizer == "regex"
    assert make(patterns.CL100K_PATTERN, pretokenizer="compiled").pretokenizer == "compiled"


def test_compiled_on_a_pattern_outside_the_family_is_an_error_naming_why():
    with pytest.raises(ValueError, match="may match nothing at U[+]"):
        make(r"\w+", pretokenizer="compiled")
    with pytest.raises(ValueError, match="lookbehind"):
        make(r"(?<=a)b|[\s\S]", pretokenizer="compiled")
    with pytest.raises(ValueError, match="pretokenizer must be"):
        make(patterns.CL100K_PATTERN, pretokenizer="fast")


def test_the_choice_survives_pickling_and_derived_encodings():
    forced = make(patterns.CL100K_PATTERN, pretokenizer="regex")
    assert pickle.loads(pickle.dumps(forced)).pretokenizer == "regex"
    assert forced.with_special_tokens({"<|y|>": 301}).pretokenizer == "regex"
