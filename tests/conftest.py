"""Shared fixtures: where the real vocabularies and corpora live, and stock tiktoken as the oracle.

The real files are found through BYTEBPE_DATA_DIR (the vocabularies) and BYTEBPE_CORPUS_DIR (the
corpora; default: ``corpus`` beside the vocabulary folder). `.ci/run` sets BYTEBPE_REQUIRE_DATA=1, which
turns their absence into a failure instead of a skip.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from bytebpe.registry import ENCODING_SPECS

# Official download address of each vocabulary file, by file name (tiktoken names its cache entries
# after the sha1 of the address).
VOCAB_FILES = {file.filename: file.url for spec in ENCODING_SPECS.values() for file in spec.files}

ALL_ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]


@pytest.fixture(scope="session", autouse=True)
def private_bytebpe_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read or fill the user's real cache (~/.cache/bytebpe): converted vocabularies and
    downloads go to a folder of this test session."""
    if "BYTEBPE_CACHE_DIR" not in os.environ:
        os.environ["BYTEBPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("bytebpe-cache"))


def _missing(what: str) -> None:
    if os.environ.get("BYTEBPE_REQUIRE_DATA") == "1":
        pytest.fail(f"{what} (BYTEBPE_REQUIRE_DATA=1: real data is required here)")
    pytest.skip(what)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding the real OpenAI vocabularies (first entry of BYTEBPE_DATA_DIR)."""
    raw = os.environ.get("BYTEBPE_DATA_DIR", "")
    for entry in raw.split(os.pathsep):
        if entry and (Path(entry) / "cl100k_base.tiktoken").is_file():
            return Path(entry)
    _missing(f"no real vocabularies: BYTEBPE_DATA_DIR={raw!r} holds no cl100k_base.tiktoken")


@pytest.fixture(scope="session")
def corpus_dir(data_dir: Path) -> Path:
    """The folder holding the shared test corpora."""
    path = Path(os.environ.get("BYTEBPE_CORPUS_DIR", data_dir.parent / "corpus"))
    if not (path / "english_prose.txt").is_file():
        _missing(f"no shared corpus at {path}")
    return path


@pytest.fixture(scope="session")
def tiktoken_cache(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiktoken cache folder whose entries link to the real files, so stock tiktoken loads offline.

    tiktoken names a cache entry by the sha1 of the file's download address.
    """
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for filename, url in VOCAB_FILES.items():
        (cache / hashlib.sha1(url.encode()).hexdigest()).symlink_to((data_dir / filename).resolve())
    return cache


@pytest.fixture(scope="session")
def tiktoken_encoding(tiktoken_cache: Path):
    """Returns a loader for stock tiktoken encodings by name, loaded offline from the real files."""
    import tiktoken  # a test dependency (the `test` extra): never imported by bytebpe itself

    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    return tiktoken.get_encoding
