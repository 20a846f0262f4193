"""bytebpe under code that imports tiktoken (`bytebpe.patch_tiktoken`): other people's code, unchanged.

tiktoken's own test suite (release 0.14.0, vendored with its licence in tests/vendored/tiktoken_0_14_0) and
openai-whisper's tokenizer tests (with whisper's tokenizer module and vocabularies, fetched from its sdist by
tools/fetch_real_files.py) each run whole in a process of their own where `import tiktoken` gives bytebpe.
Pickles made by stock tiktoken load under the patch; the patch undoes cleanly.
"""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bytebpe
from tests.conftest import _missing
from tests.real_files import locate, real_files

CHECKOUT = Path(__file__).resolve().parents[2]
TIKTOKEN_SUITE = CHECKOUT / "tests" / "vendored" / "tiktoken_0_14_0"


def _pytest_in_a_process(folder: Path, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                             str(folder)], check=False, capture_output=True, text=True, cwd=cwd, env=env,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout


def test_tiktokens_own_test_suite_passes_whole_with_bytebpe_as_tiktoken() -> None:
    env = {**os.environ, "BYTEBPE_VENDORED_SUITE": "tiktoken", "BYTEBPE_PATCH_TIKTOKEN": "1"}
    out = _pytest_in_a_process(TIKTOKEN_SUITE, CHECKOUT, env)
    last = out.strip().splitlines()[-1]
    assert "33 passed" in last and "skipped" not in last and "failed" not in last, last


WHISPER_CONFTEST = '''\
import bytebpe

bytebpe.patch_tiktoken()
import tiktoken

assert getattr(tiktoken, "__bytebpe__", False)
'''
# whisper/__init__.py imports torch and the model code; the tests need only whisper.tokenizer, so the package
# here is whisper's tokenizer module and assets under an empty __init__ (written by this test, said so).
WHISPER_INIT = '"""openai-whisper\'s tokenizer module alone (bytebpe\'s test: the real __init__ needs torch)."""\n'


def test_whispers_tokenizer_tests_pass_with_bytebpe_as_tiktoken(tmp_path: Path) -> None:
    files = {entry.name: entry for entry in real_files() if entry.format == "whisper"}
    paths = {name: locate(entry) for name, entry in files.items()}
    if any(path is None for path in paths.values()):
        _missing("needs openai-whisper's files (python tools/fetch_real_files.py DIR, then BYTEBPE_REAL_FILES_DIR=DIR)")
    package = tmp_path / "whisper"
    (package / "assets").mkdir(parents=True)
    (package / "__init__.py").write_text(WHISPER_INIT)
    shutil.copy(paths["whisper-tokenizer.py"], package / "tokenizer.py")
    for name in ("multilingual", "gpt2"):
        shutil.copy(paths[f"whisper-{name}.tiktoken"], package / "assets" / f"{name}.tiktoken")
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(paths["whisper-test_tokenizer.py"], tests / "test_tokenizer.py")
    (tests / "conftest.py").write_text(WHISPER_CONFTEST)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = _pytest_in_a_process(tests, tmp_path, env)
    last = out.strip().splitlines()[-1]
    assert "4 passed" in last and "skipped" not in last, last


PICKLER = '''\
import pickle, sys
import tiktoken
assert not getattr(tiktoken, "__bytebpe__", False)
named = tiktoken.get_encoding("r50k_base")
custom = tiktoken.Encoding(name="custom_enc", pat_str=named._pat_str, mergeable_ranks=named._mergeable_ranks,
                           special_tokens={"<|pickle|>": 100_000})
sys.stdout.buffer.write(pickle.dumps((named, custom)))
'''


def test_pickles_made_by_stock_tiktoken_load_as_bytebpe_encodings(tiktoken_cache: Path) -> None:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    env.pop("BYTEBPE_PATCH_TIKTOKEN", None)
    made = subprocess.run([sys.executable, "-c", PICKLER], check=False, capture_output=True, env=env, timeout=300)
    assert made.returncode == 0, made.stderr.decode()[-2000:]
    bytebpe.patch_tiktoken()
    try:
        named, custom = pickle.loads(made.stdout)
    finally:
        bytebpe.unpatch_tiktoken()
    assert type(named) is bytebpe.Encoding and type(custom) is bytebpe.Encoding
    assert named.encode("hello world") == [31373, 995] == bytebpe.get_encoding("r50k_base").encode("hello world")
    assert custom.encode("<|pickle|>", allowed_special="all") == [100_000]
    assert custom.encode("hello world") == [31373, 995]


def test_the_patch_gives_tiktokens_modules_and_undoes_cleanly() -> None:
    before = {name: sys.modules.get(name) for name in ("tiktoken", "tiktoken.core", "tiktoken.load")}
    bytebpe.patch_tiktoken()
    try:
        import tiktoken
        import tiktoken.core
        import tiktoken.load
        import tiktoken.model
        import tiktoken.registry

        assert tiktoken.Encoding is tiktoken.core.Encoding is bytebpe.Encoding
        assert tiktoken.get_encoding("cl100k_base") is bytebpe.get_encoding("cl100k_base")
        assert tiktoken.registry.ENCODING_CONSTRUCTORS["cl100k_base"]()["name"] == "cl100k_base"
        assert tiktoken.load.load_tiktoken_bpe(b"YQ== 0\n= 1\n") == {b"a": 0, b"": 1}
        assert tiktoken.model.encoding_name_for_model("gpt-4o") == "o200k_base"
    finally:
        bytebpe.unpatch_tiktoken()
    assert {name: sys.modules.get(name) for name in before} == before


def test_the_empty_byte_string_is_a_token_as_tiktoken_allows(tiktoken_encoding) -> None:
    ranks = dict(bytebpe.get_encoding("gpt2")._mergeable_ranks)
    del ranks[bytebpe.get_encoding("gpt2").decode_single_token_bytes(50255)]
    ranks[b""] = 50255
    enc = bytebpe.Encoding("with_empty", pat_str=bytebpe.get_encoding("gpt2")._pat_str, mergeable_ranks=ranks,
                           special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)
    assert enc.decode_single_token_bytes(50255) == b"" and enc.decode([31373, 50255, 995]) == "hello world"
    assert enc.encode_single_token(b"") == 50255 and enc._mergeable_ranks[b""] == 50255
    assert 50255 not in enc.encode("hello world " * 50)
    assert pickle.loads(pickle.dumps(enc)).decode([50255]) == ""
    with pytest.raises(ValueError, match="two tokens"):
        bytebpe.Encoding("clash", pat_str=enc._pat_str, mergeable_ranks={**ranks, b"": 100}, special_tokens={})
