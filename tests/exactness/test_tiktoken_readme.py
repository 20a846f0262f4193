"""tiktoken's own README examples run unchanged after ``import bytebpe as tiktoken``.

The README is read from the installed tiktoken's package metadata (its long description), so the examples
are the ones tiktoken publishes for that release, verbatim; the only change is the import line a user
changes. Blocks that are not about the `Encoding` API are listed by what they are, so that a new block in
a later tiktoken README fails here until someone decides about it.
"""
from __future__ import annotations

import importlib.metadata
import re

import pytest

import bytebpe

# Blocks (fenced, with or without a language) that are not Python using tiktoken's API, by a line of each.
NOT_API = {
    "pip install tiktoken": "a shell command",
    "├── tiktoken_ext": "the folder layout of a tiktoken_ext plugin",
    "from tiktoken._educational import *": "tiktoken's private teaching module, not the Encoding API",
    "from setuptools import setup, find_namespace_packages": "packaging of a tiktoken_ext plugin",
}


def readme_python_blocks() -> list[str]:
    metadata = importlib.metadata.metadata("tiktoken")
    # The long description: the message body, or the Description field where an importlib_metadata backport
    # (which some packages import, e.g. through awkward) has replaced importlib.metadata's reader.
    readme = metadata.get_payload() or metadata.get("Description")
    assert readme and "Extending tiktoken" in readme, "tiktoken's package metadata carries no README"
    return re.findall(r"```(?:python)?\n(.*?)```", readme, flags=re.DOTALL)


def api_blocks() -> list[str]:
    return [block for block in readme_python_blocks() if not any(marker in block for marker in NOT_API)]


def test_the_readme_blocks_are_the_ones_this_test_knows():
    blocks = readme_python_blocks()
    assert len(blocks) == len(api_blocks()) + len(NOT_API), blocks
    assert any("Encoding(" in block and "_mergeable_ranks" in block for block in api_blocks())


@pytest.mark.parametrize("block", api_blocks(), ids=lambda block: block.strip().splitlines()[0][:40])
def test_readme_example_runs_on_bytebpe(block, data_dir, tiktoken_encoding):
    source = block.replace("import tiktoken\n", "import bytebpe as tiktoken\n")
    namespace: dict[str, object] = {"tiktoken": bytebpe}
    exec(compile(source, "<tiktoken README>", "exec"), namespace)
    enc = namespace["enc"]
    assert isinstance(enc, bytebpe.Encoding)
    # Whatever the example built, it encodes as the same example run on tiktoken itself does.
    import tiktoken

    theirs: dict[str, object] = {"tiktoken": tiktoken}
    exec(compile(block, "<tiktoken README>", "exec"), theirs)
    text = "hello world <|im_start|>user<|im_end|> <|endoftext|>"
    assert enc.encode(text, allowed_special="all") == theirs["enc"].encode(text, allowed_special="all")
    assert enc.name == theirs["enc"].name and enc.n_vocab == theirs["enc"].n_vocab


def test_the_extension_recipe_keeps_the_base_encodings_ids(data_dir):
    cl100k_base = bytebpe.get_encoding("cl100k_base")
    assert isinstance(cl100k_base._mergeable_ranks, dict)
    assert cl100k_base._mergeable_ranks is cl100k_base._mergeable_ranks     # built once, then shared
    enc = bytebpe.Encoding(
        name="cl100k_im",
        pat_str=cl100k_base._pat_str,
        mergeable_ranks=cl100k_base._mergeable_ranks,
        special_tokens={**cl100k_base._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265},
    )
    text = "<|im_start|>system\nYou are helpful.<|im_end|>"
    assert enc.encode(text, allowed_special="all")[0] == 100264
    assert enc.encode_ordinary(text) == cl100k_base.encode_ordinary(text)
