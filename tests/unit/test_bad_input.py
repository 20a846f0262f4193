"""Wrong input is refused with a clear Python exception, before any work and never by crashing.

  * the wrong type of argument is a TypeError;
  * a token id outside the vocabulary (negative, too large, in a gap of the ids) is an
    `InvalidTokenError`, which is both the KeyError tiktoken raises and a ValueError; an id is never
    wrapped or truncated into a valid one;
  * a bad vocabulary given to the `Encoding` constructor is a TypeError or ValueError;
  * an unknown encoding or model name is both a KeyError and a ValueError, and lists the known names.
Everything here runs in the test process, so a crash in the compiled core would end the test run.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe import InvalidTokenError
from bytebpe._core import MAX_TOKEN_ID

BYTES = {bytes([b]): b for b in range(256)}
WORD_PATTERN = r"\s+|\S+"

# Ids in the gaps of each vocabulary: neither a mergeable nor a special token (checked against tiktoken below).
GAP_IDS = {
    "cl100k_base": [100256, *range(100261, 100276)],
    "o200k_base": [199998, *range(200000, 200018)],
}


@pytest.fixture(scope="module")
def enc(data_dir) -> bytebpe.Encoding:
    return bytebpe.get_encoding("cl100k_base")


def tiny_encoding(mergeable_ranks=None, special_tokens=None, **kwargs) -> bytebpe.Encoding:
    return bytebpe.Encoding(
        "tiny", pat_str=kwargs.pop("pat_str", WORD_PATTERN),
        mergeable_ranks=BYTES | {b"ab": 256} if mergeable_ranks is None else mergeable_ranks,
        special_tokens={} if special_tokens is None else special_tokens, **kwargs)


# ==== the wrong types ==============================================================================


@pytest.mark.parametrize("text", [b"bytes", bytearray(b"bytes"), None, 123, ["a list"]])
@pytest.mark.parametrize("method", ["encode", "encode_ordinary", "encode_to_numpy"])
def test_encoding_anything_but_str_is_a_type_error(enc, method, text):
    with pytest.raises(TypeError):
        getattr(enc, method)(text)


def test_bytes_are_refused_with_a_hint_to_decode_them(enc):
    with pytest.raises(TypeError, match="decode"):
        enc.encode(b"bytes")


@pytest.mark.parametrize("batch", ["a string", b"bytes", [1, "a"], ["a", None], None, 5])
@pytest.mark.parametrize("method", ["encode_batch", "encode_ordinary_batch", "encode_batch_to_numpy"])
def test_a_batch_must_be_a_sequence_of_str(enc, method, batch):
    with pytest.raises(TypeError):
        getattr(enc, method)(batch)


def test_a_batch_names_the_index_of_its_first_item_that_is_not_a_str(enc):
    with pytest.raises(TypeError, match="expected str at index 2, got bytes"):
        enc.encode_batch_to_numpy(["a", "b", b"c", None])


@pytest.mark.parametrize("method", ["encode_batch", "encode_ordinary_batch", "encode_batch_to_numpy"])
def test_str_subclasses_in_a_batch_are_encoded_as_their_text(enc, method):
    class Tagged(str):
        def __str__(self):      # the text is the str's value, whatever a subclass prints
            return "something else"

    texts = ["plain text " * 50, Tagged("tagged text " * 50)] * 200     # large enough for threads
    expected = enc.encode_ordinary_batch([str.__str__(t) for t in texts])
    result = getattr(enc, method)(texts, num_threads=2)
    if method == "encode_batch_to_numpy":
        ids, offsets = result
        result = [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))]
    assert result == expected


def test_str_chars_counts_a_batch_of_exact_strs_and_nothing_else():
    from bytebpe import _core

    assert _core.str_chars([]) == 0
    assert _core.str_chars(["ab", "", "\u00e9\U0001F600"]) == 4
    assert _core.str_chars(["ab", type("Sub", (str,), {})("cd")]) == -1
    assert _core.str_chars(["ab", b"cd"]) == -1


@pytest.mark.parametrize("tokens", [["a"], [1.5], [1, None], None, "abc", b"ab", 5, [[1]]])
def test_decoding_anything_but_ints_is_a_type_error(enc, tokens):
    with pytest.raises(TypeError):
        enc.decode(tokens)
    with pytest.raises(TypeError):
        enc.decode_bytes(tokens)


@pytest.mark.parametrize("token", [1.0, "1", None, b"1"])
def test_decode_single_token_bytes_of_a_non_int_is_a_type_error(enc, token):
    with pytest.raises(TypeError):
        enc.decode_single_token_bytes(token)


def test_numpy_float_ids_are_a_type_error(enc):
    with pytest.raises(TypeError):
        enc.decode(np.array([1.0, 2.0]))


@pytest.mark.parametrize("policy", [
    {"allowed_special": "al"},
    {"allowed_special": None},
    {"disallowed_special": None},
    {"allowed_special": 5},
])
def test_a_special_token_policy_of_the_wrong_type_is_a_type_error(enc, policy):
    with pytest.raises(TypeError):
        enc.encode("x", **policy)


def test_encode_single_token_of_a_non_str_non_bytes_is_a_type_error(enc):
    with pytest.raises(TypeError):
        enc.encode_single_token(5)


def run_in_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (with `enc` = cl100k_base), so that a crash fails one test, not the run."""
    prelude = "import bytebpe, numpy as np\nenc = bytebpe.get_encoding('cl100k_base')\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120, env=os.environ.copy())


@pytest.mark.parametrize("call", [
    "enc.decode(np.uint32(5))",              # one numpy id instead of a sequence of ids
    "enc.decode(np.int64(70000))",
    "enc.decode(np.array(5))",               # a 0-d array
    "enc.decode_bytes(np.uint32(5))",
    "enc.decode_batch(np.array([1, 2, 3]))", # a flat array where a batch of sequences is expected
    "enc.decode_bytes_batch([np.uint32(5)])",
])
def test_a_numpy_scalar_where_a_sequence_of_ids_is_expected_is_a_type_error_not_a_crash(data_dir, call):
    child = run_in_child(f"""
        try:
            {call}
        except TypeError:
            print("TypeError")
        """)
    assert (child.returncode, child.stdout.strip()) == (0, "TypeError"), child.stderr[-2000:]


def test_an_object_whose_tolist_is_not_a_list_is_refused_or_decoded_not_a_crash(data_dir):
    child = run_in_child("""
        class NotAnArray:
            def tolist(self):
                return (1, 2, 3)      # a tuple, not the list numpy would give
        try:
            print("decoded" if enc.decode(NotAnArray()) == enc.decode([1, 2, 3]) else "wrong text")
        except TypeError:
            print("TypeError")
        """)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip() in {"TypeError", "decoded"}


def test_ids_whose_index_method_empties_the_list_being_decoded_do_not_crash(data_dir):
    child = run_in_child("""
        class Emptying:
            def __init__(self, ids):
                self.ids = ids
            def __index__(self):
                self.ids.clear()
                return 1
        ids = [1]
        ids.append(Emptying(ids))
        ids.extend([2] * 100_000)
        try:
            enc.decode(ids)
        except Exception as error:
            print(type(error).__name__)
        print("survived")
        """)
    assert child.returncode == 0 and child.stdout.strip().endswith("survived"), child.stderr[-2000:]


# ==== invalid token ids ============================================================================


def test_invalid_token_error_is_both_a_key_error_and_a_value_error():
    assert issubclass(InvalidTokenError, KeyError) and issubclass(InvalidTokenError, ValueError)


@pytest.mark.parametrize("token", [-1, -2, -(2**31), -(2**32) + 5, -(2**64) + 5, MAX_TOKEN_ID + 1, 2**32 + 5, 2**40, 2**64 + 5, 2**70])
def test_an_id_outside_the_vocabulary_is_refused_never_wrapped_into_it(enc, token):
    # Several of these equal a real id modulo 2**32 or 2**64 (e.g. 2**32 + 5 and -(2**64) + 5 are 5 there).
    with pytest.raises(InvalidTokenError):
        enc.decode([token])
    with pytest.raises(InvalidTokenError):
        enc.decode_bytes([5, token])
    with pytest.raises(InvalidTokenError):
        enc.decode_single_token_bytes(token)
    with pytest.raises(InvalidTokenError):
        enc.decode_tokens_bytes([token])
    with pytest.raises(InvalidTokenError):
        enc.decode_batch([[1], [token]])


def test_an_id_just_past_the_vocabulary_is_refused(enc):
    for token in (enc.n_vocab, enc.n_vocab + 10):
        with pytest.raises(KeyError):
            enc.decode([token])
        with pytest.raises(ValueError):
            enc.decode([token])


@pytest.mark.parametrize("ids", [
    np.array([-1], dtype=np.int64),
    np.array([2**32 + 5], dtype=np.uint64),
    np.array([2**63 - 1], dtype=np.int64),
    [np.int64(-1)],
])
def test_invalid_ids_in_numpy_form_are_refused_too(enc, ids):
    with pytest.raises(InvalidTokenError):
        enc.decode(ids)


@pytest.mark.parametrize("name", sorted(GAP_IDS))
def test_an_id_in_a_gap_of_the_vocabulary_is_refused_as_in_tiktoken(name, data_dir, tiktoken_encoding):
    ours, theirs = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for token in GAP_IDS[name]:
        assert token < theirs.n_vocab
        with pytest.raises(KeyError):
            theirs.decode_single_token_bytes(token)
        with pytest.raises(InvalidTokenError):
            ours.decode_single_token_bytes(token)
        with pytest.raises(InvalidTokenError):
            ours.decode([token])
        assert not ours.is_special_token(token)


def test_the_error_names_the_invalid_id(enc):
    with pytest.raises(InvalidTokenError, match="100256"):
        enc.decode([15339, 100256])


@pytest.mark.parametrize("text_or_bytes", ["not a single token", b"not a single token", "", b"", b"\xff\xfe\xfd", "<|endoftext"])
def test_encode_single_token_of_a_non_token_is_a_key_error(enc, text_or_bytes):
    with pytest.raises(KeyError):
        enc.encode_single_token(text_or_bytes)


# ==== a bad vocabulary =============================================================================


def test_a_pattern_that_does_not_compile_is_a_value_error():
    with pytest.raises(ValueError, match="pat_str"):
        tiny_encoding(pat_str="(unclosed")


@pytest.mark.parametrize("bad_entry", [{"ab": 256}, {257: 256}, {(97, 98): 256}])
def test_a_mergeable_token_that_is_not_bytes_is_a_type_error(bad_entry):
    with pytest.raises(TypeError):
        tiny_encoding(BYTES | bad_entry)


@pytest.mark.parametrize("rank", ["256", 256.0, None])
def test_a_rank_that_is_not_an_int_is_a_type_error(rank):
    with pytest.raises(TypeError):
        tiny_encoding(BYTES | {b"ab": rank})


def test_two_tokens_with_one_rank_are_a_value_error():
    with pytest.raises(ValueError, match="rank 97"):
        tiny_encoding(BYTES | {b"ab": 97})


@pytest.mark.parametrize("rank", [-1, 2**31, 2**64])
def test_a_rank_out_of_range_is_a_value_error(rank):
    with pytest.raises(ValueError):
        tiny_encoding(BYTES | {b"ab": rank})


def test_the_empty_byte_string_is_a_token_only_at_a_rank_of_its_own():
    # tiktoken takes it (Whisper's multilingual vocabulary): no text encodes to it and it decodes to nothing.
    assert tiny_encoding(BYTES | {b"": 256}).decode_single_token_bytes(256) == b""
    with pytest.raises(ValueError, match="two tokens"):
        tiny_encoding(BYTES | {b"": 97})
    with pytest.raises(ValueError, match="outside"):
        tiny_encoding(BYTES | {b"": -1})


def test_a_special_token_with_the_id_of_a_mergeable_token_is_a_value_error():
    with pytest.raises(ValueError, match="mergeable"):
        tiny_encoding(special_tokens={"<|end|>": 97})


@pytest.mark.parametrize("special_tokens", [{"": 300}, {"<|end|>": -1}])
def test_an_empty_or_negative_special_token_is_a_value_error(special_tokens):
    with pytest.raises(ValueError):
        tiny_encoding(special_tokens=special_tokens)


@pytest.mark.parametrize("special_tokens", [{"<|end|>": "300"}, {b"<|end|>": 300}])
def test_a_special_token_of_the_wrong_type_is_a_type_error(special_tokens):
    with pytest.raises(TypeError):
        tiny_encoding(special_tokens=special_tokens)


def test_explicit_n_vocab_must_match_the_vocabulary():
    assert tiny_encoding(special_tokens={"<|end|>": 257}, explicit_n_vocab=258).n_vocab == 258
    with pytest.raises(ValueError):
        tiny_encoding(special_tokens={"<|end|>": 257}, explicit_n_vocab=259)    # count differs
    with pytest.raises(ValueError):
        tiny_encoding(special_tokens={"<|end|>": 300}, explicit_n_vocab=258)    # largest id differs


@pytest.fixture(scope="module")
def without_z() -> bytebpe.Encoding:
    """A vocabulary that gives the byte "z" no rank."""
    return tiny_encoding({token: rank for token, rank in (BYTES | {b"ab": 256}).items() if token != b"z"})


@pytest.mark.parametrize("text", [
    "z",
    "abz",
    "a" * 100 + "z",            # a piece long enough for the heap merge
    "ok " * 2000 + "z",         # enough bytes to merge with the GIL released
])
def test_text_with_a_byte_missing_from_the_vocabulary_is_a_value_error(without_z, text):
    assert without_z.encode("ab a") == [256, 32, 97]
    for encode in (without_z.encode, without_z.encode_ordinary, without_z.encode_to_numpy):
        with pytest.raises(ValueError, match="not a token"):
            encode(text)
    for encode_batch in (without_z.encode_batch, without_z.encode_ordinary_batch, without_z.encode_batch_to_numpy):
        with pytest.raises(ValueError, match="not a token"):
            encode_batch(["fine", text])


def test_a_large_batch_with_a_byte_missing_from_the_vocabulary_is_a_value_error(without_z):
    batch = ["ab " * 500] * 200 + ["z"]     # large enough to be spread over threads
    with pytest.raises(ValueError, match="not a token"):
        without_z.encode_batch(batch)
    with pytest.raises(ValueError, match="not a token"):
        without_z.encode_ordinary_batch(batch[::-1])
    # The flat output's threads stop taking groups at the first failure; the error names the earliest text's
    # piece, as a serial loop would, wherever the texts fall among the groups and threads.
    for at in (0, 150, 399):
        texts = ["ab " * 500] * 400
        texts[at] = "ab zy"
        texts[-1] = "ab zw"
        for num_threads in (2, 8):
            with pytest.raises(ValueError, match="zy" if at != 399 else "zw"):
                without_z.encode_batch_to_numpy(texts, num_threads=num_threads)


# ==== unknown names ================================================================================


def test_an_unknown_encoding_is_a_key_error_and_a_value_error_listing_the_known_names():
    with pytest.raises(KeyError) as raised:
        bytebpe.get_encoding("nope")
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    assert "nope" in message
    assert all(name in message for name in bytebpe.list_encoding_names())


@pytest.mark.parametrize("name", [None, 5, b"cl100k_base"])
def test_an_encoding_name_that_is_not_str_is_unknown(name):
    with pytest.raises(KeyError):
        bytebpe.get_encoding(name)


def test_an_unknown_model_is_a_key_error_and_a_value_error_listing_the_known_encodings():
    with pytest.raises(KeyError) as raised:
        bytebpe.encoding_for_model("nope")
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    assert "nope" in message and "get_encoding" in message
    assert all(name in message for name in bytebpe.list_encoding_names())


# ==== patterns that backtrack without bound on the `regex` engine ======================================

EXPLOSIVE = r"(a|aa)+$|\s|[^\s]"       # outside the compiled family (a repeated group): the regex engine runs it
EXPLOSIVE_TEXT = "a" * 45 + "!"        # ~fib(45) ways to read the a's before $ fails: minutes in `regex`


def _explosive_tokenizer_json(tmp_path, where: str) -> Path:
    import tokenizers
    from tokenizers import normalizers, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if where == "split":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(tokenizers.Regex(EXPLOSIVE), "isolated"),
                                                     byte_level])
    else:
        tok.normalizer = normalizers.Replace(tokenizers.Regex(r"(a|aa)+$"), "b")
        tok.pre_tokenizer = byte_level
    tok.decoder = tokenizers.decoders.ByteLevel()
    path = tmp_path / "explosive.json"
    tok.save(str(path))
    return path


@pytest.mark.parametrize("entry", ["Encoding", "batch", "train", "tokenizer.json split", "tokenizer.json replace"])
def test_a_pattern_that_backtracks_without_bound_is_refused_with_an_error_naming_it(entry, tmp_path):
    """Refused by a static check of the pattern (pretokenizer.check_backtracking), not by a time limit: the
    same error on every machine whatever its load, at once."""
    import time

    start = time.monotonic()
    with pytest.raises(bytebpe.PatternTimeoutError, match=r"\(a\|aa\)\+\$.*backtracks without bound") as error:
        if entry in ("Encoding", "batch"):
            enc = bytebpe.Encoding("x", pat_str=EXPLOSIVE, mergeable_ranks={bytes([b]): b for b in range(256)},
                                   special_tokens={})
            if entry == "batch":
                enc.encode_ordinary_batch(["fine", EXPLOSIVE_TEXT, "fine"])
            else:
                enc.encode_ordinary(EXPLOSIVE_TEXT)
        elif entry == "train":
            bytebpe.train([EXPLOSIVE_TEXT] * 3, 260, pat_str=EXPLOSIVE)
        else:
            pytest.importorskip("tokenizers")
            path = _explosive_tokenizer_json(tmp_path, entry.split()[-1])
            bytebpe.from_tokenizer_json(path).encode_ordinary(EXPLOSIVE_TEXT)
    assert isinstance(error.value, ValueError)
    assert "'(a|aa)+'" in str(error.value)     # the repeat, by name
    assert time.monotonic() - start < 30
