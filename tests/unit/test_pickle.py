"""Encodings pickle: a named one as its name, anything else by value, so they travel to worker processes.

A named encoding (the instance `get_encoding` built) pickles as a call to `get_encoding(name)`: the payload
is a few dozen bytes, and unpickling in the same process gives back the very same cached object. An encoding
built by hand, or derived with `with_special_tokens`, pickles its pattern, ranks and special tokens.
"""
from __future__ import annotations

import copy
import functools
import multiprocessing
import pickle

import pytest

import bytebpe
from bytebpe import Encoding

TEXTS = [
    "Hello, world!",
    "def f(x):\n    return x ** 2\n",
    "日本語 😀 \r\n  ",
    "",
    "<|im_start|>user\nhi<|im_end|><|endoftext|>",
]
IM_TOKENS = {"<|im_start|>": 100264, "<|im_end|>": 100265}
PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


@pytest.fixture
def cl100k(data_dir) -> Encoding:
    return bytebpe.get_encoding("cl100k_base")


@pytest.fixture
def custom() -> Encoding:
    """A small hand-built encoding: the 256 bytes, three merges and one special token."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257, b" ab": 258}
    return Encoding("custom", pat_str=r" ?\w+|\s+|[^\w\s]+", mergeable_ranks=ranks, special_tokens={"<|end|>": 259})


def round_trip(encoding: Encoding, protocol: int = pickle.HIGHEST_PROTOCOL) -> Encoding:
    return pickle.loads(pickle.dumps(encoding, protocol=protocol))


def all_ids(encoding: Encoding) -> list[list[int]]:
    return [encoding.encode(text, disallowed_special=()) for text in TEXTS] + [
        encoding.encode(text, allowed_special="all") for text in TEXTS]


# ==== in one process ===============================================================================


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_named_encoding_pickles_as_its_name_and_unpickles_to_the_cached_object(cl100k, protocol):
    payload = pickle.dumps(cl100k, protocol=protocol)
    assert len(payload) < 1024
    assert b"cl100k_base" in payload
    assert pickle.loads(payload) is cl100k


def test_copying_a_named_encoding_gives_the_cached_object(cl100k):
    assert copy.copy(cl100k) is cl100k
    assert copy.deepcopy(cl100k) is cl100k


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_custom_encoding_pickles_by_value(custom, protocol):
    restored = round_trip(custom, protocol)
    assert restored is not custom
    assert restored.name == "custom"
    assert restored.special_tokens == custom.special_tokens
    assert restored.mergeable_ranks == custom.mergeable_ranks
    assert restored.encode("abc ab abab <|end|>", allowed_special="all") == [257, 258, 258, 256, 32, 259]
    assert all_ids(restored) == all_ids(custom)


def test_a_custom_encoding_that_shares_a_registered_name_still_pickles_by_value(cl100k):
    impostor = Encoding("cl100k_base", pat_str=r"\S+|\s+",
                        mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={})
    restored = round_trip(impostor)
    assert restored is not cl100k
    assert restored.encode("hello") == impostor.encode("hello") == list(b"hello")


def test_a_derived_encoding_pickles_by_value_with_its_new_special_tokens(cl100k):
    derived = cl100k.with_special_tokens(IM_TOKENS, name="cl100k_im")
    restored = round_trip(derived)
    assert restored.name == "cl100k_im"
    assert restored.special_tokens == derived.special_tokens
    assert all_ids(restored) == all_ids(derived)
    assert restored.decode([100264, 100265]) == "<|im_start|><|im_end|>"
    assert cl100k.special_tokens_set == round_trip(cl100k).special_tokens_set   # the original is untouched


def test_a_derived_encoding_that_keeps_the_registered_name_is_not_confused_with_it(cl100k):
    derived = cl100k.with_special_tokens(IM_TOKENS, name="cl100k_base")
    restored = round_trip(derived)
    assert restored is not cl100k
    assert restored.encode("<|im_end|>", allowed_special="all") == [100265]


# ==== across processes =============================================================================


@pytest.fixture(scope="module")
def spawn_pool(data_dir):
    """Two fresh interpreters (spawn, not fork): they load what they need from BYTEBPE_DATA_DIR themselves."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        yield pool


def test_a_named_encoding_works_in_a_spawned_pool(cl100k, spawn_pool):
    encode_all = functools.partial(Encoding.encode, allowed_special="all")
    assert spawn_pool.starmap(encode_all, [(cl100k, text) for text in TEXTS]) == [
        cl100k.encode(text, allowed_special="all") for text in TEXTS]
    assert spawn_pool.starmap(Encoding.decode, [(cl100k, ids) for ids in all_ids(cl100k)]) == [
        cl100k.decode(ids) for ids in all_ids(cl100k)]


def test_in_a_child_a_named_encoding_unpickles_to_the_childs_cached_one_and_others_do_not(cl100k, spawn_pool):
    impostor = cl100k.with_special_tokens(IM_TOKENS, name="cl100k_base")
    assert spawn_pool.map(is_the_cached_encoding, [cl100k, cl100k, impostor]) == [True, True, False]


def test_a_custom_encoding_works_in_a_spawned_pool(custom, spawn_pool):
    assert spawn_pool.map(all_ids_of, [custom, custom]) == [all_ids(custom)] * 2


def test_a_derived_encoding_works_in_a_spawned_pool(cl100k, spawn_pool):
    derived = cl100k.with_special_tokens(IM_TOKENS, name="cl100k_im")
    encode_all = functools.partial(Encoding.encode, allowed_special="all")
    assert spawn_pool.starmap(encode_all, [(derived, text) for text in TEXTS]) == [
        derived.encode(text, allowed_special="all") for text in TEXTS]


def all_ids_of(encoding: Encoding) -> list[list[int]]:
    """`all_ids`, importable by name from a child process."""
    return all_ids(encoding)


def is_the_cached_encoding(encoding: Encoding) -> bool:
    """Whether `encoding` is the instance `get_encoding` gives for its name in this process."""
    return bytebpe.get_encoding(encoding.name) is encoding
