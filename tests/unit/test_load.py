"""The compiled loops of a tokenizer.json's load (_load.pyx) give what the plain Python they replace gives,
and refuse what it refused, so that parts/model.py can name the merge or token that is wrong."""
from __future__ import annotations

import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _load
from bytebpe.hf_json import _byte_to_char

VOCAB = {"a": 0, "b": 1, "ab": 2, "": 3, "▁": 4, "▁a": 5, " ": 6}


def test_merges_of_either_form_become_their_ids_in_order():
    packed, left_out = _load.merge_pair_ids(["a b", ["▁", "a"], ["ab", "b"]], VOCAB, set())
    assert array.array("I", packed).tolist() == [0, 1, 4, 0, 2, 1] and left_out == []


def test_merges_naming_skipped_ids_are_left_out_and_listed():
    packed, left_out = _load.merge_pair_ids(["a b", "ab a", "b a"], VOCAB, {2})
    assert array.array("I", packed).tolist() == [0, 1, 1, 0] and left_out == [1]


@pytest.mark.parametrize("merge,error", [
    ("a", ValueError), ("a b b", ValueError), ("a  b", ValueError), ("x b", KeyError), (["a"], TypeError),
    (["a", 1], TypeError), (("a", "b"), TypeError), (7, TypeError), (["a", "x"], KeyError),
])
def test_a_merge_of_another_shape_or_an_unknown_token_raises(merge, error):
    with pytest.raises(error):
        _load.merge_pair_ids(["a b", merge], VOCAB, set())


def test_a_space_at_either_end_names_the_empty_token():
    packed, _ = _load.merge_pair_ids([" a", "a "], VOCAB, set())
    assert array.array("I", packed).tolist() == [3, 0, 0, 3]


BYTE_CHARS = "".join(_byte_to_char())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=BYTE_CHARS[:40] + BYTE_CHARS[200:] + "é日\u2581", max_size=6), unique=True,
                max_size=30))
def test_byte_level_tokens_are_the_bytes_their_characters_stand_for(tokens):
    vocab = {token: index for index, token in enumerate(tokens)}
    byte_of = {char: byte for byte, char in enumerate(BYTE_CHARS)}
    expected_ids = {bytes(byte_of[c] for c in t): i for t, i in vocab.items() if t and all(c in byte_of for c in t)}
    expected_only = {i: t.encode() for t, i in vocab.items() if not t or not all(c in byte_of for c in t)}
    assert _load.byte_level_tokens(vocab, BYTE_CHARS) == (expected_ids, expected_only)


def test_byte_level_tokens_refuses_a_wrong_alphabet():
    with pytest.raises(ValueError, match="256 characters"):
        _load.byte_level_tokens({}, "abc")
