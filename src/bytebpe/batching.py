"""A persistent thread pool and the chunking that spreads a batch of documents over it.

tiktoken creates a ThreadPoolExecutor per batch call, which costs more than it saves on short batches. Here
one pool lives for the process; a batch is cut into a few chunks of similar byte size, each chunk is encoded
by one call into the compiled core (which, with the compiled pre-tokenizer, encodes the whole chunk with the
GIL released; with the `regex` engine only the merging), and results come back in order.
"""
from __future__ import annotations

import bisect
import itertools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

T = TypeVar("T")

# Below this many characters in a whole batch, threads cost more than they save: encode it in one call.
SERIAL_BATCH_CHARS = 64 * 1024
# Chunks per worker: more than one so that a slow chunk does not leave the other cores idle at the end.
CHUNKS_PER_WORKER = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def pool_size() -> int:
    """Threads in the shared pool: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def shared_pool() -> ThreadPoolExecutor:
    """The process-wide pool, created on first use (and again in a forked child, which has no threads)."""
    global _pool
    # (concurrent.futures is imported here, by the first batch that uses threads: importing it costs a few
    # milliseconds, which loading an encoding should not pay)
    from concurrent.futures import ThreadPoolExecutor

    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=pool_size(), thread_name_prefix="bytebpe")
        return _pool


def _forget_pool_after_fork() -> None:
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


def _finish_numpy_import_before_fork() -> None:
    """numpy is imported on first use of a numpy method, possibly on a pool thread; a fork during that import
    would leave the child waiting for ever on the import's lock. If the import has begun (numpy is in
    sys.modules, perhaps half initialised), this waits for it to end; a process that never used numpy pays
    nothing."""
    if "numpy" in sys.modules:
        import numpy  # noqa: F401


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_finish_numpy_import_before_fork, after_in_child=_forget_pool_after_fork)


def split_by_size(texts: Sequence[str], n_chunks: int) -> list[Sequence[str]]:
    """Cut `texts` into at most `n_chunks` consecutive runs of roughly equal total length.

    >>> [list(c) for c in split_by_size(["aaaa", "b", "c", "dddd"], 2)]
    [['aaaa', 'b'], ['c', 'dddd']]
    """
    # Running totals and a binary search per chunk, not a Python loop over the texts: the loop cost a few
    # percent of a whole batch of short documents on two threads (benchmarks/README.md).
    ends = list(itertools.accumulate(map(len, texts)))
    total = ends[-1] if ends else 0
    target = max(1, -(-total // max(1, n_chunks)))
    chunks: list[Sequence[str]] = []
    start = 0
    while start < len(texts):
        # A chunk ends with the first text that brings it to `target` characters, or with the last text; the
        # one that reaches the total takes the empty texts after it (so there are at most n_chunks).
        stop = bisect.bisect_left(ends, (ends[start - 1] if start else 0) + target, lo=start) + 1
        if stop >= len(texts) or ends[stop - 1] == total:
            stop = len(texts)
        chunks.append(texts[start:stop])
        start = stop
    return chunks


def checked_num_threads(num_threads: int) -> int:
    """`num_threads` as an int of at least 1. tiktoken's pool refuses fewer workers with a ValueError; a
    silent serial run would hide the caller's mistake."""
    threads = int(num_threads)
    if threads < 1:
        raise ValueError(f"num_threads must be at least 1, got {num_threads!r}")
    return threads


def workers_for(texts: Sequence[str], num_threads: int, total_chars: int | None = None) -> int:
    """How many threads (the calling one included) a batch of `texts` is worth: 1 below SERIAL_BATCH_CHARS
    characters (`total_chars`, when the caller has counted them) or for a single text, else `num_threads` up
    to the pool's size."""
    workers = min(checked_num_threads(num_threads), pool_size())
    if workers == 1 or len(texts) < 2:
        return 1
    if total_chars is None:
        total_chars = sum(map(len, texts))
    return 1 if total_chars < SERIAL_BATCH_CHARS else workers


def run_on_workers(
    work: Callable[..., object],
    stop: Callable[[], object],
    workers: int,
    finished: Callable[[], bool] | None = None,
) -> None:
    """Call `work()` on `workers - 1` pool threads and ``work(check_signals=True)`` on this one, and return
    once every call has returned. `work` takes tasks from a queue of its own until none are left; when this
    thread's call raises (a Ctrl-C arrives on it), `stop()` keeps the pool threads from starting another task,
    and the error is raised once they are out of theirs (they read what this thread's caller owns). An error
    of a pool thread is raised after all have returned.

    `finished`, when given, is asked once this thread's `work()` has returned: True means every task is done
    and the pool threads' calls read and write nothing more, so this returns without waiting for them (their
    futures complete on their own); False, that they are waited for as above."""
    from concurrent.futures import wait     # (imported already by shared_pool)

    futures: list[Future[object]] = [shared_pool().submit(work) for _ in range(workers - 1)]
    try:
        work(check_signals=True)
        if finished is not None and finished():
            return
    except BaseException:
        stop()
        wait(futures)
        raise
    wait(futures)
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error


def map_chunks(
    encode_chunk: Callable[..., T], texts: Sequence[str], num_threads: int
) -> list[T]:
    """Apply `encode_chunk` to consecutive chunks of `texts` on at most `num_threads` pool threads.

    Each of the `workers` tasks (the calling thread is one) pulls the next chunk until none are left (so a
    slow chunk does not stall the others); results are returned in input order whatever order they finish
    in. Every chunk is passed ``in_pool=True``: with other threads encoding beside it, work it must do with
    the GIL is best done in short spells (CoreBPE.encode_batch's `lists_per_group` says why).
    """
    workers = workers_for(texts, num_threads)
    if workers == 1:
        return [encode_chunk(texts)]
    chunks = split_by_size(texts, workers * CHUNKS_PER_WORKER)
    results: list[T | None] = [None] * len(chunks)
    errors: dict[int, BaseException] = {}
    next_chunk = iter(range(len(chunks)))
    take_lock = threading.Lock()
    caller_stopped = threading.Event()  # the calling thread takes no more chunks (none left, or it was interrupted)

    def work() -> None:
        while True:
            with take_lock:
                # After a failure no new chunk is started: every chunk before the failed one was taken
                # already (they are taken in order), so the error to raise is settled.
                index = None if errors or caller_stopped.is_set() else next(next_chunk, None)
            if index is None:
                return
            try:
                results[index] = encode_chunk(chunks[index], in_pool=True)
            except BaseException as error:  # noqa: BLE001  (re-raised below, from the earliest chunk)
                errors[index] = error
                return

    # The calling thread works as one of the workers rather than sleeping until the pool is done: one thread
    # hand-off less at the start. Whatever happens to it (a Ctrl-C or SIGTERM arrives on this thread), the pool threads
    # start no new chunk after it stops, and it returns once they are out of their current one, unless it is
    # interrupted again while it waits (their chunks hold references to what they read and write).
    from concurrent.futures import wait     # (imported already by shared_pool, when there is a pool)

    futures: list[Future[None]] = [shared_pool().submit(work) for _ in range(min(workers, len(chunks)) - 1)]
    try:
        work()
    finally:
        caller_stopped.set()    # changes nothing once work() has run out of chunks
        wait(futures)
    if errors:
        # The error of the earliest text, as a serial loop would raise it: chunks are taken in order, so
        # every chunk before the earliest failing one was finished by its worker.
        raise errors[min(errors)]
    return results  # type: ignore[return-value]  # every slot was filled, or an error was raised
