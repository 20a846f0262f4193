"""Named encodings: their definitions match tiktoken's, their files are found in a fixed order and
checked against pinned hashes, and each is loaded once per process.

No test touches the network: `urllib.request.urlopen` is replaced by a fake for every test.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bytebpe import bundled, registry
from bytebpe.registry import (
    CL100K_FILE,
    GPT2_ENCODER_JSON,
    GPT2_VOCAB_BPE,
    R50K_FILE,
    UnknownEncodingError,
    UnknownModelError,
    VocabularyHashError,
    VocabularyNotFoundError,
    cache_dir,
    encoding_name_for_model,
    encoding_spec_kwargs,
    get_encoding,
    list_encoding_names,
    ranks_for,
    registered_encoding,
    resolve_vocabulary_file,
    tiktoken_cache_dir,
)
from bytebpe.vocab_sources import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

ALL_ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]


class FakeNetwork:
    """Stands in for urllib.request.urlopen: serves `bodies[url]`, or fails like an offline machine."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.requests: list[tuple[str, float | None]] = []

    def urlopen(self, url, timeout=None):
        self.requests.append((url, timeout))
        if url not in self.bodies:
            raise urllib.error.URLError("no network in tests")
        return _Response(self.bodies[url])


class _Response:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self) -> bytes:
        return self.body

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        return None


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    """Fresh caches, an empty private cache folder, tiktoken's cache switched off, and no network.

    BYTEBPE_DATA_DIR is left as the test run set it (the real vocabularies).
    """
    registry._clear_caches()
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path / "bytebpe-cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    network = FakeNetwork()
    monkeypatch.setattr(urllib.request, "urlopen", network.urlopen)
    yield network
    registry._clear_caches()


@pytest.fixture
def network(isolated_registry) -> FakeNetwork:
    return isolated_registry


@pytest.fixture
def no_data_dir(monkeypatch, tmp_path) -> Path:
    """BYTEBPE_DATA_DIR points at an empty folder; returns it."""
    empty = tmp_path / "empty-data-dir"
    empty.mkdir()
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(empty))
    return empty


@pytest.fixture
def nothing_bundled(monkeypatch, tmp_path) -> None:
    """An installation without the bundled vocabularies: the files must then be found or downloaded."""
    monkeypatch.setattr(bundled, "FOLDER", tmp_path / "no-bundled-vocab")


class CountingEncoding:
    """A stand-in for bytebpe.Encoding that records how it was built and how often."""

    constructions = 0

    def __init__(self, name, *, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab=None):
        time.sleep(0.05)  # widen the window in which a second thread could start a second build
        type(self).constructions += 1
        self.name = name
        self.pat_str = pat_str
        self.mergeable_ranks = mergeable_ranks
        self.special_tokens = special_tokens
        self.explicit_n_vocab = explicit_n_vocab

    @classmethod
    def _from_table(cls, name, *, pat_str, table, special_tokens, explicit_n_vocab=None):
        # The registry builds encodings from a shared merge table; record its ranks like the constructor.
        return cls(name, pat_str=pat_str, mergeable_ranks=table.ranks(), special_tokens=special_tokens,
                   explicit_n_vocab=explicit_n_vocab)

    def _register(self, registry):
        self.registry = registry    # (Encoding pickles as its name while the registry holds it)


@pytest.fixture
def counting_encoding(monkeypatch):
    class Counting(CountingEncoding):
        constructions = 0

    monkeypatch.setattr(registry, "_encoding_class", lambda: Counting)
    return Counting


# --------------------------------------------------------------------------- definitions


def test_the_seven_openai_encodings_are_known():
    assert list_encoding_names() == ALL_ENCODINGS


def test_names_match_tiktoken_ext():
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    assert sorted(list_encoding_names()) == sorted(openai_public.ENCODING_CONSTRUCTORS)


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_constructor_arguments_equal_tiktoken_ext(name, data_dir, tiktoken_cache, monkeypatch):
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    ours = encoding_spec_kwargs(name)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    theirs = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert ours["name"] == theirs["name"] == name
    assert ours["pat_str"] == theirs["pat_str"]
    assert ours["special_tokens"] == theirs["special_tokens"]
    assert ours["explicit_n_vocab"] == theirs.get("explicit_n_vocab")
    assert ours["mergeable_ranks"] == theirs["mergeable_ranks"]


def test_o200k_harmony_gives_id_200018_two_names_like_tiktoken():
    special_tokens = registry.encoding_spec("o200k_harmony").special_tokens
    assert special_tokens["<|endofprompt|>"] == special_tokens["<|reserved_200018|>"] == 200018
    assert special_tokens["<|reserved_201087|>"] == 201087 and len(special_tokens) == 1091


@pytest.mark.parametrize("pair", [("o200k_base", "o200k_harmony"), ("p50k_base", "p50k_edit")])
def test_encodings_built_from_one_file_share_one_loaded_dict(pair, data_dir):
    first, second = pair
    assert ranks_for(first) is ranks_for(second)


def test_gpt2_comes_from_the_data_gym_files_and_equals_r50k(data_dir):
    assert registry.encoding_spec("gpt2").ranks_format == "data_gym"
    assert ranks_for("gpt2") == ranks_for("r50k_base")
    assert registry.encoding_spec("gpt2").bundled == "r50k_base"    # so the bundle need not hold GPT-2's files


def test_special_tokens_are_a_fresh_dict_each_time(data_dir):
    # The caller may keep or change it; the registry's own table must not change with it.
    encoding_spec_kwargs("r50k_base")["special_tokens"]["<|new|>"] = 1
    assert encoding_spec_kwargs("r50k_base")["special_tokens"] == {"<|endoftext|>": 50256}


def test_vocabulary_file_is_looked_up_by_the_last_part_of_its_address():
    assert CL100K_FILE.filename == "cl100k_base.tiktoken"
    assert registry.GPT2_ENCODER_JSON.filename == "encoder.json"


# --------------------------------------------------------------------------- where files are found


def test_cache_dir_prefers_bytebpe_cache_dir_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("BYTEBPE_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "bytebpe"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "bytebpe"


def test_tiktoken_cache_dir_follows_tiktokens_own_rules(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tt"))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "dg"))
    assert tiktoken_cache_dir() == tmp_path / "tt"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert tiktoken_cache_dir() == tmp_path / "dg"
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    assert tiktoken_cache_dir() == tmp_path / "tmp" / "data-gym-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's switch for "no cache"
    assert tiktoken_cache_dir() is None


def test_resolution_order_is_data_dir_then_our_cache_then_tiktokens_cache(data_dir, tmp_path, monkeypatch):
    real = data_dir / R50K_FILE.filename
    first_data_dir, second_data_dir = tmp_path / "d1", tmp_path / "d2"
    first_data_dir.mkdir()
    second_data_dir.mkdir()
    our_cache = tmp_path / "bytebpe-cache"
    our_cache.mkdir()
    tiktoken_cache = tmp_path / "tiktoken-cache"
    tiktoken_cache.mkdir()
    monkeypatch.setenv("BYTEBPE_DATA_DIR", os.pathsep.join([str(first_data_dir), "", str(second_data_dir)]))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))

    in_tiktoken_cache = tiktoken_cache / hashlib.sha1(R50K_FILE.url.encode()).hexdigest()
    in_tiktoken_cache.symlink_to(real)
    assert resolve_vocabulary_file(R50K_FILE) == in_tiktoken_cache

    in_our_cache = Path(shutil.copy(real, our_cache / "r50k_base.tiktoken"))
    assert resolve_vocabulary_file(R50K_FILE) == in_our_cache

    in_second_data_dir = Path(shutil.copy(real, second_data_dir / "r50k_base.tiktoken"))
    assert resolve_vocabulary_file(R50K_FILE) == in_second_data_dir

    in_first_data_dir = Path(shutil.copy(real, first_data_dir / "r50k_base.tiktoken"))
    assert resolve_vocabulary_file(R50K_FILE) == in_first_data_dir


def test_a_corrupt_file_is_an_error_even_when_a_good_copy_exists_further_down(data_dir, tmp_path, monkeypatch):
    corrupt_dir = tmp_path / "corrupt"
    corrupt_dir.mkdir()
    corrupt = corrupt_dir / "r50k_base.tiktoken"
    corrupt.write_bytes((data_dir / "r50k_base.tiktoken").read_bytes().replace(b"IQ== 0", b"Ig== 0", 1))
    monkeypatch.setenv("BYTEBPE_DATA_DIR", os.pathsep.join([str(corrupt_dir), str(data_dir)]))
    with pytest.raises(VocabularyHashError) as caught:
        resolve_vocabulary_file(R50K_FILE)
    message = str(caught.value)
    assert str(corrupt) in message
    assert R50K_FILE.sha256 in message and hashlib.sha256(corrupt.read_bytes()).hexdigest() in message


def test_a_truncated_vocabulary_is_refused_by_get_encoding(data_dir, tmp_path, monkeypatch, counting_encoding):
    # Cut at a line boundary the file is a valid, smaller vocabulary (see test_vocab_io): only the
    # pinned hash tells it apart from the real one.
    contents = (data_dir / "cl100k_base.tiktoken").read_bytes()
    truncated = b"".join(contents.splitlines(keepends=True)[:50000])
    assert len(load_tiktoken_bpe(truncated)) == 50000
    folder = tmp_path / "truncated"
    folder.mkdir()
    (folder / "cl100k_base.tiktoken").write_bytes(truncated)
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(folder))
    with pytest.raises(VocabularyHashError) as caught:
        get_encoding("cl100k_base")
    message = str(caught.value)
    assert CL100K_FILE.sha256 in message and hashlib.sha256(truncated).hexdigest() in message
    assert str(folder / "cl100k_base.tiktoken") in message
    assert registered_encoding("cl100k_base") is None and counting_encoding.constructions == 0


def test_a_verified_file_is_not_hashed_again_until_it_changes(data_dir, tmp_path, monkeypatch):
    copy = Path(shutil.copy(data_dir / "r50k_base.tiktoken", tmp_path / "r50k_base.tiktoken"))
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(tmp_path))
    hashed: list[Path] = []
    real_sha256_of = registry.sha256_of
    monkeypatch.setattr(registry, "sha256_of", lambda path: hashed.append(path) or real_sha256_of(path))

    resolve_vocabulary_file(R50K_FILE)
    resolve_vocabulary_file(R50K_FILE)
    assert len(hashed) == 1

    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    resolve_vocabulary_file(R50K_FILE)
    assert len(hashed) == 2


# --------------------------------------------------------------------------- downloading


def test_a_missing_file_is_downloaded_verified_and_saved_atomically_into_the_cache(
    data_dir, no_data_dir, network, tmp_path
):
    network.bodies[R50K_FILE.url] = (data_dir / "r50k_base.tiktoken").read_bytes()
    path = resolve_vocabulary_file(R50K_FILE)
    assert path == tmp_path / "bytebpe-cache" / "r50k_base.tiktoken"
    assert path.read_bytes() == network.bodies[R50K_FILE.url]
    assert os.listdir(path.parent) == ["r50k_base.tiktoken"]  # no temporary file left behind
    assert network.requests == [(R50K_FILE.url, registry.DOWNLOAD_TIMEOUT_SECONDS)]
    assert R50K_FILE.url.startswith("https://")

    # Found in the cache from now on, also by a fresh process (caches cleared).
    registry._clear_caches()
    assert resolve_vocabulary_file(R50K_FILE) == path
    assert len(network.requests) == 1


def test_a_download_with_the_wrong_contents_raises_and_saves_nothing(data_dir, no_data_dir, network, tmp_path):
    network.bodies[R50K_FILE.url] = (data_dir / "r50k_base.tiktoken").read_bytes()[:-100]
    with pytest.raises(VocabularyHashError) as caught:
        resolve_vocabulary_file(R50K_FILE)
    assert R50K_FILE.url in str(caught.value) and R50K_FILE.sha256 in str(caught.value)
    cache = tmp_path / "bytebpe-cache"
    assert not cache.exists() or os.listdir(cache) == []


def test_offline_with_no_local_copy_says_what_to_put_where(no_data_dir, network, tmp_path):
    with pytest.raises(VocabularyNotFoundError) as caught:
        resolve_vocabulary_file(CL100K_FILE)
    assert isinstance(caught.value, FileNotFoundError)
    message = str(caught.value)
    assert "'cl100k_base.tiktoken'" in message
    assert "BYTEBPE_DATA_DIR" in message and str(no_data_dir) in message
    assert str(tmp_path / "bytebpe-cache") in message
    assert CL100K_FILE.url in message
    assert "no network in tests" in message  # the underlying reason


def test_get_encoding_for_gpt2_downloads_both_data_gym_files(
    data_dir, no_data_dir, nothing_bundled, network, counting_encoding
):
    for file in (registry.GPT2_VOCAB_BPE, registry.GPT2_ENCODER_JSON):
        network.bodies[file.url] = (data_dir / file.filename).read_bytes()
    encoding = get_encoding("gpt2")
    assert encoding.mergeable_ranks == load_tiktoken_bpe(data_dir / "r50k_base.tiktoken")
    assert sorted(url for url, _ in network.requests) == sorted(network.bodies)


# --------------------------------------------------------------------------- building and caching


def test_get_encoding_passes_tiktokens_constructor_arguments(data_dir, counting_encoding):
    encoding = get_encoding("cl100k_base")
    assert isinstance(encoding, counting_encoding)
    assert encoding.name == "cl100k_base"
    assert encoding.pat_str == registry.patterns.CL100K_PATTERN
    assert encoding.special_tokens["<|endofprompt|>"] == 100276
    assert len(encoding.mergeable_ranks) == 100256
    assert encoding.explicit_n_vocab is None


def test_registered_encoding_is_the_instance_get_encoding_built(data_dir, counting_encoding):
    assert registered_encoding("r50k_base") is None  # nothing is loaded just by asking
    encoding = get_encoding("r50k_base")
    assert registered_encoding("r50k_base") is encoding
    assert get_encoding("r50k_base") is encoding


def test_many_threads_asking_at_once_get_one_encoding_built_once(data_dir, counting_encoding):
    thread_count = 16
    start_together = threading.Barrier(thread_count)
    results: list[object] = [None] * thread_count

    def ask(slot: int) -> None:
        start_together.wait()
        results[slot] = get_encoding("p50k_edit")

    threads = [threading.Thread(target=ask, args=(slot,)) for slot in range(thread_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counting_encoding.constructions == 1
    assert all(result is results[0] for result in results) and results[0] is not None


def test_a_failed_build_is_not_cached(data_dir, monkeypatch):
    class Failing:
        @classmethod
        def _from_table(cls, *args, **kwargs):
            raise RuntimeError("core not ready")

    monkeypatch.setattr(registry, "_encoding_class", lambda: Failing)
    with pytest.raises(RuntimeError):
        get_encoding("r50k_base")
    assert registered_encoding("r50k_base") is None


def test_unknown_encoding_is_a_key_error_and_a_value_error_listing_the_names(counting_encoding):
    with pytest.raises(UnknownEncodingError) as caught:
        get_encoding("cl200k_base")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert message.startswith("Unknown encoding 'cl200k_base'")  # plain text, not KeyError's quoted repr
    assert all(name in message for name in ALL_ENCODINGS)
    assert counting_encoding.constructions == 0


# --------------------------------------------------------------------------- model names

MODEL_NAMES = [
    "gpt-4o", "gpt-4o-2024-05-13", "gpt-4o-mini", "chatgpt-4o-latest", "gpt-4", "gpt-4-0314", "gpt-4-32k",
    "gpt-4.1", "gpt-4.1-mini", "gpt-4.5-preview", "gpt-5", "gpt-5-mini", "o1", "o1-mini", "o3", "o3-mini",
    "o4-mini", "o4-mini-2025-04-16", "gpt-3.5-turbo", "gpt-3.5-turbo-0301", "gpt-35-turbo-16k", "gpt-3.5",
    "gpt-oss-120b", "ft:gpt-4o-mini:org::id", "ft:gpt-4-0613:org", "ft:gpt-3.5-turbo-0613:org",
    "ft:davinci-002:org", "ft:babbage-002:org", "davinci-002", "text-embedding-3-small",
    "text-embedding-ada-002", "text-davinci-003", "text-davinci-001", "davinci", "ada",
    "code-davinci-002", "code-davinci-edit-001", "text-davinci-edit-001", "code-search-ada-code-001",
    "gpt2", "gpt-2",
]


@pytest.mark.parametrize("model_name", MODEL_NAMES)
def test_model_maps_to_the_same_encoding_as_in_tiktoken(model_name):
    tiktoken_model = pytest.importorskip("tiktoken.model")
    assert encoding_name_for_model(model_name) == tiktoken_model.encoding_name_for_model(model_name)


def test_every_name_and_prefix_in_tiktokens_table_maps_the_same():
    tiktoken_model = pytest.importorskip("tiktoken.model")
    names = list(tiktoken_model.MODEL_TO_ENCODING) + [p + "x" for p in tiktoken_model.MODEL_PREFIX_TO_ENCODING]
    for model_name in names:
        assert encoding_name_for_model(model_name) == tiktoken_model.encoding_name_for_model(model_name), model_name


def test_a_longer_prefix_wins_over_a_shorter_one():
    assert encoding_name_for_model("ft:gpt-4o-mini-2024") == "o200k_base"  # not ft:gpt-4's cl100k_base
    assert encoding_name_for_model("ft:gpt-4-turbo") == "cl100k_base"


def test_unknown_model_is_a_key_error_suggesting_get_encoding():
    with pytest.raises(UnknownModelError) as caught:
        encoding_name_for_model("llama-3")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert "'llama-3'" in message and "bytebpe.get_encoding" in message
    assert all(name in message for name in ALL_ENCODINGS)


def test_encoding_for_model_returns_the_shared_encoding(data_dir, counting_encoding):
    assert registry.encoding_for_model("gpt-4o-mini") is get_encoding("o200k_base")


# --------------------------------------------------------------------------- with the real Encoding


@pytest.fixture
def encoding_class():
    """bytebpe.encoding.Encoding (the real class, where the tests above use a stand-in)."""
    from bytebpe.encoding import Encoding

    return Encoding


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_get_encoding_builds_a_real_encoding_that_agrees_with_tiktoken(
    name, data_dir, encoding_class, tiktoken_encoding, tiktoken_cache, monkeypatch
):
    encoding = get_encoding(name)
    assert isinstance(encoding, encoding_class)
    assert encoding.name == name
    assert get_encoding(name) is encoding and registered_encoding(name) is encoding
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    reference = tiktoken_encoding(name)
    assert encoding.n_vocab == reference.n_vocab
    text = "Hello world! It's 2024 — naïve café, 数字 12345.\n\n  indented"
    assert encoding.encode(text) == reference.encode(text)


# ==== tiktoken's loaders: load_tiktoken_bpe(path_or_url, expected_hash=None) ==========================


def test_an_official_address_loads_from_the_bundle_without_a_request(network):
    ranks = load_tiktoken_bpe(CL100K_FILE.url, CL100K_FILE.sha256)       # tiktoken's positional order
    assert ranks == ranks_for("cl100k_base")
    gpt2 = data_gym_to_mergeable_bpe_ranks(GPT2_VOCAB_BPE.url, GPT2_ENCODER_JSON.url,
                                           vocab_bpe_hash=GPT2_VOCAB_BPE.sha256,
                                           encoder_json_hash=GPT2_ENCODER_JSON.sha256)
    assert gpt2 == ranks_for("r50k_base")
    assert network.requests == []


def test_a_wrong_expected_hash_is_refused_for_addresses_paths_and_bytes(network, tmp_path):
    wrong = "0" * 64
    path = tmp_path / "small.tiktoken"
    path.write_bytes(b"YQ== 0\nYg== 1\n")
    for source in (CL100K_FILE.url, path, str(path), path.read_bytes()):
        with pytest.raises(VocabularyHashError, match=f"expected {wrong}"):
            load_tiktoken_bpe(source, expected_hash=wrong)
    assert load_tiktoken_bpe(path, hashlib.sha256(path.read_bytes()).hexdigest().upper()) == {b"a": 0, b"b": 1}


def test_another_address_is_downloaded_once_and_cached_under_tiktokens_name_for_it(network):
    url = "https://example.invalid/vocabs/mine.tiktoken"
    body = b"YQ== 0\nYg== 1\nYWI= 2\n"
    network.bodies[url] = body
    assert load_tiktoken_bpe(url) == {b"a": 0, b"b": 1, b"ab": 2}
    assert load_tiktoken_bpe(url, hashlib.sha256(body).hexdigest()) == {b"a": 0, b"b": 1, b"ab": 2}
    assert [request for request, _timeout in network.requests] == [url]
    assert (cache_dir() / hashlib.sha1(url.encode()).hexdigest()).read_bytes() == body


def test_a_download_with_the_wrong_hash_is_not_kept(network):
    url = "https://example.invalid/vocabs/tampered.tiktoken"
    network.bodies[url] = b"YQ== 0\n"
    with pytest.raises(VocabularyHashError):
        load_tiktoken_bpe(url, "1" * 64)
    assert not (cache_dir() / hashlib.sha1(url.encode()).hexdigest()).exists()


def test_an_unreachable_address_names_it_and_what_to_do(network, monkeypatch):
    url = "https://example.invalid/vocabs/absent.tiktoken"
    with pytest.raises(VocabularyNotFoundError, match="could not download it") as raised:
        load_tiktoken_bpe(url)
    assert url in str(raised.value)
    monkeypatch.setenv("BYTEBPE_OFFLINE", "1")
    with pytest.raises(VocabularyNotFoundError, match="BYTEBPE_OFFLINE"):
        load_tiktoken_bpe(url)


def test_the_loaders_take_tiktokens_arguments():
    tiktoken_load = pytest.importorskip("tiktoken.load")
    for ours, theirs in [(load_tiktoken_bpe, tiktoken_load.load_tiktoken_bpe),
                         (data_gym_to_mergeable_bpe_ranks, tiktoken_load.data_gym_to_mergeable_bpe_ranks)]:
        their_parameters = list(inspect.signature(theirs).parameters.values())
        our_parameters = list(inspect.signature(ours).parameters.values())[:len(their_parameters)]
        # Same count, order and defaults; the names of the first (the file) differ, and nobody passes it
        # by keyword (tiktoken's are tiktoken_bpe_file, vocab_bpe_file, encoder_json_file).
        assert [p.default for p in our_parameters] == [p.default for p in their_parameters]
        assert [p.name for p in our_parameters if "hash" in p.name] == [
            p.name for p in their_parameters if "hash" in p.name]
