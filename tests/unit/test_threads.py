"""Batches and threads: results equal a serial loop, in order, and a long encode does not hold the GIL."""
from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import bytebpe
from bytebpe import batching

from ..gil import ticks_during


def documents(corpus_dir, count=400):
    text = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:2_000_000]
    lines = text.split("\n")
    return ["\n".join(lines[i : i + 7]) for i in range(0, 7 * count, 7)]


def test_batch_equals_serial_for_every_thread_count(corpus_dir, data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    docs = documents(corpus_dir)
    assert sum(map(len, docs)) > batching.SERIAL_BATCH_CHARS  # big enough to use the pool
    serial = [enc.encode_ordinary(doc) for doc in docs]
    for num_threads in (1, 2, 3, 8):
        assert enc.encode_ordinary_batch(docs, num_threads=num_threads) == serial
        assert enc.encode_batch(docs, num_threads=num_threads) == serial


def test_batch_keeps_input_order_with_uneven_documents(data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    docs = [("word " * (i % 17) * 50) + str(i) for i in range(500)]
    assert enc.encode_ordinary_batch(docs) == [enc.encode_ordinary(doc) for doc in docs]


def test_empty_batch_and_empty_documents(data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    assert enc.encode_ordinary_batch([]) == []
    assert enc.encode_batch(["", "a", ""]) == [[], [64], []]
    ids, offsets = enc.encode_batch_to_numpy([])
    assert len(ids) == 0 and offsets.tolist() == [0]


def test_the_pool_is_created_once_and_reused(data_dir, corpus_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    docs = documents(corpus_dir, 100)
    enc.encode_ordinary_batch(docs)
    pool = batching.shared_pool()
    enc.encode_ordinary_batch(docs)
    assert batching.shared_pool() is pool


def test_encodings_are_safe_to_share_between_threads(corpus_dir, data_dir):
    enc = bytebpe.get_encoding("o200k_base")
    docs = documents(corpus_dir, 200)
    expected = [enc.encode(doc) for doc in docs]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(enc.encode, docs)) == expected


def test_another_thread_keeps_running_during_a_long_encode(data_dir):
    """The merge loop runs without the GIL: a Python thread makes progress while one long piece merges."""
    enc = bytebpe.get_encoding("cl100k_base")
    # One piece of 4 MB of punctuation: almost all of its time is spent merging, none in the regex.
    text = "-=" * 2_000_000
    during, elapsed = ticks_during(lambda: enc.encode_ordinary(text))
    # With the GIL held for the whole encode the counter could tick at most once or twice.
    assert elapsed > 0.05, "the input is too small to show anything"
    assert during >= 10, f"only {during} ticks in {elapsed:.2f} s: the encode held the GIL"


def batch_of_many_groups(corpus_dir) -> list[str]:
    """~1.3 MB in documents of 1-5 KB with allowed special tokens, empty documents and one document larger
    than a whole group of the batch loop (64 KB): every way a group can end, several groups per chunk."""
    english = (corpus_dir / "english_prose.txt").read_text(encoding="utf-8")[:600_000]
    multilingual = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:600_000]
    docs: list[str] = []
    for i, start in enumerate(range(0, 590_000, 3_100)):
        size = 1_000 + 37 * i % 4_000
        docs.append(english[start : start + size] + "<|endoftext|>" + multilingual[start : start + size])
        if i % 50 == 0:
            docs += ["", "<|fim_prefix|>" + english[start : start + 100_000]]
    return docs


def test_lists_built_group_by_group_in_the_pool_equal_tiktoken(corpus_dir, data_dir, tiktoken_encoding):
    # Pool threads build each group's lists as soon as it is encoded (CoreBPE.encode_batch's
    # lists_per_group), a lone caller at the end: both must give tiktoken's ids, in order.
    docs = batch_of_many_groups(corpus_dir)
    expected = tiktoken_encoding("cl100k_base").encode_batch(docs, allowed_special="all")
    for engine in ("compiled", "regex"):
        enc = bytebpe.get_encoding("cl100k_base").with_pretokenizer(engine)
        for lists_per_group in (False, True):
            special_split, _ = enc._special_policy("all", "all")
            made = enc._core.encode_batch(enc._pretokenize, special_split, docs, False, None, lists_per_group)
            assert made == expected, (engine, lists_per_group)
        assert enc.encode_batch(docs, allowed_special="all", num_threads=2) == expected


def test_a_refused_text_in_a_later_group_raises_and_returns_nothing(corpus_dir, data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    docs = [doc.replace("<|endoftext|>", "") for doc in batch_of_many_groups(corpus_dir)]
    docs[len(docs) * 3 // 4] += "<|endoftext|>"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_batch(docs, num_threads=2)
    special_split, deferred_check = enc._special_policy(set(), "all")
    for lists_per_group in (False, True):
        with pytest.raises(ValueError, match="disallowed special token"):
            enc._core.encode_batch(enc._pretokenize, special_split, docs, False, deferred_check, lists_per_group)


def flat_lists(ids, offsets) -> list[list[int]]:
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == len(ids)
    return [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


@pytest.mark.parametrize("shape", ["many tiny", "one huge among tiny", "empty texts", "every size", "specials"])
def test_flat_output_on_threads_equals_a_serial_loop_for_every_batch_shape(corpus_dir, data_dir, shape):
    # encode_batch_to_numpy on several threads (FlatBatch): groups shrink toward the end, the threads copy
    # their groups into one array; whatever the texts' sizes, the result is each text's ids in order.
    enc = bytebpe.get_encoding("o200k_base")
    text = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:400_000]
    if shape == "many tiny":
        texts = [text[i : i + 7] for i in range(0, 140_000, 7)]
    elif shape == "one huge among tiny":
        texts = [text[i : i + 20] for i in range(0, 2_000, 20)] + [text] + [text[i : i + 20] for i in range(0, 2_000, 20)]
    elif shape == "empty texts":
        texts = ["", text[:100_000], "", "", text[100_000:], ""]
    elif shape == "every size":
        sizes = [0, 1, 2, 3, 100, 4_095, 4_096, 8_191, 8_192, 65_535, 65_536, 70_000]
        texts = [text[start : start + size] for start, size in zip(range(0, 400_000, 30_000), sizes)]
    else:
        texts = [text[i : i + 3_000] + "<|endoftext|>" for i in range(0, 300_000, 3_000)]
    expected = [enc.encode(t, allowed_special="all") for t in texts]
    for num_threads in (2, 3, 8):
        flat = enc.encode_batch_to_numpy(texts, num_threads=num_threads, allowed_special="all")
        assert flat_lists(*flat) == expected


def test_what_the_caller_meets_while_gathering_a_flat_batch_comes_out_as_from_a_serial_loop(corpus_dir, data_dir):
    # The calling thread gathers the whole batch before the threads encode it: a text it refuses late in the
    # batch (a disallowed special token) raises and returns nothing, and a lone surrogate late in the batch
    # sends the whole batch down the repairing path, with the same ids as encode.
    enc = bytebpe.get_encoding("cl100k_base")
    docs = [doc.replace("<|endoftext|>", "") for doc in documents(corpus_dir, 400)]
    refused = list(docs)
    refused[350] += "<|endoftext|>"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_batch_to_numpy(refused, num_threads=2)
    repaired = list(docs)
    repaired[380] += "\ud800 and on"
    assert flat_lists(*enc.encode_batch_to_numpy(repaired, num_threads=2)) == [enc.encode(doc) for doc in repaired]


def test_a_flat_batch_larger_than_a_round_is_encoded_round_by_round(corpus_dir, data_dir, monkeypatch):
    from bytebpe import encoding

    enc = bytebpe.get_encoding("cl100k_base")
    texts = documents(corpus_dir, 300)
    expected = enc.encode_ordinary_batch(texts, num_threads=1)
    monkeypatch.setattr(encoding, "FLAT_ROUND_CHARS", sum(map(len, texts)) // 5)
    assert flat_lists(*enc.encode_batch_to_numpy(texts, num_threads=2)) == expected


@pytest.mark.skipif(batching.pool_size() < 2, reason="needs two usable cores for two workers")
def test_a_ctrl_c_during_a_flat_batch_stops_it_and_leaves_the_encoding_usable(corpus_dir, data_dir):
    # The calling thread runs signal handlers between its groups: the KeyboardInterrupt comes out of the
    # batch (not after it), the pool thread starts no further group, and nothing is left running. The
    # signal comes from a kernel timer, as a Ctrl-C comes from the terminal: a Python thread sending it
    # would first need the GIL, and under ASan it waited for it past the end of the batch.
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    enc = bytebpe.get_encoding("cl100k_base")
    texts = documents(corpus_dir, 400) * 60      # 44 MB of UTF-8: far longer than the 50 ms before the signal
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            enc.encode_batch_to_numpy(texts, num_threads=2)
        assert time.perf_counter() - started < 1.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    small = texts[:200]
    assert flat_lists(*enc.encode_batch_to_numpy(small, num_threads=2)) == enc.encode_ordinary_batch(small)


def test_run_on_workers_raises_the_callers_error_after_stopping_and_a_pool_threads_error_after_all():
    calls: list[str] = []

    def failing_caller(check_signals=False):
        if check_signals:
            raise KeyboardInterrupt
        time.sleep(0.01)
        calls.append("pool")

    with pytest.raises(KeyboardInterrupt):
        batching.run_on_workers(failing_caller, lambda: calls.append("stop"), 3)
    assert calls[0] == "stop" and calls.count("pool") == 2     # it returned after both pool calls

    def failing_pool(check_signals=False):
        if not check_signals:
            raise MemoryError("in the pool")

    if batching.pool_size() >= 2:
        with pytest.raises(MemoryError, match="in the pool"):
            batching.run_on_workers(failing_pool, lambda: None, 2)


@pytest.mark.skipif(batching.pool_size() < 2, reason="needs two usable cores for two workers")
def test_run_on_workers_returns_without_the_pools_return_once_every_task_is_finished():
    # `finished` (FlatBatch.copied) True: every task is done and the pool's calls touch nothing more, so the
    # caller goes on while they return; False: it waits for them and raises what they met.
    release, returned = threading.Event(), threading.Event()

    def slow_to_return(check_signals=False):
        if not check_signals:
            release.wait(10)
            returned.set()

    try:
        batching.run_on_workers(slow_to_return, lambda: None, 2, finished=lambda: True)
        assert not returned.is_set()    # the pool thread's call is still on its way out
    finally:
        release.set()
    assert returned.wait(10)

    def failing_pool(check_signals=False):
        if not check_signals:
            raise MemoryError("in the pool")

    with pytest.raises(MemoryError, match="in the pool"):
        batching.run_on_workers(failing_pool, lambda: None, 2, finished=lambda: False)


def test_a_flat_batch_is_copied_once_each_thread_has_worked_and_never_after_a_stop(corpus_dir, data_dir):
    enc = bytebpe.get_encoding("cl100k_base")
    texts = documents(corpus_dir, 120)
    batch = enc._core.flat_batch(enc._pretokenize, None, texts, None, 2)
    batch.work()    # the first worker takes every group; the second finds none left
    batch.work()
    assert batch.copied() is True
    assert flat_lists(*batch.result()) == enc.encode_ordinary_batch(texts)
    stopped = enc._core.flat_batch(enc._pretokenize, None, texts, None, 2)
    stopped.stop()
    stopped.work()
    assert stopped.copied() is False    # at once: nothing was encoded, nothing will be copied


@pytest.mark.skipif(batching.pool_size() < 2, reason="needs two usable cores for two workers")
def test_a_flat_batch_on_threads_has_counted_its_cache_lookups_when_it_returns(corpus_dir, data_dir):
    # The caller returns once every copy is made, maybe before a pool thread's work() has; each group adds
    # its piece-cache figures before it counts as done, so they are all in. (Every piece to merge is looked
    # up once, on any thread: the count is the serial loop's.)
    enc = bytebpe.get_encoding("cl100k_base")
    texts = documents(corpus_dir, 300)
    bound = enc.piece_cache_info().max_bytes
    counts = []
    for threads in (1, 2, 2, 2, 2, 2, 2):     # (before the fix, half the 2-thread runs returned short)
        enc.set_piece_cache_bytes(0)
        enc.set_piece_cache_bytes(bound)
        enc.encode_batch_to_numpy(texts, num_threads=threads)
        counts.append(enc.piece_cache_info().lookups)
    assert counts[0] > 0 and counts == [counts[0]] * 7


def test_split_by_size_cuts_consecutive_runs_of_at_least_the_target_size():
    import random

    rng = random.Random(0)
    for _ in range(3_000):
        texts = ["x" * rng.choice([0, 1, 2, 50, 1000, rng.randint(0, 5000)]) for _ in range(rng.randint(0, 30))]
        n_chunks = rng.randint(0, 12)
        chunks = batching.split_by_size(texts, n_chunks)
        assert [text for chunk in chunks for text in chunk] == texts
        assert len(chunks) <= max(1, n_chunks)
        target = max(1, -(-sum(map(len, texts)) // max(1, n_chunks)))
        for chunk in chunks[:-1]:   # each chunk but the last ends with the text that brings it to the target
            assert sum(map(len, chunk)) >= target > sum(map(len, chunk[:-1]))
    assert batching.split_by_size([], 4) == []


@pytest.mark.skipif(batching.pool_size() < 2, reason="needs two usable cores for two workers")
def test_the_calling_thread_encodes_chunks_beside_the_pool_and_returns_after_every_chunk():
    # map_chunks puts the caller to work as one of the workers; whatever it meets, it returns only once no
    # pool thread is still inside a chunk (they read the batch's texts and write its results).
    lock = threading.Lock()
    running = {"now": 0}
    seen: list[tuple[int, bool]] = []
    # Each thread's first chunk waits here for the other thread's: both must take part (a thread that never
    # came would break the barrier after its timeout and fail the test, not hang it).
    both_started = threading.Barrier(2, timeout=30)

    def encode_chunk(chunk, in_pool=False, fail_at=None):
        with lock:
            running["now"] += 1
            first_of_its_thread = threading.get_ident() not in {ident for ident, _ in seen}
            seen.append((threading.get_ident(), in_pool))
        try:
            if fail_at is None and first_of_its_thread:
                both_started.wait()
            time.sleep(0.005)
            if fail_at is not None and fail_at in chunk:
                raise RuntimeError(f"chunk holding {fail_at}")
            return list(chunk)
        finally:
            with lock:
                running["now"] -= 1

    texts = [f"{i:05d}" + "x" * 10_000 for i in range(64)]
    chunks = batching.map_chunks(encode_chunk, texts, 2)
    assert [text for chunk in chunks for text in chunk] == texts
    assert all(in_pool for _, in_pool in seen)
    assert threading.get_ident() in {ident for ident, _ in seen} and len({ident for ident, _ in seen}) == 2

    for failing in (texts[0], texts[40], texts[-1]):
        seen.clear()
        with pytest.raises(RuntimeError, match=f"chunk holding {failing[:5]}"):
            batching.map_chunks(lambda chunk, in_pool=False: encode_chunk(chunk, in_pool, failing), texts, 2)
        assert running["now"] == 0
