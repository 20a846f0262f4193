"""A probe for tests that a compiled call releases the GIL: count how often another Python thread runs."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable


def ticks_during(call: Callable[[], object]) -> tuple[int, float]:
    """(ticks of a Python thread that sleeps 0.5 ms per tick while `call()` runs, seconds `call()` took).

    With the GIL held for the whole call, the thread can tick at most once or twice.
    """
    ticks = 0
    running = True

    def count() -> None:
        nonlocal ticks
        while running:
            ticks += 1
            time.sleep(0.0005)

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    before = ticks
    started = time.perf_counter()
    try:
        call()
    finally:
        elapsed = time.perf_counter() - started
        during = ticks - before
        running = False
        counter.join()
    return during, elapsed
