"""`_decode_streams.StreamTokens`: the decode a `bytebpe.hf.DecodeStream` runs in C at each step. It must be the
decode it stands for on any ids: for a byte-level core, the tokens' bytes as Python's (and Rust's
from_utf8_lossy) "replace" decoding gives them; for a table, `parts.decoders.JoinedDecoder`'s text. Both are
held to HF in tests/exactness/test_hf_surface.py on the real files; here on generated ids, bytes that no
UTF-8 reader takes included."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _decode_streams
from bytebpe.parts.decoders import decoder_from_json, joined_decoder
from tests.unit.test_joined_decoder import CHAINS, STRINGS

TOKEN, SPECIAL, NO_TOKEN = 0, 1, 2      # (the STREAM_* kinds)


@pytest.fixture(scope="module")
def bytes_core() -> object:
    """A core whose tokens are the 256 bytes, then "日" (256) and the special "<s>" (257)."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks["日".encode()] = 256
    return bytebpe.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={"<s>": 257})._core


@settings(max_examples=400, deadline=None)
@given(ids=st.lists(st.integers(0, 260), max_size=24), skip=st.booleans())
def test_a_cores_tokens_decode_as_replace_decoding_of_their_bytes(bytes_core, ids, skip) -> None:
    kinds = bytearray([TOKEN] * 257 + [SPECIAL])
    table = _decode_streams.StreamTokens(kinds, bytes_core)
    kept = [i for i in ids if i < 257 or (i == 257 and not skip)]
    data = b"".join(b"<s>" if i == 257 else "日".encode() if i == 256 else bytes([i]) for i in kept)
    assert table.text_of(ids, skip) == data.decode("utf-8", "replace")


def test_ill_formed_bytes_become_one_replacement_per_maximal_subpart(bytes_core) -> None:
    table = _decode_streams.StreamTokens(bytearray([TOKEN] * 258), bytes_core)
    for data in (b"\xe6\x97", b"\xe6\x97A", b"\xed\xa0\x80", b"\xf0\x8f\x80\x80", b"\xf4\x90\x80", b"\xc0\xaf",
                 b"\xf0\x9f\x98", b"\x80\x80", b"\xff\xfe", b"a\xe6\x97\xa5\xe6"):
        assert table.text_of(list(data)) == data.decode("utf-8", "replace"), data


@pytest.mark.parametrize("chain", CHAINS, ids=["llama", "bytes", "no-bytes", "fuse"])
@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.sampled_from([*sorted(STRINGS), 40]), max_size=30))
def test_a_table_decodes_as_the_joined_decoder(chain, ids) -> None:
    joined = joined_decoder(decoder_from_json(chain), STRINGS)
    assert joined is not None
    strips = joined.strips()
    if strips is None:      # ("no-bytes" ends in a Replace: a stream decodes it by the chain)
        return
    kinds = bytearray([TOKEN] * len(STRINGS))
    table = _decode_streams.StreamTokens(kinds, texts=joined.mapped, strips=[
        (content.encode(), start, stop) for content, start, stop in strips])
    known = [i for i in ids if i in STRINGS]        # (40 is no token: dropped, as HF drops it)
    assert table.text_of(ids) == joined(known)


def test_a_strip_cuts_whole_characters_and_nothing_where_the_cuts_cross(bytes_core) -> None:
    texts = {0: "ééa", 1: "é", 2: " "}
    for strips, ids, want in (([("é".encode(), 1, 0)], [0], "éa"), ([("é".encode(), 5, 0)], [0], "a"),
                              ([("é".encode(), 1, 1)], [1], ""), ([(b" ", 0, 2)], [0, 2, 2, 2], "ééa "),
                              ([(b" ", 1, 0), ("é".encode(), 1, 0)], [2, 0], "éa")):
        assert _decode_streams.StreamTokens(bytearray(3), texts=texts, strips=strips).text_of(ids) == want


def test_what_is_no_table_is_refused(bytes_core) -> None:
    with pytest.raises(ValueError, match="a core or texts"):
        _decode_streams.StreamTokens(bytearray(2))
    with pytest.raises(TypeError, match="is a str"):
        _decode_streams.StreamTokens(bytearray(2), texts={0: b"x"})
    with pytest.raises(ValueError, match="a strip is"):
        _decode_streams.StreamTokens(bytearray(2), texts={0: "x"}, strips=[(b"", 1, 0)])
    with pytest.raises(TypeError, match="takes an id"):
        _decode_streams.StreamTokens(bytearray(258), bytes_core).text_of([-1])


def test_a_stream_is_stepped_by_one_caller_at_a_time() -> None:
    """A tokenizer's decode may let another thread in (it is Python); that thread's step of the same stream
    would move the ids under this one's. It raises instead, as HF's does (Already borrowed), and the stream
    goes on."""
    import bytebpe.hf

    class Letters:      # (any object with HF's decode: each id a letter)
        def decode(self, ids, skip_special_tokens):
            return "".join(chr(97 + i % 26) for i in ids)

    class Intruding(Letters):
        def decode(self, ids, skip_special_tokens):
            with pytest.raises(RuntimeError, match="one thread at a time"):
                stream.step(Letters(), 1)
            return super().decode(ids, skip_special_tokens)

    stream = bytebpe.hf.DecodeStream()
    assert [stream.step(Intruding(), i) for i in (0, 1, 2)] == ["a", "b", "c"]
    assert stream.step(Letters(), 3) == "d"
