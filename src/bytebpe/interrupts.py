"""Termination signals as an exception, so that they clean up exactly like Ctrl-C.

A scheduler stops a job with SIGTERM (Slurm, Kubernetes, systemd, `timeout`), a closed terminal sends SIGHUP.
Their default action ends the process on the spot, leaving every temporary file behind; Ctrl-C instead raises
KeyboardInterrupt, which unwinds the `with` blocks that delete them. Inside `signals_raise()` the two signals
raise `Terminated` the same way.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Terminated", "signals_raise"]

# SIGHUP does not exist on Windows.
TERMINATION_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(BaseException):
    """A termination signal arrived. A BaseException, like KeyboardInterrupt: `except Exception` must not
    swallow it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_status(self) -> int:
        """128 + the signal number: what a shell reports for a process the signal killed."""
        return 128 + self.signum


@contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Terminated` in the main thread (elsewhere: no change,
    since Python only lets the main thread set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        # A second signal (schedulers often repeat theirs) must not cut the cleanup short.
        for other in TERMINATION_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        raise Terminated(signum)

    # Only where the signal would kill us: a signal the caller ignores stays ignored (`nohup` ignores SIGHUP
    # so that the job outlives the terminal), and one the program handles itself stays its own.
    previous = {signum: signal.signal(signum, handler) for signum in TERMINATION_SIGNALS
                if signal.getsignal(signum) is signal.SIG_DFL}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
