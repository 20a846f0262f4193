"""The persistent piece cache (`_piece_cache.h`): it never changes ids, it stays within its bound, 0 is off.

The cache is shared by every encoding over one merge table and used by batch threads without the GIL, so
the ids are checked against tiktoken with the cache on (tiny, so that entries are replaced all the time,
and at the default), off, and with many threads hammering one encoding (sequence locks: a torn entry must
never be read as a hit) while another thread replaces the cache under them. `.ci/run` runs this module under PYTHONMALLOC=debug too: a cache that kept a pointer into
a piece's text instead of copying it would then return the 0xDD bytes of freed memory as ids.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytebpe

# A bound of 32 entries of 64 bytes (16 pairs): a handful of pieces contends for every pair.
TINY = 2048
# Pieces the cache takes: up to 24 bytes, ending in an ASCII byte, not tokens of cl100k_base.
WORD, OTHER = " overshadowed", " photosynthesis"


@pytest.fixture(scope="module")
def tik(tiktoken_encoding):
    return tiktoken_encoding("cl100k_base")


def private_encoding(max_bytes: int, pretokenizer: str = "auto") -> bytebpe.Encoding:
    """cl100k_base over a merge table of its own, so that its cache is not the registry's shared one."""
    named = bytebpe.get_encoding("cl100k_base")
    enc = bytebpe.Encoding("cl100k_base", pat_str=named._pat_str, mergeable_ranks=named._mergeable_ranks,
                           special_tokens=named._special_tokens, pretokenizer=pretokenizer)
    enc.set_piece_cache_bytes(max_bytes)
    return enc


@pytest.fixture(scope="module", params=["compiled", "regex"])
def caches(request, data_dir):
    """(tiny cache, default-sized cache, cache off), one engine."""
    default = bytebpe.get_encoding("cl100k_base").piece_cache_info().max_bytes
    return tuple(private_encoding(size, request.param) for size in (TINY, default, 0))


WORDS = ["hello", " world", " understanding", " Pneumonoultramicroscopic", "ing", " the", "日本語のテキスト",
         " привет", "🙂🙃", "  ", "\n\n", "12345", " déjà", "'s", " x" * 3, "<|endoftext|>", "<|fim_prefix|>",
         "\ud800", "\udfff", "a\ud83d\ude00b"]


@settings(max_examples=60, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=30)), max_size=40), st.integers(1, 3))
def test_ids_with_the_cache_on_tiny_default_and_off_equal_tiktokens(caches, tik, parts, repeats):
    # Repeated so that pieces are met again (stored on their first sight, then found), across calls too.
    text = "".join(parts) * repeats
    expected = tik.encode(text, allowed_special="all")
    expected_ordinary = tik.encode_ordinary(text)
    for enc in caches:
        for _ in range(2):
            assert enc.encode(text, allowed_special="all") == expected
            assert enc.encode_ordinary(text) == expected_ordinary
            assert enc.encode_ordinary_batch([text, text[::-1], text]) == [
                expected_ordinary, tik.encode_ordinary(text[::-1]), expected_ordinary]


def test_the_cache_is_used_and_counts_what_it_does(data_dir):
    enc = private_encoding(1 << 20)
    assert enc.piece_cache_info().bytes == 0        # nothing allocated before the first piece is stored
    sentence = "Overshadowed photosynthesis, notwithstanding the wherewithal. "
    enc.encode_ordinary(sentence)
    first = enc.piece_cache_info()
    assert first.lookups > 0 and first.hits == 0
    assert first.admitted == first.lookups == first.entries         # each stored on its first sight
    enc.encode_ordinary(sentence)
    info = enc.piece_cache_info()
    assert info.hits == first.lookups and info.entries == first.entries    # found on the second call
    assert info.max_bytes == info.bytes == 1 << 20                  # the table: the whole bound, 2**14 entries
    assert info.evictions == 0


def test_a_piece_met_again_in_the_same_call_is_found(data_dir):
    enc = private_encoding(1 << 20)
    enc.encode_ordinary(WORD * 3)
    info = enc.piece_cache_info()
    assert (info.lookups, info.hits, info.entries) == (3, 2, 1)


def test_pieces_the_cache_does_not_take_are_merged_through_the_calls_own_cache(data_dir, tik):
    enc = private_encoding(1 << 20)
    longer = " Pneumonoultramicroscopicsilicovolcanoconiosis"     # 46 bytes: more than an entry holds
    assert enc.encode_ordinary(longer * 3) == tik.encode_ordinary(longer * 3)
    info = enc.piece_cache_info()
    assert (info.lookups, info.entries) == (0, 0)


BEYOND_LATIN = " свобода 안녕하세요 القاهرة"     # three pieces of 15-16 bytes and 3-6 ids, none a token


@pytest.mark.parametrize("pretokenizer", ["compiled", "regex"])
def test_words_of_every_script_use_the_cache_in_calls_of_documents_size(data_dir, tik, pretokenizer):
    enc = private_encoding(1 << 20, pretokenizer)
    assert all(len(tik.encode_ordinary(word)) > 1 for word in BEYOND_LATIN.split(" ")[1:])
    for _ in range(2):
        assert enc.encode_ordinary(BEYOND_LATIN) == tik.encode_ordinary(BEYOND_LATIN)
    info = enc.piece_cache_info()
    assert (info.lookups, info.hits, info.entries) == (6, 3, 3)
    # A Latin word with an accent inside ends in an ASCII letter, like English words.
    latin = " déjàvuxyz ünterschiedlichq"
    for _ in range(3):
        assert enc.encode_ordinary(latin) == tik.encode_ordinary(latin)
    info = enc.piece_cache_info()
    assert info.entries == 5 and info.hits == 3 + 4


@pytest.mark.parametrize("pretokenizer", ["compiled", "regex"])
def test_a_large_call_keeps_words_of_other_scripts_in_its_own_cache(data_dir, tik, pretokenizer):
    # Above MULTIBYTE_PERSIST_MAX_CALL_BYTES (128 KiB) the compiled path sends pieces that end in a byte of a
    # multi-byte character to the call's own cache: whole multilingual calls ran 0.75-0.95x as fast through
    # the persistent one. The regex engine's path has no call cache: it always uses the persistent one.
    enc = private_encoding(1 << 20, pretokenizer)
    text = BEYOND_LATIN * 3000 + " overshadowed"      # ~170 KB
    assert enc.encode_ordinary(text) == tik.encode_ordinary(text)
    info = enc.piece_cache_info()
    if pretokenizer == "compiled":
        assert (info.lookups, info.entries) == (1, 1)     # only the Latin word
    else:
        assert info.entries == 4 and info.hits == 3 * 3000 - 3


def test_zero_turns_the_cache_off(data_dir, tik):
    enc = private_encoding(0)
    text = "Overshadowed photosynthesis notwithstanding. " * 50
    for _ in range(3):
        assert enc.encode_ordinary(text) == tik.encode_ordinary(text)
    assert enc.piece_cache_info() == bytebpe.PieceCacheInfo(0, 0, 0, 0, 0, 0, 0)


def test_the_setting_is_shared_by_encodings_over_the_same_table(data_dir):
    enc = private_encoding(1 << 20)
    siblings = [enc.with_special_tokens({"<|mine|>": 200_000}), enc.with_pretokenizer("regex")]
    for sibling in siblings:
        sibling.encode_ordinary(WORD)
    info = enc.piece_cache_info()
    assert (info.entries, info.hits) == (1, 1)     # stored by one sibling, found by the other
    siblings[0].set_piece_cache_bytes(0)
    assert enc.piece_cache_info().max_bytes == 0 and siblings[1].piece_cache_info().max_bytes == 0


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("1", TypeError), (True, TypeError)])
def test_a_bad_bound_is_refused(data_dir, bad, error):
    with pytest.raises(error):
        private_encoding(1 << 20).set_piece_cache_bytes(bad)


def unique_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct words of 4-10 random consonants with their space: pieces the cache takes (most have
    at most 7 ids)."""
    words: set[str] = set()
    while len(words) < count:
        words.add(" " + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(rng.randint(4, 10))))
    return sorted(words)


@pytest.mark.parametrize("order", ["met again in turn", "met again reversed"])
def test_a_calls_own_cache_grows_while_it_fills_and_keeps_every_piece_it_holds(data_dir, tik, order):
    # With the persistent cache off, every piece to merge goes to the call's own cache. It starts small and
    # grows (4,096 slots, then 16,384, then 65,536 for a call of 2 MB or more) as pieces come: 20,000 distinct
    # words pass every size, and each is met again after the last growth, its ids then read from the cache.
    # Whole tokens pad the call to 2 MB without adding pieces to merge.
    enc = private_encoding(0)
    words = unique_words(random.Random(11), 20_000)
    again = words if order == "met again in turn" else words[::-1]
    text = "".join(words) + " the" * 450_000 + "".join(again)
    assert len(text) > 2_000_000
    expected = tik.encode_ordinary(text)
    assert enc.encode_ordinary(text) == expected
    assert enc.encode_to_numpy(text).tolist() == expected


@pytest.mark.parametrize("max_bytes", [1, 127, 128, TINY, 100_000, 1 << 20, 5_000_000])
def test_the_bound_holds_under_a_stream_of_unique_pieces(data_dir, tik, max_bytes):
    enc = private_encoding(max_bytes)
    rng = random.Random(max_bytes)
    for round_ in range(40):
        # Unique pieces, each met twice (the second text finds them), with a frequent one among them.
        text = "".join(unique_words(rng, 500)) + WORD
        assert enc.encode_ordinary_batch([text, text]) == [tik.encode_ordinary(text)] * 2
        info = enc.piece_cache_info()
        assert info.bytes <= info.max_bytes == max_bytes
        assert info.entries <= info.bytes // 64
    if max_bytes < 128:     # not room for one pair of entries: nothing is stored
        assert (info.bytes, info.entries, info.admitted) == (0, 0, 0)
        return
    assert info.admitted > 10_000 or max_bytes < 100_000
    assert info.hits > 0
    if max_bytes <= 1 << 20:
        assert info.evictions > 0
    if max_bytes == 1 << 20:
        # The frequent piece is met every round: the unique pieces never push it out for long.
        before = info.hits
        enc.encode_ordinary(WORD)
        assert enc.piece_cache_info().hits == before + 1


def test_one_off_pieces_never_push_out_a_piece_hit_between_them(data_dir, tik):
    # 16 pairs of entries, a flood of 3,000 one-off pieces: every pair is contested ~190 times, and the
    # piece met between each two of them keeps its place each time (a newcomer takes only an entry that was
    # not marked since it came, after clearing the marks of a pair that was). It is marked at every fourth
    # hit (one lookup in 8 marks, and every other lookup is its), its pair contested about every 16th.
    enc = private_encoding(TINY)
    others = unique_words(random.Random(3), 3000)
    text = "".join(WORD + other for other in others)
    assert enc.encode_ordinary(text) == tik.encode_ordinary(text)
    info = enc.piece_cache_info()
    assert info.hits == len(others) - 1 and info.evictions > 1000
    assert info.entries == 32


def test_many_threads_on_one_encoding_while_the_cache_is_replaced(data_dir, tik, corpus_dir):
    enc = private_encoding(TINY * 8)
    with open(corpus_dir / "english_prose.txt", encoding="utf-8") as file:
        prose = file.read(200_000)
    with open(corpus_dir / "multilingual.txt", encoding="utf-8") as file:
        multilingual = file.read(100_000)
    documents = [prose[i:i + 5000] for i in range(0, len(prose), 5000)]
    documents += [multilingual[i:i + 3000] for i in range(0, len(multilingual), 3000)]
    expected = [tik.encode_ordinary(document) for document in documents]
    failures: list[str] = []
    stop = threading.Event()

    def hammer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(6):
            order = list(range(len(documents)))
            rng.shuffle(order)
            # Fresh str objects, dropped after each call: under PYTHONMALLOC=debug a pointer into one that the
            # cache kept would read 0xDD bytes at the next call.
            texts = ["".join(list(documents[i])) for i in order]
            got = enc.encode_ordinary_batch(texts, num_threads=2)
            del texts
            if got != [expected[i] for i in order]:
                failures.append(f"thread {seed}")

    def replace() -> None:
        sizes = [TINY, 0, 1 << 20, TINY * 8, 300_000]
        while not stop.is_set():
            enc.set_piece_cache_bytes(sizes[0])
            sizes.append(sizes.pop(0))
            stop.wait(0.002)

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(6)]
    replacer = threading.Thread(target=replace)
    replacer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    replacer.join()
    assert not failures


def test_threads_contending_for_a_few_entries_never_read_a_torn_one(data_dir, tik):
    # Words of one length competing for 16 pairs of entries, two pool threads and the caller's thread all
    # storing and reading at once: an entry is rewritten with another word's bytes and ids while the other
    # threads look it up, and a read that overlapped a write must come back a miss (the sequence lock), never
    # one word's bytes with another's ids. Each batch holds the same documents in another order.
    enc = private_encoding(TINY)
    rng = random.Random(11)
    words = [word for word in unique_words(rng, 400) if len(word) == 9][:60]
    assert len(words) >= 40
    documents = [" ".join(rng.choice(words) for _ in range(400)) for _ in range(24)]
    expected = {document: tik.encode_ordinary(document) for document in documents}
    for round_ in range(8):
        rng.shuffle(documents)
        assert enc.encode_ordinary_batch(documents, num_threads=2) == [expected[d] for d in documents]
    info = enc.piece_cache_info()
    assert info.hits > 1000 and info.evictions > 100


def test_the_environment_variable_sets_the_default(data_dir):
    code = ("import bytebpe; enc = bytebpe.get_encoding('cl100k_base'); enc.encode('x');"
            "print(enc.piece_cache_info().max_bytes)")
    env = dict(os.environ, BYTEBPE_PIECE_CACHE_BYTES="123456")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "123456"
    env["BYTEBPE_PIECE_CACHE_BYTES"] = "lots"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "BYTEBPE_PIECE_CACHE_BYTES" in result.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("max_bytes", [1 << 20, 4 << 20])     # malloc'd; whole huge pages, mapped
def test_a_forked_child_starts_with_an_empty_working_cache(data_dir, tik, max_bytes):
    enc = private_encoding(max_bytes)
    text = (WORD + OTHER) * 3
    enc.encode_ordinary(text)
    assert enc.piece_cache_info().entries > 0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:    # the child: report and leave without running the parent's cleanup
        emptied = enc.piece_cache_info()
        ok = emptied.entries == emptied.bytes == 0 and enc.encode_ordinary(text) == tik.encode_ordinary(text)
        again = enc.piece_cache_info()
        ok = ok and again.entries == 2 and again.bytes == again.max_bytes    # a table of its own, made anew
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"1"


def test_a_cache_taken_out_and_put_back_keeps_what_it_held(data_dir):
    enc = private_encoding(1 << 20)
    enc.encode_ordinary(WORD)
    held = enc._table._swap_piece_cache(None)
    assert enc.piece_cache_info().max_bytes == 0
    enc.encode_ordinary(WORD)       # cache out: not counted
    enc._table._swap_piece_cache(held)
    enc.encode_ordinary(WORD)
    info = enc.piece_cache_info()
    assert (info.entries, info.hits) == (1, 1)
    with pytest.raises(TypeError):
        enc._table._swap_piece_cache("not a cache")
