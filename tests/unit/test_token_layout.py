"""Encoded outputs describe themselves: PREFIX.meta.json records what made the arrays, appears together with
them, and `load_token_files` gives the arrays back memory-mapped with the metadata, refusing files that do not
match it."""
from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe import datasets, registry
from bytebpe.tokens import arrays, layout
from bytebpe.tokens.layout import TokenFilesMeta, prefix_of, ranks_sha256, read_meta, vocabulary_sha256

TEXTS = ["Hello world", "", "naïve café — ünïcödé", "x" * 1000, "<|endoftext|> is text here"]


@pytest.fixture
def jsonl(tmp_path) -> Path:
    path = tmp_path / "in" / "docs.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in TEXTS), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_the_ranks_sha256_of_a_named_encoding_is_that_of_its_official_tiktoken_file(name, data_dir):
    # The pins come from tiktoken_ext (registry.py): the record can be checked against tiktoken's own.
    pinned = registry.encoding_spec(name).files[0].sha256
    assert ranks_sha256(bytebpe.get_encoding(name)._mergeable_ranks) == pinned
    assert hashlib.sha256((data_dir / f"{name}.tiktoken").read_bytes()).hexdigest() == pinned


@pytest.mark.parametrize("name", registry.list_encoding_names())
def test_a_registry_encoding_records_the_same_sha256_as_one_built_from_its_ranks(name):
    # The registry's encodings take the pinned digest instead of hashing their ranks again: the same value.
    built = bytebpe.Encoding(**registry.encoding_spec_kwargs(name))
    assert layout._pinned_sha256(bytebpe.get_encoding(name)) is not None
    assert layout._pinned_sha256(built) is None
    assert vocabulary_sha256(bytebpe.get_encoding(name)) == vocabulary_sha256(built) == ranks_sha256(
        built._mergeable_ranks)


def test_gpt2_and_r50k_base_have_one_vocabulary_and_a_trained_one_another():
    assert vocabulary_sha256(bytebpe.get_encoding("gpt2")) == vocabulary_sha256(bytebpe.get_encoding("r50k_base"))
    trained = bytebpe.train(TEXTS * 5, 260)
    assert vocabulary_sha256(trained) != vocabulary_sha256(bytebpe.get_encoding("r50k_base"))


@pytest.mark.parametrize(("encoding", "format", "eot", "dtype"),
                         [("o200k_base", "npy", True, "uint32"), ("gpt2", "bin", False, "uint16")])
def test_the_sidecar_records_encoding_vocabulary_counts_inputs_version_and_time(
        tmp_path, jsonl, tiktoken_encoding, encoding, format, eot, dtype):
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    summary = bytebpe.encode_files(jsonl, encoding=encoding, output=tmp_path / "out" / "o", format=format, eot=eot)
    after = datetime.datetime.now(datetime.timezone.utc)
    enc = bytebpe.get_encoding(encoding)
    paths = datasets.output_paths(tmp_path / "out" / "o", format)
    assert summary.outputs == list(paths) and paths.meta.name == "o.meta.json"
    record = json.loads(paths.meta.read_text(encoding="utf-8"))
    reference = tiktoken_encoding(encoding)
    n_tokens = sum(len(reference.encode_ordinary(text)) + eot for text in TEXTS)
    assert {key: record[key] for key in ("encoding", "n_vocab", "dtype", "format", "documents", "tokens", "bytes",
                                         "skipped", "eot", "eot_token", "field", "lines", "bytebpe_version")} == {
        "encoding": encoding, "n_vocab": enc.n_vocab, "dtype": dtype, "format": format, "documents": len(TEXTS), "tokens": n_tokens,
        "bytes": sum(len(text.encode()) for text in TEXTS), "skipped": 0, "eot": eot,
        "eot_token": enc.eot_token if eot else None, "field": "text", "lines": False,
        "bytebpe_version": bytebpe.__version__}
    assert record["vocabulary_sha256"] == vocabulary_sha256(enc)
    assert record["inputs"] == [{"path": str(jsonl.resolve()), "size": jsonl.stat().st_size,
                                 "documents": len(TEXTS), "tokens": n_tokens, "skipped": 0}]
    assert record["created"].endswith("Z")
    created = datetime.datetime.fromisoformat(record["created"].replace("Z", "+00:00"))
    assert before <= created <= after


@pytest.mark.parametrize("format", ["npy", "bin"])
def test_load_token_files_maps_the_arrays_read_only_and_gives_each_document(tmp_path, jsonl, tiktoken_encoding,
                                                                             format):
    bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "o", format=format, eot=True)
    reference = tiktoken_encoding("cl100k_base")
    paths = datasets.output_paths(tmp_path / "o", format)
    for name in (tmp_path / "o", str(tmp_path / "o"), *paths):        # the prefix, or any file of the set
        data = bytebpe.load_token_files(name)
        assert isinstance(data, bytebpe.TokenFiles) and isinstance(data.meta, bytebpe.TokenFilesMeta)
        assert isinstance(data.tokens, np.memmap) and isinstance(data.offsets, np.memmap)
        assert not data.tokens.flags.writeable and data.tokens.dtype == np.uint32
        assert len(data) == data.meta.documents == len(TEXTS) and data.paths == paths
        assert [data.document(i).tolist() for i in range(len(TEXTS))] == [
            reference.encode_ordinary(text) + [100257] for text in TEXTS]
        assert data.document(-1).tolist() == data.document(len(TEXTS) - 1).tolist()
    with pytest.raises(IndexError, match="out of range"):
        data.document(len(TEXTS))


def test_an_empty_bin_output_loads(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    bytebpe.encode_files(tmp_path / "empty.jsonl", encoding="gpt2", output=tmp_path / "o", format="bin")
    data = bytebpe.load_token_files(tmp_path / "o")
    assert (data.tokens.shape, data.tokens.dtype, data.offsets.tolist(), len(data)) == ((0,), np.uint16, [0], 0)


def test_load_token_files_refuses_a_set_without_sidecar_or_whose_arrays_do_not_match_it(tmp_path, jsonl):
    bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "o")
    paths = datasets.output_paths(tmp_path / "o")
    # Another run's tokens under this name: same dtype, other length.
    np.save(paths.tokens, np.arange(3, dtype=np.uint32))
    with pytest.raises(ValueError, match=r"do not match .*o\.meta\.json: tokens are uint32 \(3,\)"):
        bytebpe.load_token_files(tmp_path / "o")
    paths.meta.unlink()
    with pytest.raises(FileNotFoundError, match=r"o\.meta\.json not found"):
        bytebpe.load_token_files(tmp_path / "o")


def test_a_damaged_or_newer_sidecar_is_an_error_naming_the_file_and_unknown_keys_are_kept(tmp_path, jsonl):
    bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "o")
    meta_path = datasets.output_paths(tmp_path / "o").meta
    record = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**record, "note": "added by hand"}))
    meta = read_meta(tmp_path / "o")
    assert meta.extra == {"note": "added by hand"} and json.loads(meta.to_json())["note"] == "added by hand"
    assert TokenFilesMeta.from_json(meta.to_json()) == meta
    for damaged, message in [
        ("{not json", "not valid JSON"),
        (json.dumps({**record, "meta_version": 99}), "meta_version 99"),
        (json.dumps({k: v for k, v in record.items() if k != "tokens"}), "missing tokens"),
        (json.dumps({**record, "tokens": -1}), "tokens must be a non-negative integer"),
        (json.dumps({**record, "dtype": "float32"}), "unknown dtype"),
        (json.dumps({**record, "encoding": None}), "encoding must be a string"),
        (json.dumps({**record, "eot": "yes"}), "eot and lines must be true or false"),
        (json.dumps({**record, "inputs": [{"path": "x"}]}), "bad 'inputs' entry"),
    ]:
        meta_path.write_text(damaged)
        with pytest.raises(ValueError, match=f"o.meta.json: {message}"):
            bytebpe.load_token_files(tmp_path / "o")


def test_the_sidecar_is_committed_with_the_arrays_or_not_at_all(tmp_path, jsonl, monkeypatch):
    real_commit = arrays.PartialFile.commit

    def commit(self):
        if self.path.name.endswith(".meta.json"):
            raise OSError("disk full")
        return real_commit(self)

    monkeypatch.setattr(arrays.PartialFile, "commit", commit)
    with pytest.raises(OSError, match="disk full"):
        bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "out" / "o")
    # The arrays were renamed first, then taken back: no set without its description.
    assert list((tmp_path / "out").iterdir()) == []


def test_prefix_of_strips_the_name_of_any_file_of_a_set():
    assert {prefix_of(f"d/x{suffix}") for suffix in ("", ".tokens.npy", ".offsets.npy", ".meta.json", ".bin")} == {
        "d/x"}
    assert prefix_of(os.path.join("d", "x.txt")) == os.path.join("d", "x.txt")


# ---- which tokenizer may read the files: by content, not by name ---------------------------------------------

def test_the_same_tokenizer_under_another_name_reads_the_files_and_another_tokenizer_does_not(tmp_path, jsonl):
    bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "o")
    meta = read_meta(tmp_path / "o")
    named = bytebpe.get_encoding("cl100k_base")
    assert meta.tokenizer_sha256 == layout.tokenizer_sha256(named)
    # Saved and loaded back as "mine": another name, the same vocabulary, pattern and special tokens.
    named_differently = bytebpe.Encoding("mine", pat_str=named._pat_str, mergeable_ranks=named._mergeable_ranks,
                                         special_tokens=named._special_tokens)
    layout.check_encoding(meta, named_differently)
    loaded = bytebpe.load_token_files(tmp_path / "o")
    assert named_differently.decode(loaded.document(0).tolist()) == TEXTS[0]
    # The same vocabulary, split by another pattern or with other special tokens, is another tokenizer.
    for other in (named.with_special_tokens({"<|mine|>": 200_000}, name="cl100k_base"),
                  bytebpe.Encoding("cl100k_base", pat_str=bytebpe.get_encoding("o200k_base")._pat_str,
                                   mergeable_ranks=named._mergeable_ranks, special_tokens=named._special_tokens)):
        with pytest.raises(layout.EncodingMismatchError, match="another tokenizer"):
            layout.check_encoding(meta, other)


def test_a_sidecar_without_the_tokenizer_digest_is_checked_by_name_and_vocabulary(tmp_path, jsonl):
    # Written by an older bytebpe: no tokenizer_sha256, so the name must match as well as the vocabulary.
    bytebpe.encode_files(jsonl, encoding="cl100k_base", output=tmp_path / "o")
    path = tmp_path / "o.meta.json"
    record = json.loads(path.read_text())
    del record["tokenizer_sha256"]
    meta = TokenFilesMeta.from_record(record)
    assert meta.tokenizer_sha256 is None
    layout.check_encoding(meta, bytebpe.get_encoding("cl100k_base"))
    named = bytebpe.get_encoding("cl100k_base")
    with pytest.raises(layout.EncodingMismatchError, match="not 'mine'"):
        layout.check_encoding(meta, bytebpe.Encoding("mine", pat_str=named._pat_str,
                                                            mergeable_ranks=named._mergeable_ranks,
                                                            special_tokens=named._special_tokens))
