"""The progress bars of `encode_files(progress=True)`, `train(progress=True)` and the command line, and the
counts their summaries print."""
from __future__ import annotations

from typing import Any


def progress_bar(enabled: bool, **options: Any) -> Any:
    """A tqdm bar with these options, or None when not `enabled`. tqdm (a dependency) is imported only when a
    bar is asked for; `tqdm.auto` draws a widget in a notebook and text elsewhere."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(**options)


def counted(n: int, noun: str) -> str:
    """`n` with thousands separators and `noun`, plural unless n is 1: "1 document", "12,345 documents"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
