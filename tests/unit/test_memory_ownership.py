"""The compiled code reads only memory its own call holds (the ownership rule in `_shared.pxd`).

Each test builds a situation in which a pointer taken from someone else's object would dangle: text cut
into multi-character segments that die with the function that cut them, a caller's list that loses its
items while the GIL is released, a callable that changes the list it returned earlier. Freed memory is
often still intact, so a violation can pass by luck; `.ci/run` runs this module under PYTHONMALLOC=debug,
which overwrites freed memory at once and turns a dangling read into wrong ids here.

Also here: the other reads of memory that is not there — an empty span's "first two bytes" — and 64-bit
counts that must refuse to wrap around.
"""
from __future__ import annotations

import sys
import threading
from collections import Counter

import pytest

import bytebpe
from bytebpe import _core, patterns
from bytebpe._pretokenize import Scanner
from bytebpe._train import BPETrainer, PieceCounts
from bytebpe.pretokenizer import compile_pattern

ENGINES = ["compiled", "regex"]


@pytest.fixture(scope="module")
def cl100k(data_dir) -> bytebpe.Encoding:
    return bytebpe.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def tik(tiktoken_encoding):
    return tiktoken_encoding("cl100k_base")


def fresh(text: str) -> str:
    """An equal str that is a new object (CPython would otherwise share literals and cached strs)."""
    return "".join(list(text))


class ReadSignal(list):
    """A list that sets `read` once a caller has iterated over all of it, i.e. taken its private copy."""

    def __init__(self, items) -> None:
        super().__init__(items)
        self.read = threading.Event()

    def __iter__(self):
        yield from super().__iter__()
        self.read.set()


def run_while_another_thread_clears(items: ReadSignal, call):
    """call() on a worker thread; as soon as it has read `items` (the caller's list), this thread empties
    it, with the GIL handed over as often as possible so that the clearing lands while the call runs.
    Returns call()'s result."""
    result: list = []
    items.read.clear()      # (the test itself may have read the list to work out what to expect)
    previous_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        worker = threading.Thread(target=lambda: result.append(call()))
        worker.start()
        # (A call that never iterates over the list, as one that reads its items in place would not, is
        # cleared after a second, most likely while it still runs.)
        items.read.wait(timeout=1)
        items.clear()
        worker.join()
    finally:
        sys.setswitchinterval(previous_interval)
    assert result, "the call raised (see the thread's traceback above)"
    return result[0]


# ---- text between special tokens: segments die with the splitter's result ---------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_ordinary_text_between_allowed_specials_in_a_batch_of_one_repeated_str(cl100k, tik, engine):
    enc = cl100k.with_pretokenizer(engine)
    text = "<|endoftext|>text<|endoftext|>"
    expected = tik.encode_batch([text] * 2, allowed_special="all")
    assert expected == [[100257, 1342, 100257]] * 2
    assert enc.encode_batch([text] * 2, allowed_special="all") == expected


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("segment", ["1 " * 5000, "héllo wörld " * 400, "x" * 3, "日本語のテキスト" * 700])
def test_long_segments_between_allowed_specials(cl100k, tik, engine, segment):
    enc = cl100k.with_pretokenizer(engine)
    text = "<|endoftext|>" + segment + "<|fim_prefix|>" + segment[::-1] + "<|endoftext|>"
    expected = tik.encode(text, allowed_special="all")
    assert enc.encode(text, allowed_special="all") == expected
    assert enc.encode_to_numpy(text, allowed_special="all").tolist() == expected
    assert enc.encode_batch([text, fresh(text), text], allowed_special="all", num_threads=1) == [expected] * 3


# ---- the core, called with callables that drop what they handed over ----------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_whose_list_is_emptied_while_it_is_encoded_still_encodes_every_text(cl100k, engine):
    """The special-token splitter runs Python code in the middle of a batch; here it empties the caller's
    list, so the texts after the first survive only if the core holds them itself."""
    texts = [fresh(f"document {i}: " + "some words and more words " * 200) for i in range(5)]
    expected = [cl100k.encode_ordinary(text) for text in texts]
    splitter = cl100k._special_policy("all", "all").special_split

    def split_and_drop_the_batch(text: str) -> list[str]:
        texts.clear()
        return splitter(text)

    pretokenizer = cl100k.with_pretokenizer(engine)._pretokenize
    assert cl100k._core.encode_batch(pretokenizer, split_and_drop_the_batch, texts) == expected


def test_pieces_returned_by_a_callable_that_reuses_its_list(cl100k):
    """A pre-tokenizer that hands out the same list every time, emptied and refilled: the pieces of an
    earlier text are gone from it before they are merged, unless the core copied the list."""
    pattern = compile_pattern(cl100k._pat_str)
    shared: list[str] = []

    def findall(text: str) -> list[str]:
        shared.clear()
        shared.extend(fresh(piece) for piece in pattern.findall(text))
        return shared

    texts = [fresh("naïve café owners' résumés " * 300), fresh("ordinary words, again and again " * 300)]
    expected = [cl100k.encode_ordinary(text) for text in texts]
    assert cl100k._core.encode_batch(findall, None, texts) == expected


def test_pieces_must_be_str_bytes_or_ids(cl100k):
    # bytes: a piece cut inside a character (a tokenizer.json splitting after ByteLevel); an int: an id the
    # pre-tokenizer chose (a character the vocabulary lacks). Held like the strs.
    assert cl100k._core.encode_pieces(["abc", b"def"]) == cl100k.encode_ordinary("abc") + cl100k.encode_ordinary("def")
    assert cl100k._core.encode(lambda text: [b"\xe4\xbd", b"\xa0", 42], None, "x") == \
        cl100k._core.encode_pieces([b"\xe4\xbd", b"\xa0"]) + [42]
    with pytest.raises(ValueError, match="outside"):
        cl100k._core.encode(lambda text: [-1], None, "x")
    with pytest.raises(TypeError, match="must be str"):
        cl100k._core.encode(lambda text: [("tuple", "from a group")], None, "text")


def test_a_list_cleared_by_another_thread_during_a_batch(cl100k):
    """The GIL is released between groups of texts; every text of the list as it was passed must be read
    from memory the call holds, and encoded."""
    for _ in range(5):
        texts = ReadSignal(fresh(f"text {i} " + "plain ascii words that need merging " * 300) for i in range(64))
        expected = [cl100k.encode_ordinary(text) for text in texts]
        assert run_while_another_thread_clears(
            texts, lambda: cl100k._core.encode_batch(cl100k._pretokenize, None, texts)) == expected


# ---- the trainer's inputs ------------------------------------------------------------------------------

def test_add_pieces_holds_its_pieces_while_another_thread_clears_the_list():
    for _ in range(5):
        pieces = ReadSignal(fresh(f"piece{i % 997} ") for i in range(200_000))
        expected = PieceCounts()
        expected.add_counts(Counter(piece.encode() for piece in pieces))
        counts = PieceCounts()
        run_while_another_thread_clears(pieces, lambda: counts.add_pieces(pieces))
        assert counts.to_dict() == expected.to_dict()


def test_add_texts_holds_its_texts_while_another_thread_clears_the_list():
    scanner = Scanner.for_pattern(patterns.CL100K_PATTERN)
    for _ in range(5):
        texts = ReadSignal(fresh(f"text {i}: the same words again " * 50) for i in range(200))
        expected = PieceCounts()
        expected.add_pieces([piece for text in texts for piece in scanner.split(text)])
        counts = PieceCounts()
        run_while_another_thread_clears(texts, lambda: counts.add_texts(scanner, texts))
        assert counts.to_dict() == expected.to_dict()


def test_update_refuses_a_source_that_another_thread_is_filling():
    """`update(other)` reads other's memory, which moves while another thread adds to it: refused."""
    pieces = [f"p{i}" for i in range(500_000)]
    refused = False
    for _ in range(20):
        other = PieceCounts()
        worker = threading.Thread(target=other.add_pieces, args=(pieces,))
        worker.start()
        while worker.is_alive() and not refused:
            try:
                PieceCounts().update(other)
            except RuntimeError as error:
                assert "in use" in str(error)
                refused = True
        worker.join()
        if refused:
            break
    assert refused
    # Once the other thread is done, update works and leaves both usable.
    total = PieceCounts()
    total.update(other)
    assert total.to_dict() == other.to_dict()
    other.add_counts({b"more": 1})


def test_counts_refuse_to_wrap_around_and_change_nothing_when_they_do():
    counts = PieceCounts()
    counts.add_counts({b"ab": 2**62 - 1})
    counts.add_counts({b"ab": 2**62 - 1})
    with pytest.raises(OverflowError):
        counts.add_counts({b"cd": 1, b"ab": 1})
    other = PieceCounts()
    other.add_counts({b"cd": 2})
    with pytest.raises(OverflowError):
        counts.update(other)
    assert counts.to_dict() == {b"ab": 2**63 - 2} and counts.total_pieces == 2**63 - 2
    counts.add_counts({b"ab": 1})
    assert counts.to_dict() == {b"ab": 2**63 - 1}


def test_training_refuses_pair_counts_that_could_wrap_around():
    counts = PieceCounts()
    counts.add_counts({b"abcd": 2**62 - 1})    # 3 adjacent pairs: 3 * (2**62 - 1) > 2**63 - 1
    with pytest.raises(OverflowError, match="pair counts"):
        BPETrainer(counts)
    fits = PieceCounts()
    fits.add_counts({b"ab": 2**62 - 1, b"cd": 2**62 - 2})
    trainer = BPETrainer(fits)
    assert trainer.merge(2) == 2 and trainer.merges == [(97, 98), (99, 100)]


# ---- an empty span has no bytes to read ---------------------------------------------------------------

def test_the_empty_string_is_never_a_token_even_when_zero_byte_pairs_are():
    """b"" points at the terminating NUL of a bytes object; a lookup that read two bytes for it would
    find the token b"\\x00" + whatever follows."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"\x00" + bytes([b]): 256 + b for b in range(256)})
    table = _core.MergeTable(ranks)
    assert table.rank(b"") is None
    enc = bytebpe.Encoding("zero-pairs", pat_str=patterns.CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    for empty in (b"", "", bytearray(), memoryview(b"")):
        with pytest.raises(KeyError):
            enc.encode_single_token(empty)


def test_result_lists_hold_one_reference_per_id_and_nothing_leaks(cl100k):
    # Lists are filled through raw item pointers (CoreBPE._to_list): each id takes exactly one reference, to
    # the table's int object for a mergeable token or to a new int for a special one, and a freed list
    # gives it back. Balanced counts keep the table's ints alive and free the rest.
    text = "hello world, hello again <|endoftext|> and again <|endoftext|>"
    ids = cl100k.encode(text, allowed_special="all")
    hello = ids[0]
    before = sys.getrefcount(hello)
    kept = [cl100k.encode(text, allowed_special="all") for _ in range(100)]
    assert sys.getrefcount(hello) == before + 100
    del kept
    assert sys.getrefcount(hello) == before
    for _ in range(1000):     # warm up every free list and cache first
        cl100k.encode_batch([text] * 3, allowed_special="all")
    blocks = sys.getallocatedblocks()
    for _ in range(20_000):
        cl100k.encode(text, allowed_special="all")
        cl100k.encode_batch([text] * 3, allowed_special="all")
    assert sys.getallocatedblocks() - blocks < 100


ID_LIST_METHODS = {
    "encode": lambda enc, texts: [enc.encode(text, allowed_special="all") for text in texts],
    "encode_ordinary": lambda enc, texts: [enc.encode_ordinary(text) for text in texts],
    "encode_batch": lambda enc, texts: enc.encode_batch(texts, allowed_special="all"),
    "encode_ordinary_batch": lambda enc, texts: enc.encode_ordinary_batch(texts),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", sorted(ID_LIST_METHODS))
def test_id_lists_are_not_tracked_by_the_cycle_collector_and_behave_as_lists(cl100k, tik, engine, method):
    # An id list holds only ints, which cannot form a cycle, so it is made untracked (CoreBPE._to_list
    # says what that saves). Everything else about it is an ordinary list, mutable and collectable.
    import gc

    enc = cl100k.with_pretokenizer(engine)
    texts = ["hello world <|endoftext|> again", "", "日本語のテキスト " * 50, "x" * 70_000] * 3
    results = ID_LIST_METHODS[method](enc, texts)
    assert results == ID_LIST_METHODS[method](tik, texts)
    if method.endswith("_batch"):
        assert gc.is_tracked(results)    # the outer list holds lists: the collector must see it
    assert not any(gc.is_tracked(ids) for ids in results)
    ids = results[0]
    ids.append([ids])   # a list may hold anything afterwards; a cycle through it is the caller's to break
    ids.sort(key=str)
    gc.collect()
    assert ids[-1][0] is ids
    ids.pop()
    assert sorted(ids) == sorted(ID_LIST_METHODS[method](tik, texts[:1])[0])


@pytest.mark.parametrize("target_ids", [0, 1, 2, 4095, 4096, 4097, 20_000])
def test_numpy_results_own_their_memory_on_both_sides_of_the_copy_threshold(cl100k, tik, target_ids):
    # _to_numpy copies up to NUMPY_COPY_MAX_IDS (4096) ids into a fresh array, writing through the array's
    # own data pointer, and lends the vector beyond that. Either way the array is a writable, C-contiguous
    # uint32 array that outlives every temporary of the call, and writing to it changes nothing else.
    import numpy as np

    text = fresh("a" + " b" * max(target_ids - 1, 0)) if target_ids else fresh("")
    expected = tik.encode_ordinary(text)
    assert len(expected) == target_ids
    arrays = [cl100k.encode_to_numpy(fresh(text)) for _ in range(3)]
    ids, offsets = cl100k.encode_batch_to_numpy([fresh(text), fresh(text)])
    for _ in range(3):
        cl100k.encode_ordinary(fresh("churn the allocator " * 200))
    for array in arrays:
        assert array.dtype == np.uint32 and array.flags.c_contiguous and array.flags.writeable
        assert array.tolist() == expected
    assert ids.tolist() == expected * 2 and offsets.tolist() == [0, target_ids, 2 * target_ids]
    if target_ids:
        arrays[0][0] = 7
        assert arrays[1].tolist() == expected and cl100k.encode_ordinary(text) == expected
    blocks = sys.getallocatedblocks()
    for _ in range(2000):
        cl100k.encode_to_numpy(text)
    assert sys.getallocatedblocks() - blocks < 50


def test_small_numpy_results_come_from_numpys_c_constructor_and_hold_one_reference_to_the_dtype(cl100k, tik):
    # Up to NUMPY_COPY_MAX_IDS ids, the array is made by PyArray_NewFromDescr from numpy's C API table, which
    # steals a reference to the dtype: the core adds one per array, and every array gives it back when freed.
    import numpy as np

    text = fresh("hello world, " * 20)
    expected = tik.encode_ordinary(text)
    cl100k.encode_to_numpy(text)
    assert _core._numpy_constructor() == "PyArray_NewFromDescr"
    dtype = np.dtype(np.uint32)
    before = sys.getrefcount(dtype)
    arrays = [cl100k.encode_to_numpy(text) for _ in range(1000)]
    assert sys.getrefcount(dtype) == before + 1000
    assert all(array.dtype is dtype and array.base is None and array.flags.owndata for array in arrays)
    assert all(array.tolist() == expected for array in arrays)
    del arrays
    assert sys.getrefcount(dtype) == before
