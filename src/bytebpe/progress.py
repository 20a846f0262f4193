"""The progress bars of `encode_files(progress=True)`, `train(progress=True)` and the command line."""
from __future__ import annotations

from typing import Any


def progress_bar(enabled: bool, **options: Any) -> Any:
    """A tqdm bar with these options, or None when not `enabled`. tqdm (a dependency) is imported only when a
    bar is asked for; `tqdm.auto` draws a widget in a notebook and text elsewhere."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(**options)
