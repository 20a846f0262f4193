"""The UTF-8 bytes the compiled code reads for a str (`_shared._utf8_view`, with its own encoder for non-ASCII
text, `_utf8.h`) are exactly ``str.encode("utf-8")``, for every storage kind CPython uses (ASCII, Latin-1,
UCS-2, UCS-4), around the ASCII fast paths' block edges, and a lone surrogate raises UnicodeEncodeError as
`str.encode` does (the encoders then repair it). Every test runs with each way the encoder converts
characters that are not ASCII: 16 at a time (AVX-512, where this CPU has it) and one by one."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _core


def _blocks_available() -> bool:
    try:
        previous = _core._set_utf8_blocks(True)
    except ValueError:      # this CPU cannot
        return False
    _core._set_utf8_blocks(previous)
    return True


CONVERSIONS = ["one by one"] + (["16 at a time"] if _blocks_available() else [])


@pytest.fixture(autouse=True, params=CONVERSIONS)
def conversion(request):
    previous = _core._set_utf8_blocks(request.param == "16 at a time")
    yield request.param
    _core._set_utf8_blocks(previous)


# One character of each UTF-8 length and storage kind, and the edges between them.
EDGES = ["a", "\x7f", "\x80", "\xe9", "\xff", "\u0100", "\u07ff", "\u0800", "\u2019", "\ud7ff", "\ue000",
         "\uffff", "\U00010000", "\U0001f600", "\U0010ffff"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(EDGES) | st.text(max_size=20), max_size=40).map("".join))
def test_the_bytes_read_are_the_utf8_of_the_text(text):
    assert _core._utf8_of(text) == text.encode("utf-8")


@pytest.mark.parametrize("wide", ["\xe9", "\u2019", "\U0001f600"])
@pytest.mark.parametrize("ascii_run", range(0, 40))
def test_ascii_runs_of_every_length_around_the_block_edges(wide, ascii_run):
    # The fast paths copy 8 (Latin-1) or 4 (UCS-2) ASCII characters at a time: runs of every length, with a
    # wider character before, after and between them.
    run = "".join(chr(48 + i % 40) for i in range(ascii_run))
    for text in (wide + run, run + wide, wide + run + wide + run, run + wide + run + run):
        assert _core._utf8_of(text) == text.encode("utf-8")


@pytest.mark.parametrize("surrogate", ["\ud800", "\udbff", "\udc00", "\udfff"])
@pytest.mark.parametrize("context", ["{}", "abc{}", "\xe9{}", "\u2019{}x", "\U0001f600{}"])
def test_a_lone_surrogate_raises_as_str_encode_does(surrogate, context):
    text = context.format(surrogate)
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")
    with pytest.raises(UnicodeEncodeError):
        _core._utf8_of(text)
    # ... and the encoders repair it as tiktoken does (the test of that is in test_bad_input.py).
    enc = bytebpe.get_encoding("cl100k_base")
    assert enc.decode(enc.encode_ordinary(text)) == text.replace(surrogate, "\ufffd")


def test_large_texts_of_each_kind():
    for wide in ("\xe9", "\u2019", "\U0001f600"):
        text = ("Plain words, then one " + wide + " in the middle of a line.\n") * 20_000
        assert _core._utf8_of(text) == text.encode("utf-8")


# Characters of 1, 2 and 3 UTF-8 bytes, in Latin-1 and UCS-2 strs.
WIDTHS = {"latin-1": ["a", "\x7f", "\x80", "\xe9", "\xff"],
          "ucs-2": ["a", "\xe9", "\u0100", "\u07ff", "\u0800", "\u2019", "\uac00", "\ud7ff", "\ue000", "\uffff"]}


@pytest.mark.parametrize("kind", WIDTHS)
def test_every_width_at_every_place_of_a_block_of_sixteen(kind):
    # The block conversion packs each character's bytes after the last one's: a character of each width at
    # every place of three blocks, among fillers of each width, and texts of every length around the blocks.
    chars = WIDTHS[kind]
    for filler in chars:
        for char in chars:
            for place in range(48):
                text = filler * place + char + filler * (47 - place)
                assert _core._utf8_of(text) == text.encode("utf-8"), (filler, char, place)
        for length in range(1, 50):
            text = "".join(chars[(i * 7 + length) % len(chars)] for i in range(length)) + filler
            assert _core._utf8_of(text) == text.encode("utf-8"), length


@pytest.mark.parametrize("surrogate", ["\ud800", "\udfff"])
@pytest.mark.parametrize("filler", ["a", "\xe9", "\u0416", "\uac00"])
def test_a_lone_surrogate_at_every_place_of_a_block_raises(surrogate, filler):
    for place in range(40):
        text = filler * place + surrogate + filler * (39 - place)
        with pytest.raises(UnicodeEncodeError) as ours:
            _core._utf8_of(text)
        with pytest.raises(UnicodeEncodeError) as theirs:
            text.encode("utf-8")
        assert str(ours.value) == str(theirs.value)
