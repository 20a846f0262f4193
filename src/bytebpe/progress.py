"""The progress bars of `encode_files(progress=True)`, `train(progress=True)` and the command line, and the
counts their summaries print."""
from __future__ import annotations

import sys
from typing import Any


# Where the bar's stream is no terminal (a log file, a CI job), it is redrawn at most this often: each redraw
# there is one more frame in the log, not an update in place.
LOG_REDRAW_SECONDS = 60.0


def progress_bar(enabled: bool, **options: Any) -> Any:
    """A tqdm bar with these options, or None when not `enabled`. tqdm (a dependency) is imported only when a
    bar is asked for; `tqdm.auto` draws a widget in a notebook and text elsewhere."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    stream = options.setdefault("file", sys.stderr)
    if tqdm.__module__ in ("tqdm.std", "tqdm.asyncio") and not _is_terminal(stream):
        options.setdefault("mininterval", LOG_REDRAW_SECONDS)
    return tqdm(**options)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):    # no isatty, or a closed stream
        return False


def counted(n: int, noun: str) -> str:
    """`n` with thousands separators and `noun`, plural unless n is 1: "1 document", "12,345 documents"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
