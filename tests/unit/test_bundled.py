"""The vocabularies bundled in the package: the seven encodings load from them with no files and no network,
give tiktoken's ranks and ids, refuse a damaged bundle, give the original files back for tiktoken's cache,
and give way to a user's own copy in BYTEBPE_DATA_DIR.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest

from bytebpe import _core, bundled, cli, compare, registry
from bytebpe.registry import VocabularyHashError, VocabularyNotFoundError, get_encoding
from bytebpe.tiktoken_cache import export_tiktoken_cache
from bytebpe.vocab_sources import load_tiktoken_bpe

from ..conftest import ALL_ENCODINGS

P50K_IDS = [4299, 277, 33529, 198, 50262, 1441, 352]   # tiktoken's; 50262 is 7 spaces, a p50k-only token
SAMPLE = "Hello world! It's 2024 — naïve café, 数字 12345.\n\n  indented\t<|endoftext|> done "


@pytest.fixture(autouse=True)
def bundled_only(monkeypatch, tmp_path):
    """No BYTEBPE_DATA_DIR, an empty cache, tiktoken's cache off, fresh registry caches, and a network that
    fails (and records) every request: only the bundled vocabularies can be used."""
    registry._clear_caches()
    monkeypatch.delenv("BYTEBPE_DATA_DIR", raising=False)
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path / "bytebpe-cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    requests: list[str] = []

    def no_network(url, timeout=None):
        requests.append(url)
        raise urllib.error.URLError("no network in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    yield requests
    registry._clear_caches()
    assert requests == []       # nothing ever tried to download


@pytest.fixture
def copied_bundle(monkeypatch, tmp_path) -> Path:
    """A private copy of the bundled files that a test may damage; the registry reads it instead."""
    folder = tmp_path / "vocab"
    shutil.copytree(bundled.FOLDER, folder)
    monkeypatch.setattr(bundled, "FOLDER", folder)
    return folder


def test_every_encoding_has_a_bundled_vocabulary_in_the_package():
    assert {registry.encoding_spec(name).bundled for name in ALL_ENCODINGS} == set(bundled.BUNDLED_NAMES)
    assert set(bundled.BUNDLED_NAMES) == {"r50k_base", "p50k_base", "cl100k_base", "o200k_base"}
    assert all(bundled.is_bundled(name) for name in bundled.BUNDLED_NAMES)


@pytest.mark.parametrize("name", bundled.BUNDLED_NAMES)
def test_a_bundled_vocabulary_has_exactly_the_ranks_of_the_pinned_file(name, data_dir):
    assert bundled.load_table(name).to_dict() == load_tiktoken_bpe(data_dir / f"{name}.tiktoken")


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_get_encoding_from_the_bundle_gives_tiktokens_ids(
        name, tiktoken_encoding, tiktoken_cache, corpus_dir, monkeypatch):
    encoding = get_encoding(name)
    assert registry.bundled_source(registry.encoding_spec(name)) == registry.encoding_spec(name).bundled
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))     # the oracle: stock tiktoken, real files
    reference = tiktoken_encoding(name)
    assert encoding.n_vocab == reference.n_vocab and encoding.max_token_value == reference.max_token_value
    texts = [SAMPLE] + [(corpus_dir / corpus).read_text(encoding="utf-8")[:100_000]
                        for corpus in ("english_prose.txt", "code.txt", "multilingual.txt")]
    for text in texts:
        assert encoding.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")


def test_gpt2_and_r50k_base_share_the_bundled_table():
    assert registry.table_for("gpt2") is registry.table_for("r50k_base")
    assert registry.ranks_for("p50k_edit") is registry.ranks_for("p50k_base")


def test_offline_setting_does_not_matter_for_bundled_encodings(monkeypatch):
    monkeypatch.setenv("BYTEBPE_OFFLINE", "1")
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


# ---- a damaged bundle


def _rewrite(path: Path, change) -> None:
    path.write_bytes(change(path.read_bytes()))


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],                                     # truncated
    lambda data: data[:1000] + bytes([data[1000] ^ 0x40]) + data[1001:],     # one bit flipped
    lambda data: b"",                                                         # emptied
    # Well-formed zlib of content that is not the recorded one: a token's byte changed.
    lambda data: zlib.compress(zlib.decompress(data).replace(b"hello", b"jello", 1)),
    # Well-formed zlib of content cut at a token boundary: a smaller, valid-looking vocabulary.
    lambda data: zlib.compress(zlib.decompress(data)[:-3]),
])
def test_a_damaged_bundled_file_is_a_clear_error_never_other_ids(damage, copied_bundle):
    path = copied_bundle / "cl100k_base.bin"
    _rewrite(path, damage)
    with pytest.raises(VocabularyHashError) as caught:
        get_encoding("cl100k_base")
    message = str(caught.value)
    assert str(path) in message and "damaged" in message and "BYTEBPE_DATA_DIR" in message
    assert registry.registered_encoding("cl100k_base") is None
    assert get_encoding("r50k_base").encode("hello") == [31373]     # the other files are unaffected


def test_p50k_base_is_stored_as_an_extension_of_r50k_base_and_fails_with_it(copied_bundle):
    stored = zlib.decompress((copied_bundle / "p50k_base.bin").read_bytes())
    assert stored.startswith(bundled.EXTENDS_MARKER + b"r50k_base\n") and len(stored) < 1000
    assert get_encoding("p50k_base").encode("def f():\n        return 1") == P50K_IDS
    base = copied_bundle / "r50k_base.bin"
    original = base.read_bytes()
    for damaged, message in [
        (original[:-10], "r50k_base.bin is damaged"),     # the base does not decompress
        # The base decompresses, but the joined content is not the recorded one.
        (zlib.compress(zlib.decompress(original).replace(b"hello", b"jello", 1)), "p50k_base.bin is damaged"),
    ]:
        registry._clear_caches()
        base.write_bytes(damaged)
        with pytest.raises(VocabularyHashError, match=message):
            get_encoding("p50k_base")
    base.unlink()
    registry._clear_caches()
    with pytest.raises(VocabularyHashError, match="r50k_base.bin is damaged.*cannot be read"):
        get_encoding("p50k_base")
    base.write_bytes(original)
    registry._clear_caches()
    (copied_bundle / "p50k_base.bin").write_bytes(
        zlib.compress(bundled.EXTENDS_MARKER + b"nonesuch\n" + stored.partition(b"\n")[2]))
    with pytest.raises(VocabularyHashError, match="extends an unknown vocabulary 'nonesuch'"):
        get_encoding("p50k_base")


def test_the_compiled_reader_refuses_inconsistent_content_without_reading_outside_it():
    content = bundled.pack_ranks({bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 258})
    table = _core.MergeTable.from_bundled(content)
    assert (table.n_tokens, table.max_rank, table.token_bytes(257)) == (258, 258, None)     # 257 is a gap
    header = len(_core.BUNDLED_VOCAB_MAGIC) + 4
    bad = {
        "wrong format marker": b"X" + content[1:],
        "ranks is out of range": content[:header - 4] + b"\0\0\0\0" + content[header:],
        "token lengths announced": content[:header - 4] + b"\xff\xff\xff\x7f" + content[header:],
        "add up to": content[:header] + b"\x09" + content[header + 1:],     # a length reaching past the end
        "appears twice": _with_tokens([b"a", b"b", b"a"]),
    }
    for expected, data in bad.items():
        with pytest.raises(ValueError, match=expected):
            _core.MergeTable.from_bundled(data)
    # Random damage: a ValueError or a table, never a crash. (Under a BYTEBPE_DEBUG=1 build, bounds checks
    # would turn a read outside `content` into an IndexError, failing this test.)
    rng = random.Random(0)
    for _ in range(2000):
        data = bytearray(content)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data[: rng.randint(0, len(data))]) if rng.random() < 0.3 else bytes(data)
        try:
            _core.MergeTable.from_bundled(data)
        except ValueError:
            pass


def _with_tokens(tokens: list[bytes]) -> bytes:
    return (_core.BUNDLED_VOCAB_MAGIC + len(tokens).to_bytes(4, "little") + bytes(map(len, tokens))
            + b"".join(tokens))


# ---- BYTEBPE_DATA_DIR, and encodings that are not bundled


def test_a_users_own_copy_in_bytebpe_data_dir_wins_over_the_bundle(data_dir, tmp_path, monkeypatch):
    own = tmp_path / "own"
    own.mkdir()
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(own))
    (own / "cl100k_base.tiktoken").write_bytes((data_dir / "cl100k_base.tiktoken").read_bytes()[:-100])
    with pytest.raises(VocabularyHashError, match="cl100k_base.tiktoken"):
        get_encoding("cl100k_base")     # the user's (here damaged) copy is read, not the bundle
    shutil.copy(data_dir / "cl100k_base.tiktoken", own / "cl100k_base.tiktoken")
    registry._clear_caches()
    assert registry.bundled_source(registry.encoding_spec("cl100k_base")) is None
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert registry.bundled_source(registry.encoding_spec("o200k_base")) == "o200k_base"    # not in `own`


def test_without_the_bundle_and_offline_one_error_says_where_to_put_what(monkeypatch, tmp_path):
    monkeypatch.setattr(bundled, "FOLDER", tmp_path / "no-bundled-vocab")
    monkeypatch.setenv("BYTEBPE_OFFLINE", "1")
    with pytest.raises(VocabularyNotFoundError) as caught:
        get_encoding("o200k_base")
    message = str(caught.value)
    assert "BYTEBPE_OFFLINE" in message and "'o200k_base.tiktoken'" in message
    assert registry.O200K_FILE.url in message and "BYTEBPE_DATA_DIR" in message
    assert str(tmp_path / "bytebpe-cache") in message and registry.O200K_FILE.sha256 in message


# ---- tiktoken's cache, and the commands that build tiktoken from it


def test_exported_tiktoken_cache_holds_the_original_files_byte_for_byte(tmp_path, data_dir):
    folder = tmp_path / "tiktoken-cache"
    paths = export_tiktoken_cache(folder)
    files = {file for spec in registry.ENCODING_SPECS.values() for file in spec.files}
    assert sorted(path.name for path in paths) == sorted(registry.tiktoken_cache_entry(file) for file in files)
    for file in files:
        contents = (folder / hashlib.sha1(file.url.encode()).hexdigest()).read_bytes()
        assert hashlib.sha256(contents).hexdigest() == file.sha256
        assert contents == (data_dir / file.filename).read_bytes()


def test_stock_tiktoken_loads_the_exported_cache_with_no_network(tmp_path):
    folder = tmp_path / "tiktoken-cache"
    assert cli.main(["export-tiktoken-cache", str(folder), "-q"]) == 0
    expected = {name: get_encoding(name).encode(SAMPLE, allowed_special="all") for name in ALL_ENCODINGS}
    probe = (
        "import socket, sys, tiktoken\n"
        "def refuse(*args, **kwargs): raise OSError('no network')\n"
        "socket.socket.connect = refuse\n"
        f"print({{name: tiktoken.get_encoding(name).encode({SAMPLE!r}, allowed_special='all') "
        f"for name in {ALL_ENCODINGS!r}}})\n"
    )
    env = {"TIKTOKEN_CACHE_DIR": str(folder), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert eval(result.stdout) == expected


def test_tiktoken_reference_is_built_offline_from_the_bundle(monkeypatch, tmp_path):
    tiktoken_registry = pytest.importorskip("tiktoken.registry")
    monkeypatch.setattr(tiktoken_registry, "ENCODINGS", {})     # nothing loaded by other tests
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))   # a cache that would need downloads
    reference = compare.tiktoken_reference("o200k_harmony")
    assert reference.encode(SAMPLE, allowed_special="all") == get_encoding("o200k_harmony").encode(
        SAMPLE, allowed_special="all")
    import os

    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path / "empty")     # restored


def test_verify_and_bench_work_with_no_files_and_no_network(monkeypatch, tmp_path, capsys):
    tiktoken_registry = pytest.importorskip("tiktoken.registry")
    monkeypatch.setattr(tiktoken_registry, "ENCODINGS", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    sample = tmp_path / "sample.txt"
    sample.write_text(SAMPLE * 50, encoding="utf-8")
    assert cli.main(["verify", str(sample), "--encoding", "gpt2", "--encoding", "cl100k_base"]) == 0
    out = capsys.readouterr().out
    assert "gpt2: 1 document," in out and "cl100k_base: 1 document," in out and "identical" in out
    assert cli.main(["bench", str(sample), "--encoding", "p50k_edit", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bytebpe ") and " vs tiktoken " in out.splitlines()[0]
    assert out.count("sample.txt") == 2 and not any(line.startswith("note: tiktoken") for line in out.splitlines())


def test_version_option_prints_the_package_version(capsys):
    import bytebpe

    with pytest.raises(SystemExit) as caught:
        cli.main(["--version"])
    assert caught.value.code == 0 and capsys.readouterr().out == f"bytebpe {bytebpe.__version__}\n"


def test_tests_cannot_reach_the_network_but_can_use_loopback():
    """The suite's guard (conftest.no_network): a test that tried to download would fail, not pass by luck."""
    import socket

    from ..conftest import NetworkUseError

    with pytest.raises(NetworkUseError, match="must not use the network"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)     # TEST-NET-1: never routed
    with pytest.raises(NetworkUseError), socket.socket(socket.AF_INET6) as ipv6:
        ipv6.connect_ex(("2001:db8::1", 443))                         # the IPv6 documentation prefix
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


def test_loading_a_bundled_encoding_does_not_load_openssl():
    """hashlib's OpenSSL adds 3.5 MiB to every process that loads an encoding; the bundled vocabularies are
    checked with CPython's own BLAKE2b instead (bundled.py), so a loaded o200k_base costs +19 MiB, not +23."""
    probe = ("import sys, bytebpe; bytebpe.get_encoding('o200k_base').encode('hello'); "
             "print(sorted(name for name in ('_hashlib', 'hashlib', '_ssl') if name in sys.modules))")
    env = {key: value for key, value in os.environ.items() if not key.startswith("BYTEBPE_DATA_DIR")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
