"""Encodings declared by other installed packages: found by name through the `bytebpe.encodings` entry points
or tiktoken's `tiktoken_ext` plugin modules, shared per process, and pickled by name — so a spawned process
that has the same package installed rebuilds them from it.

Each test installs a small package of its own into a temporary folder put on sys.path (a `.dist-info` with
an `entry_points.txt` is all importlib.metadata needs), the way pip would lay it out.
"""
from __future__ import annotations

import multiprocessing
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import bytebpe
from bytebpe import plugins, registry

SMALL_MODULE = '''
import bytebpe

def small_ranks():
    """The first 300 ranks of r50k_base: the 256 bytes and 44 merges."""
    base = bytebpe.get_encoding("r50k_base")
    return {token: rank for token, rank in base._mergeable_ranks.items() if rank < 300}

def kwargs(name):
    return {"name": name, "pat_str": bytebpe.get_encoding("r50k_base")._pat_str,
            "mergeable_ranks": small_ranks(), "special_tokens": {"<|end|>": 300}}

def as_dict():
    return kwargs("mine")

def as_encoding():
    return bytebpe.Encoding(**kwargs("mine_encoding"))

def as_saved_file():
    import os, tempfile
    path = os.path.join(tempfile.mkdtemp(), "saved.json")
    bytebpe.Encoding(**kwargs("mine_saved")).save(path)
    return path

def misnamed():
    return kwargs("not_what_it_says")

def broken():
    raise RuntimeError("the vocabulary server is down")

ENCODING_CONSTRUCTORS = {"mine_tiktoken_style": lambda: kwargs("mine_tiktoken_style")}
'''

ENTRY_POINTS = {
    "mine": "mine_pkg:as_dict",
    "mine_encoding": "mine_pkg:as_encoding",
    "mine_saved": "mine_pkg:as_saved_file",
    "mine_misnamed": "mine_pkg:misnamed",
    "mine_broken": "mine_pkg:broken",
}


def install_plugin_package(folder: Path) -> Path:
    """Lays out `mine_pkg` (with its entry points) and a `tiktoken_ext.mine_ext` plugin module in `folder`."""
    (folder / "mine_pkg").mkdir(parents=True)
    (folder / "mine_pkg" / "__init__.py").write_text(SMALL_MODULE)
    info = folder / "mine_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mine-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[bytebpe.encodings]\n" + "".join(f"{name} = {value}\n" for name, value in ENTRY_POINTS.items()))
    # tiktoken's convention: a module in the tiktoken_ext namespace package (no __init__.py there).
    (folder / "tiktoken_ext").mkdir()
    (folder / "tiktoken_ext" / "mine_ext.py").write_text("from mine_pkg import ENCODING_CONSTRUCTORS\n")
    return folder


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    folder = install_plugin_package(tmp_path / "site")
    monkeypatch.syspath_prepend(str(folder))
    for module in [name for name in sys.modules if name == "tiktoken_ext" or name.startswith("tiktoken_ext.")]:
        monkeypatch.delitem(sys.modules, module)
    registry._clear_caches()
    yield folder
    registry._clear_caches()
    for module in [name for name in sys.modules if name.startswith(("mine_pkg", "tiktoken_ext"))]:
        del sys.modules[module]


def test_an_entry_point_names_an_encoding_that_get_encoding_builds_once_per_process(plugin_path):
    mine = bytebpe.get_encoding("mine")
    assert mine is bytebpe.get_encoding("mine")
    assert mine.name == "mine" and mine.n_vocab == 301
    base = bytebpe.get_encoding("r50k_base")
    # Its first 300 ranks are r50k's, so on text whose merges stay below rank 300 both give the same ids.
    text = " the in  the in"
    assert mine.encode(text) == base.encode(text)
    assert mine.encode("<|end|>", allowed_special="all") == [300]
    assert mine.decode(mine.encode("anything at all, ünïcödé")) == "anything at all, ünïcödé"


@pytest.mark.parametrize("name", ["mine_encoding", "mine_saved", "mine_tiktoken_style"])
def test_an_entry_point_may_give_an_encoding_a_saved_file_or_tiktoken_style_arguments(plugin_path, name):
    enc = bytebpe.get_encoding(name)
    assert enc.name == name
    assert enc.encode("<|end|>", allowed_special="all") == [300]


def test_declared_names_are_listed_after_the_seven_built_in(plugin_path):
    names = bytebpe.list_encoding_names()
    assert names[:7] == list(registry.ENCODING_SPECS)
    assert set(names[7:]) == {*ENTRY_POINTS, "mine_tiktoken_style"}


def test_tiktokens_own_plugin_module_is_never_used(plugin_path):
    """tiktoken_ext.openai_public (installed with tiktoken) would download; the seven are built in."""
    assert "openai_public" not in " ".join(plugins.plugin_names())
    assert not any(name.startswith("tiktoken_ext.openai_public") for name in sys.modules)


def test_an_encoding_under_another_name_than_its_own_is_refused(plugin_path):
    with pytest.raises(plugins.PluginError, match="named 'not_what_it_says', not 'mine_misnamed'"):
        bytebpe.get_encoding("mine_misnamed")


def test_a_failing_constructor_is_reported_with_its_entry_point(plugin_path):
    with pytest.raises(plugins.PluginError, match=r"entry point 'mine_broken' \(mine_pkg:broken\).*server is down"):
        bytebpe.get_encoding("mine_broken")


def test_an_unknown_name_lists_the_built_in_and_the_declared_names(plugin_path):
    with pytest.raises(bytebpe.UnknownEncodingError) as raised:
        bytebpe.get_encoding("nobody_declares_this")
    message = str(raised.value)
    assert "cl100k_base" in message and "mine_saved" in message and "bytebpe.encodings" in message


def test_a_declared_encoding_pickles_as_its_name(plugin_path):
    mine = bytebpe.get_encoding("mine")
    data = pickle.dumps(mine)
    assert len(data) < 100              # the name, not the vocabulary
    assert pickle.loads(data) is mine


def unpickle_and_encode(data: bytes) -> tuple[str, list[int]]:
    enc = pickle.loads(data)
    return enc.name, enc.encode("hello <|end|>", allowed_special="all")


def test_a_declared_encoding_unpickles_in_a_spawned_process_from_the_package_there(plugin_path):
    mine = bytebpe.get_encoding("mine")
    # A fresh interpreter with the same package installed (on its path) and nothing else shared.
    script = textwrap.dedent(f"""
        import pickle, sys
        sys.path.insert(0, {str(plugin_path)!r})
        enc = pickle.loads(sys.stdin.buffer.read())
        print(enc.name, enc.encode("hello <|end|>", allowed_special="all"))
    """)
    result = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(mine), capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().split(" ", 1) == ["mine", f"{mine.encode('hello <|end|>', allowed_special='all')}\n"]


def test_a_declared_encoding_works_in_a_spawn_pool(plugin_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(plugin_path))
    mine = bytebpe.get_encoding("mine")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(unpickle_and_encode, [pickle.dumps(mine)]) == [
            ("mine", mine.encode("hello <|end|>", allowed_special="all"))]


def test_without_the_package_a_pickled_name_fails_clearly(plugin_path):
    data = pickle.dumps(bytebpe.get_encoding("mine"))
    result = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                            input=data, capture_output=True, timeout=120)
    assert result.returncode != 0
    assert b"Unknown encoding 'mine'" in result.stderr and b"bytebpe.encodings" in result.stderr


def test_a_broken_tiktoken_plugin_module_does_not_hide_the_others_and_is_named_when_it_matters(plugin_path):
    (plugin_path / "tiktoken_ext" / "broken_ext.py").write_text("raise ImportError('needs a missing package')\n")
    assert bytebpe.get_encoding("mine_tiktoken_style").name == "mine_tiktoken_style"
    assert "mine_tiktoken_style" in bytebpe.list_encoding_names()
    with pytest.raises(bytebpe.UnknownEncodingError, match="tiktoken_ext.broken_ext failed to import.*missing"):
        bytebpe.get_encoding("declared_nowhere")
