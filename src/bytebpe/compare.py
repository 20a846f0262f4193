"""bytebpe next to tiktoken on a user's own files: exactness (`verify`); the speed table is bench.py's.

tiktoken is never a dependency: these functions import it when called and say how to install it if absent.
The reference is built from the vocabularies bytebpe bundles (`tiktoken_reference`), so both work offline.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import bundled, registry
from .datasets import iter_batches
from .encoding import Encoding
from .readers import BadDocumentError, InputFile
from .tiktoken_cache import export_tiktoken_cache

__all__ = [
    "Mismatch",
    "first_difference",
    "import_tiktoken",
    "tiktoken_reference",
    "verify_files",
]


def import_tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise ImportError("comparing with tiktoken needs it installed: pip install tiktoken") from None
    return tiktoken


def tiktoken_reference(name: str) -> Any:
    """Stock tiktoken's encoding `name`, read from the files bytebpe bundles when it bundles them.

    The bundled vocabulary is written back as tiktoken's own cache entries (the original files, byte for
    byte, checked against the pins) into a temporary folder, and tiktoken loads them from there with its own
    reader and hash check: nothing is downloaded, and the reference does not go through bytebpe's loader.
    Any other name is left to tiktoken (which may download). TIKTOKEN_CACHE_DIR is set only during the load.
    """
    tiktoken = import_tiktoken()
    spec = registry.ENCODING_SPECS.get(name)
    if spec is None or spec.bundled is None or not bundled.is_bundled(spec.bundled):
        return tiktoken.get_encoding(name)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="bytebpe-tiktoken-cache-") as folder:
        export_tiktoken_cache(folder, [name])
        os.environ["TIKTOKEN_CACHE_DIR"] = folder
        try:
            return tiktoken.get_encoding(name)
        finally:
            if saved is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def first_difference(ours: Sequence[int], theirs: Sequence[int]) -> int | None:
    """The first position where two id sequences differ (the shorter length if one is a prefix); else None.

    >>> first_difference([1, 2, 3], [1, 2, 4]), first_difference([1, 2], [1, 2, 3]), first_difference([1], [1])
    (2, 2, None)
    """
    for position, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return position
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))


@dataclass
class Mismatch:
    """The first document where bytebpe and the reference disagree."""

    path: str
    line: int
    position: int           # first differing token index
    ours: list[int]         # a few ids from `position - 3` on, each side
    theirs: list[int]
    text: str               # the document's text around the difference (a short excerpt)

    def describe(self) -> str:
        return (f"MISMATCH in {self.path}:{self.line} at token {self.position}\n"
                f"  bytebpe:  {self.ours}\n  tiktoken: {self.theirs}\n  text near there: {self.text!r}")


@dataclass
class VerifyResult:
    documents: int = 0
    tokens: int = 0
    skipped: int = 0
    mismatch: Mismatch | None = None


def verify_files(
    files: Sequence[InputFile],
    enc: Encoding,
    reference: Any,
    *,
    workers: int,
    **read_options: Any,
) -> VerifyResult:
    """Encode every document with `enc` and with `reference` (a tiktoken Encoding); stop at the first difference."""
    result = VerifyResult()

    def on_skip(error: BadDocumentError) -> None:
        result.skipped += 1

    for texts, where in iter_batches(files, on_skip=on_skip, **read_options):
        ours = enc.encode_ordinary_batch(texts, num_threads=workers)
        theirs = reference.encode_ordinary_batch(texts, num_threads=workers)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            position = first_difference(a, b)
            if position is not None:
                file_index, line = where[i]
                start = max(0, position - 3)
                # Where in the text: decode our ids up to the difference (an approximation for display only).
                char = len(enc.decode(a[:position]))
                result.mismatch = Mismatch(str(files[file_index].path), line, position, a[start:position + 4],
                                           b[start:position + 4], texts[i][max(0, char - 40):char + 40])
                return result
            result.documents += 1
            result.tokens += len(a)
    return result
