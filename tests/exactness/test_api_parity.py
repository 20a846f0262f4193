"""Every public method of `tiktoken.Encoding` gives the same result in bytebpe, on cl100k_base and o200k_base.

Each test names one method (or a family of them) and compares it with stock tiktoken on a handful of texts
chosen to cross the pre-tokenizer's rules: English, code, CJK, emoji (whose tokens can end inside a
character), the empty string, whitespace only, and mixes of "\\r\\n".
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe._core import TokenIdOverflowError

TEXTS = [
    "Hello, world! This is a plain English sentence, with numbers 12345 and 3.14159.",
    "def encode(self, text: str) -> list[int]:\n    return [ord(c) for c in text]  # comment\n",
    "日本語のテキスト、漢字とかな。你好，世界！這是繁體字。한국어 텍스트",
    "😀 emoji 🎉🎉 👩\u200d👩\u200d👧\u200d👦 family 🦜🦜🦜 ⚡︎",
    "",
    "   \t\n  \n\n\n    ",
    "line one\r\nline two\r\n\r\n\rthree\n\r\n  \r\n",
    "I'm sure it's 'quoted' and CAPS'LL don't   break",
]
# Lone surrogates are not encodable as UTF-8; tiktoken turns them into U+FFFD (and joins a pair given as two
# code points into one character) before encoding.
SURROGATE_TEXTS = ["\ud800", "a\udc00b", "\ud83d\ude00", "x \ud83d\ude00 y \udfff"]


@pytest.fixture(scope="module", params=["cl100k_base", "o200k_base"])
def pair(request, data_dir, tiktoken_encoding):
    """(bytebpe's encoding, tiktoken's) of one name."""
    return bytebpe.get_encoding(request.param), tiktoken_encoding(request.param)


@pytest.fixture(scope="module")
def token_lists(pair):
    """tiktoken's ids of each text."""
    return [pair[1].encode(text) for text in TEXTS]


# ==== encoding =====================================================================================


@pytest.mark.parametrize("text", TEXTS)
def test_encode_and_encode_ordinary(pair, text):
    ours, theirs = pair
    assert ours.encode(text) == theirs.encode(text)
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


@pytest.mark.parametrize("text", TEXTS)
def test_encode_to_numpy_gives_uint32_ids(pair, text):
    ours, theirs = pair
    ids = ours.encode_to_numpy(text)
    assert isinstance(ids, np.ndarray) and ids.dtype == np.uint32
    assert ids.tolist() == theirs.encode_to_numpy(text).tolist() == theirs.encode(text)


def test_numpy_outputs_are_writable_arrays_of_their_own(pair):
    ours, theirs = pair
    first, second = ours.encode_to_numpy(TEXTS[0]), ours.encode_to_numpy(TEXTS[0])
    # The array takes over the core's buffer (no copy: `base` is that buffer's owner), one per call.
    assert first.flags.writeable and first.flags.c_contiguous and not np.shares_memory(first, second)
    first[:] = 0    # each call's array has its own memory
    assert second.tolist() == theirs.encode(TEXTS[0])
    for texts in ([], TEXTS[:1], TEXTS):      # no text, one chunk (returned as it is), several texts
        ids, offsets = ours.encode_batch_to_numpy(texts)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and offsets.flags.writeable
        assert offsets.tolist()[0] == 0 and len(offsets) == len(texts) + 1
        assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == theirs.encode_batch(texts)


def test_encode_batch_and_encode_ordinary_batch(pair):
    ours, theirs = pair
    assert ours.encode_batch(TEXTS) == theirs.encode_batch(TEXTS)
    assert ours.encode_ordinary_batch(TEXTS) == theirs.encode_ordinary_batch(TEXTS)
    assert ours.encode_batch([]) == ours.encode_ordinary_batch([]) == []


@pytest.mark.parametrize("num_threads", [1, 2, 8])
def test_a_batch_large_enough_for_threads_gives_tiktokens_ids_in_order(pair, num_threads):
    ours, theirs = pair
    batch = [text * (k % 7 + 1) + str(k) for k, text in enumerate(TEXTS * 60)]   # ~100 k characters
    assert sum(map(len, batch)) > 64 * 1024
    assert ours.encode_batch(batch, num_threads=num_threads) == theirs.encode_batch(batch, num_threads=num_threads)
    assert ours.encode_ordinary_batch(batch, num_threads=num_threads) == theirs.encode_ordinary_batch(batch)


def test_encode_single_token_of_every_token_in_the_texts(pair, token_lists):
    ours, theirs = pair
    for token in {token for ids in token_lists for token in ids}:
        token_bytes = theirs.decode_single_token_bytes(token)
        assert ours.encode_single_token(token_bytes) == theirs.encode_single_token(token_bytes) == token
        try:
            token_text = token_bytes.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert ours.encode_single_token(token_text) == theirs.encode_single_token(token_text) == token


def test_encode_single_token_of_special_tokens_as_str_and_bytes(pair):
    ours, theirs = pair
    for token in theirs.special_tokens_set:
        assert ours.encode_single_token(token) == theirs.encode_single_token(token)
        assert ours.encode_single_token(token.encode()) == theirs.encode_single_token(token.encode())


# ==== decoding =====================================================================================


def test_decode_and_decode_bytes(pair, token_lists):
    ours, theirs = pair
    for ids in token_lists:
        assert ours.decode(ids) == theirs.decode(ids)
        assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)


def test_decode_single_token_bytes_and_decode_tokens_bytes(pair, token_lists):
    ours, theirs = pair
    for ids in token_lists:
        assert ours.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
        assert [ours.decode_single_token_bytes(token) for token in ids] == ours.decode_tokens_bytes(ids)
    specials = sorted(theirs._special_token_values)
    assert [ours.decode_single_token_bytes(t) for t in specials] == [theirs.decode_single_token_bytes(t) for t in specials]


def test_decode_with_offsets(pair, token_lists):
    ours, theirs = pair
    for ids in token_lists:
        assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)


def test_decode_with_offsets_when_a_token_starts_inside_a_character(pair):
    ours, theirs = pair
    ids = theirs.encode("🦜🦜🦜 ⚡︎")
    # The texts really do split a character between two tokens: some token starts with a continuation byte.
    assert any(0x80 <= piece[0] < 0xC0 for piece in theirs.decode_tokens_bytes(ids))
    assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)


def test_decode_batch_and_decode_bytes_batch(pair, token_lists):
    ours, theirs = pair
    assert ours.decode_batch(token_lists) == theirs.decode_batch(token_lists)
    assert ours.decode_bytes_batch(token_lists) == theirs.decode_bytes_batch(token_lists)


def test_decode_is_lossy_by_default_and_strict_on_request_like_tiktoken(pair):
    ours, theirs = pair
    ids = theirs.encode("🦜")
    partial = ids[:-1]      # the parrot's last byte is missing
    assert len(ids) > 1
    assert ours.decode(partial) == theirs.decode(partial) and "\ufffd" in ours.decode(partial)
    with pytest.raises(UnicodeDecodeError):
        theirs.decode(partial, errors="strict")
    with pytest.raises(UnicodeDecodeError):
        ours.decode(partial, errors="strict")
    with pytest.raises(UnicodeDecodeError):
        ours.decode_with_offsets(partial)
    assert ours.decode(partial, errors="ignore") == theirs.decode(partial, errors="ignore")


def test_decode_accepts_lists_tuples_and_numpy_arrays(pair, token_lists):
    ours, theirs = pair
    ids = token_lists[0]
    expected = theirs.decode(ids)
    assert ours.decode(list(ids)) == expected
    assert ours.decode(tuple(ids)) == expected
    assert ours.decode(np.array(ids, dtype=np.uint32)) == expected
    assert ours.decode(np.array(ids, dtype=np.int64)) == expected
    assert ours.decode(ours.encode_to_numpy(TEXTS[0])) == expected
    assert ours.decode_bytes(np.array(ids, dtype=np.uint32)) == theirs.decode_bytes(ids)


INTEGER_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", ">u4", "<i8"]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_decode_reads_integer_arrays_of_every_width_as_lists(pair, token_lists, dtype):
    # Arrays are read in place (no Python int per id); byte-swapped, strided and array.array inputs too.
    import array

    ours, _ = pair
    ids = [i for ids in token_lists for i in [*ids, 0, 1, 127, 255] if i <= np.iinfo(np.dtype(dtype)).max]
    expected = ours.decode_bytes(ids)
    values = np.array(ids, dtype=dtype)
    assert ours.decode_bytes(values) == expected
    assert ours.decode_bytes(np.repeat(values, 2)[::2]) == expected        # not contiguous
    assert ours.decode_bytes(memoryview(values.astype(values.dtype.newbyteorder("=")))) == expected
    code = np.dtype(dtype).newbyteorder("=").char
    if code in array.typecodes:
        assert ours.decode_bytes(array.array(code, ids)) == expected


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_decode_of_an_array_refuses_what_a_list_refuses(pair, dtype):
    ours, _ = pair
    for bad, error in [(-1, TokenIdOverflowError), (ours.max_token_value + 1, bytebpe.InvalidTokenError)]:
        if not np.iinfo(np.dtype(dtype)).min <= bad <= np.iinfo(np.dtype(dtype)).max:
            continue
        with pytest.raises(error) as from_list:
            ours.decode_bytes([5, bad])
        with pytest.raises(error) as from_array:
            ours.decode_bytes(np.array([5, bad], dtype=dtype))
        assert str(from_array.value) == str(from_list.value)
    with pytest.raises(TokenIdOverflowError):
        ours.decode_bytes(np.array([2**40], dtype=np.uint64))
    with pytest.raises(TypeError):
        ours.decode_bytes(np.array(5, dtype=np.uint32))          # one value, not a sequence
    with pytest.raises(TypeError):
        ours.decode_bytes(np.array([[1, 2]], dtype=np.uint32).T)  # strided 2-d: as a sequence of rows


DECODE_IN_LIMITED_MEMORY = """
import resource, sys
import numpy as np
import bytebpe
from bytebpe._core import TokenIdOverflowError
enc = bytebpe.get_encoding("cl100k_base")
ids = np.random.default_rng(0).integers(1000, 90000, size=30_000_000, dtype=np.uint32)
with open("/proc/self/status") as status:
    size_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
# 1 GiB more than the process holds now: the decoded bytes (~200 MB) and their buffer fit; a Python int per
# id (30 M x 32 bytes, plus the list) does not.
limit = size_kib * 1024 + (1 << 30)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
text = enc.decode_bytes(ids)
print(len(text))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_decoding_30_million_ids_from_an_array_needs_no_int_per_id(data_dir):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DECODE_IN_LIMITED_MEMORY], capture_output=True, text=True,
                          env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 30_000_000


# ==== the vocabulary ===============================================================================


def test_token_byte_values(pair):
    ours, theirs = pair
    assert ours.token_byte_values() == theirs.token_byte_values()


def test_sizes_and_names(pair):
    ours, theirs = pair
    assert ours.n_vocab == theirs.n_vocab
    assert ours.max_token_value == theirs.max_token_value
    assert ours.eot_token == theirs.eot_token
    assert ours.special_tokens_set == theirs.special_tokens_set
    assert ours.name == theirs.name
    assert repr(ours) == repr(theirs)


def test_is_special_token(pair):
    ours, theirs = pair
    ids = [0, 1, 100, 50256, theirs.eot_token, theirs.max_token_value, *theirs._special_token_values]
    assert [ours.is_special_token(token) for token in ids] == [theirs.is_special_token(token) for token in ids]
    assert ours.is_special_token(theirs.eot_token) and not ours.is_special_token(0)


def test_mergeable_ranks_equal_tiktokens_and_are_read_only(pair):
    ours, theirs = pair
    assert ours.mergeable_ranks == theirs._mergeable_ranks
    with pytest.raises(TypeError):
        ours.mergeable_ranks[b"new token"] = 5
    with pytest.raises(TypeError):
        del ours.mergeable_ranks[b"a"]
    assert b"new token" not in ours.mergeable_ranks and ours.mergeable_ranks[b"a"] == theirs._mergeable_ranks[b"a"]


# ==== text that is not valid Unicode ===============================================================


@pytest.mark.parametrize("text", SURROGATE_TEXTS)
def test_surrogates_are_repaired_like_tiktokens_encode(pair, text):
    ours, theirs = pair
    expected = theirs.encode(text)
    assert ours.encode(text) == expected
    assert ours.encode_ordinary(text) == expected
    assert ours.encode(text, allowed_special="all") == expected
    assert ours.encode_batch([text, "ok"]) == [expected, theirs.encode("ok")]
    assert ours.encode_ordinary_batch([text]) == [expected]
    assert ours.encode_to_numpy(text).tolist() == expected
    ids, offsets = ours.encode_batch_to_numpy([text])
    assert ids.tolist() == expected and offsets.tolist() == [0, len(expected)]


def test_a_surrogate_pair_given_as_two_code_points_is_the_character_it_stands_for(pair):
    ours, _ = pair
    assert ours.encode("\ud83d\ude00") == ours.encode("😀")
    assert ours.encode("\ud800") == ours.encode("\ufffd")


class LyingStr(str):
    """A str subclass whose __str__ and iteration lie: its characters are what gets encoded."""

    def __str__(self) -> str:
        return "lie"

    def __iter__(self):
        return iter("lie")


def test_str_subclasses_are_encoded_as_their_characters_in_every_method(pair):
    # Datasets hand texts out as numpy.str_ (`list(np.array([...]))`); tiktoken encodes any str subclass.
    ours, theirs = pair
    texts = [np.str_(text) for text in TEXTS] + [LyingStr("Hello, world!"), LyingStr("<|endoftext|> x")]
    for text in texts:
        expected = theirs.encode(str.__str__(text), allowed_special="all")
        assert ours.encode(text, allowed_special="all") == expected
        assert ours.encode_to_numpy(text, allowed_special="all").tolist() == expected
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(str.__str__(text))
    plain = [str.__str__(text) for text in texts]
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(plain)
    assert ours.encode_batch(texts, allowed_special="all") == theirs.encode_batch(plain, allowed_special="all")
    ids, offsets = ours.encode_batch_to_numpy(texts, allowed_special="all")
    assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == theirs.encode_batch(
        plain, allowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        ours.encode(LyingStr("<|endoftext|>"))
