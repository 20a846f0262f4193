"""tiktoken's download cache, written from the bundled vocabularies: stock tiktoken then works offline.

tiktoken (tiktoken/load.py) looks in TIKTOKEN_CACHE_DIR for a file named by the sha1 of its download address,
and uses it if its sha256 is the pinned one. The bundled vocabularies give every such file back byte for
byte: the `.tiktoken` files from their ranks, GPT-2's vocab.bpe and encoder.json from r50k_base's (see
vocab_io.mergeable_bpe_ranks_to_data_gym). Each is checked against its pin before it is written.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from . import bundled, registry
from .atomic_write import write_bytes_atomically
from .vocab_io import (
    VocabularyHashError,
    dump_tiktoken_bpe_bytes,
    mergeable_bpe_ranks_to_data_gym,
)

__all__ = ["export_tiktoken_cache", "original_files"]


def original_files(name: str) -> dict[registry.VocabularyFile, bytes]:
    """The official files of encoding `name`, rebuilt from its bundled vocabulary and checked against the
    pinned sha256. Raises VocabularyNotFoundError when this installation bundles none for it."""
    import hashlib      # imported where needed, as in vocab_io

    spec = registry.encoding_spec(name)
    if spec.bundled is None or not bundled.is_bundled(spec.bundled):
        raise registry.VocabularyNotFoundError(f"no bundled vocabulary for {name!r} in this installation")
    ranks = bundled.load_table(spec.bundled).ranks()
    if spec.ranks_format == "data_gym":
        contents = mergeable_bpe_ranks_to_data_gym(ranks)
    else:
        contents = (dump_tiktoken_bpe_bytes(ranks),)
    files = dict(zip(spec.files, contents))
    for file, data in files.items():
        actual = hashlib.sha256(data).hexdigest()
        if actual != file.sha256:   # the bundled content was checked, so only a bug in the writers gets here
            raise VocabularyHashError(f"{file.filename} rebuilt from the bundled vocabulary has sha256 {actual}, "
                                      f"not the pinned {file.sha256}")
    return files


def export_tiktoken_cache(folder: str | os.PathLike[str], names: Iterable[str] | None = None) -> list[Path]:
    """Writes tiktoken's cache entries for the encodings `names` (default: all seven) into `folder`, which is
    created if needed; returns the paths written. Point TIKTOKEN_CACHE_DIR at `folder` to use them."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[registry.VocabularyFile, Path] = {}
    for name in registry.ENCODING_SPECS if names is None else names:
        spec = registry.encoding_spec(name)
        if all(file in written for file in spec.files):     # p50k_edit, o200k_harmony: their base's files
            continue
        for file, data in original_files(name).items():
            path = folder / registry.tiktoken_cache_entry(file)
            write_bytes_atomically(path, data)
            written[file] = path
    return list(written.values())
