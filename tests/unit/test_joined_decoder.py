"""`joined_decoder` (parts/decoders.py) decodes by a table of each id's mapped string, for chains that map
each token alone before a Fuse: it must give the chain's own text on every list of ids. The chain is checked
against HF in tests/exactness/test_hf_parts.py; here the table against the chain, on generated ids."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe.parts.decoders import decoder_from_json, joined_decoder

LLAMA = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
    {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
STRINGS = dict(enumerate(["\u2581hello", "\u2581", "wor", "ld", "", "<0xE6>", "<0x97>", "<0xA5>", "<0xFF>",
                          "<0x0A>", "<0x41>", "\u2581\u2581", "<0x4>", "<0xe6>", "a\u2581b", " "]))
CHAINS = [
    LLAMA,
    {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
    {"type": "Sequence", "decoders": [{"type": "Strip", "content": "\u2581", "start": 1, "stop": 1},
                                      {"type": "Replace", "pattern": {"Regex": "o+"}, "content": "0"},
                                      {"type": "Fuse"}, {"type": "Replace", "pattern": {"String": " "},
                                                         "content": "_"}]},
    {"type": "Fuse"},
]


@pytest.mark.parametrize("chain", CHAINS, ids=["llama", "bytes", "no-bytes", "fuse"])
@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.sampled_from(sorted(STRINGS)), max_size=30))
def test_the_table_gives_the_chains_text(chain, ids):
    decoder = decoder_from_json(chain)
    joined = joined_decoder(decoder, STRINGS)
    assert joined is not None
    assert joined(ids) == decoder.decode([STRINGS[i] for i in ids])


def test_byte_runs_decode_whole_or_as_one_replacement_per_byte():
    joined = joined_decoder(decoder_from_json(LLAMA), STRINGS)
    assert joined([0, 5, 6, 7]) == "hello日"
    assert joined([5, 6, 10]) == "\ufffd\ufffd\ufffd"      # one invalid run: every byte of it replaced
    assert joined([5, 6, 4, 7]) == "\ufffd\ufffd\ufffd"    # a token of no text breaks the run, as in HF
    assert joined([5, 6, 2, 7]) == "\ufffd\ufffdwor\ufffd"


def test_other_chains_and_stand_in_characters_are_left_to_the_chain():
    assert joined_decoder(decoder_from_json({"type": "Metaspace", "replacement": "\u2581",
                                             "prepend_scheme": "always", "split": True}), STRINGS) is None
    assert joined_decoder(decoder_from_json({"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        {"type": "Fuse"}]}), STRINGS) is None
    assert joined_decoder(decoder_from_json(LLAMA), {**STRINGS, 99: "x\U000F0041"}) is None
