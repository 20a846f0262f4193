"""Hostile and odd files get the loaders' own errors, in the user's words, or load as the oracle loads them.

Each case names what a file holds and what must happen: deeply nested JSON (beyond Python's recursion limit)
through every loader that parses JSON; a JSONL line with an integer too long for Python, read with and
without skip_bad; added-token ids HF refuses; a `.tiktoken` file with Windows line ends, which tiktoken reads.
"""
from __future__ import annotations

import base64
import json

import pytest

import bytebpe
from bytebpe import readers
from bytebpe.readers import BadDocumentError

NESTED = b'{"model": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize("loader", ["from_tokenizer_json", "load", "load_tokenizer", "from_tekken_json"])
def test_json_nested_beyond_the_recursion_limit_is_the_loaders_error(loader, tmp_path):
    path = tmp_path / "nested.json"
    path.write_bytes(NESTED)
    with pytest.raises(bytebpe.TokenizerFileError, match="nested more deeply") as error:
        getattr(bytebpe, loader)(path)
    assert not isinstance(error.value, RecursionError)


def test_a_jsonl_line_nested_too_deeply_or_with_a_huge_integer_is_a_bad_document(tmp_path):
    huge = "9" * 5000
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "good one"}\n{"text": "x", "n": ' + huge + '}\n{"text": "x", "deep": '
                    + "[" * 5000 + "]" * 5000 + '}\n{"text": "good two"}\n')
    with pytest.raises(BadDocumentError, match=r"d\.jsonl:2: not readable JSON \(Exceeds the limit"):
        list(readers.read_texts(readers.find_input_files([path]), readers.ReadTally()))
    tally = readers.ReadTally()
    texts = list(readers.read_texts(readers.find_input_files([path]), tally, skip_bad=True))
    assert texts == ["good one", "good two"] and tally.skipped == 2
    assert tally.examples[1].endswith("d.jsonl:3: JSON nested more deeply than Python reads (~1,000 levels)")


def _byte_level_tokenizer_json(tmp_path, token_id) -> "Path":  # noqa: F821
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<x>"])
    spec = json.loads(tok.to_str())
    if token_id is _MISSING:
        del spec["added_tokens"][0]["id"]
    else:
        spec["added_tokens"][0]["id"] = token_id
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    return path


_MISSING = object()


@pytest.mark.parametrize("token_id", [-1, 2**40, 2**32, True, 50300.0, "5", None, _MISSING],
                         ids=["-1", "2**40", "2**32", "true", "50300.0", "string", "null", "missing"])
def test_an_added_token_id_that_hf_refuses_is_refused(token_id, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    path = _byte_level_tokenizer_json(tmp_path, token_id)
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_file(str(path))       # the oracle refuses the file
    with pytest.raises(bytebpe.TokenizerFileError, match=r"added_tokens\[0\]"):
        bytebpe.from_tokenizer_json(path)


def test_an_added_token_with_a_valid_id_loads(tmp_path):
    assert bytebpe.from_tokenizer_json(_byte_level_tokenizer_json(tmp_path, 256)).encode(
        "a<x>", allowed_special="all")[-1] == 256


def test_a_tiktoken_file_with_windows_line_ends_loads_as_tiktoken_loads_it(tmp_path):
    from tiktoken.load import load_tiktoken_bpe as tiktoken_load

    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)] + [base64.b64encode(b"ab") + b" 256"]
    path = tmp_path / "crlf.tiktoken"
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    assert bytebpe.load_tiktoken_bpe(path) == tiktoken_load(str(path))
    assert bytebpe.from_tiktoken_file(path, pattern=r"\S+|\s+", special_tokens={}).encode("ab") == [256]
    path.write_bytes(b"\r".join(lines))         # a lone CR is no line end: a mangled file stays an error
    with pytest.raises(ValueError, match="line 1"):
        bytebpe.load_tiktoken_bpe(path)


def test_reading_stdin_when_it_is_closed_is_an_error_in_words(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "bytebpe", "encode", "-", "--encoding", "cl100k_base", "-o", str(tmp_path / "out"), "-q"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          close_fds=True, preexec_fn=lambda: __import__("os").close(0))
    assert done.returncode == 1, done.stderr
    assert "standard input, which is closed" in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


MEMORY_LIMITED_CLI = """
import resource, sys
from bytebpe import cli
with open("/proc/self/status") as status:
    size_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size_kib * 1024 + (300 << 20),) * 2)
sys.exit(cli.main(["encode", sys.argv[1], "--encoding", "cl100k_base", "-o", sys.argv[2], "-q", "--workers", "1"]))
"""


def test_a_document_too_large_for_memory_is_an_error_in_words_and_leaves_no_output(tmp_path, data_dir):
    import os
    import random
    import subprocess
    import sys

    # 160 MB of random letters: one document (one piece), more than 300 MB of headroom can hold with its ids.
    letters = bytes(random.Random(5).choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(256))
    big = tmp_path / "big.txt"
    big.write_bytes(random.Random(6).randbytes(160 << 20).translate(letters))
    done = subprocess.run([sys.executable, "-c", MEMORY_LIMITED_CLI, str(big), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)})
    assert done.returncode == 1, done.stderr[-2000:]
    assert "out of memory" in done.stderr and "Traceback" not in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.txt"]


def test_an_input_truncated_while_it_is_encoded_fails_the_job_and_writes_nothing(tmp_path, monkeypatch,
                                                                                 data_dir):
    from bytebpe import datasets

    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": f"document {i} " * 20}) + "\n" for i in range(3000)))
    whole = path.read_bytes()
    real_run = datasets._run

    def run_then_truncate(*args, **kwargs):
        result = real_run(*args, **kwargs)
        path.write_bytes(whole[:whole.index(b"\n", len(whole) // 2) + 1])     # cut at a line end, as in the report
        return result

    monkeypatch.setattr(datasets, "_run", run_then_truncate)
    with pytest.raises(readers.InputChangedError, match=r"d\.jsonl changed while it was read \(its size went"):
        bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "out" / "d")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    # Unchanged, the same job succeeds.
    path.write_bytes(whole)
    monkeypatch.setattr(datasets, "_run", real_run)
    assert bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "out" / "d").documents == 3000


def test_an_input_rewritten_with_the_same_size_is_seen_by_its_modification_time(tmp_path):
    import os

    path = tmp_path / "d.txt"
    path.write_text("hello world\n")
    found = readers.find_input_files([path])[0]
    assert found.change_since_found() is None
    path.write_text("HELLO WORLD\n")
    os.utime(path, ns=(found.mtime_ns + 10**9, found.mtime_ns + 10**9))
    assert found.change_since_found() == "it was modified"
