"""`enc.save(path)` writes one self-describing file and `bytebpe.load(path)` gives back an identical
Encoding; damaged files are an `EncodingFileError` (a ValueError) naming the file, never a crash."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import bytebpe
from bytebpe import EncodingFileError

TEXTS = ["the quick brown fox jumps over the lazy dog, 123 times!\n", "日本語のテキスト 😀 ok"] * 20


@pytest.fixture(scope="module")
def encoding() -> bytebpe.Encoding:
    return bytebpe.train(TEXTS, 320, special_tokens={"<|endoftext|>": 500, "<|pad|>": 501}, name="tiny",
                         pattern="o200k_base")


@pytest.fixture
def saved(encoding, tmp_path: Path) -> Path:
    path = tmp_path / "tiny.bytebpe.json"
    encoding.save(path)
    return path


def test_save_then_load_gives_an_identical_encoding(encoding, saved):
    loaded = bytebpe.load(saved)
    assert loaded.name == "tiny"
    assert loaded._pat_str == encoding._pat_str
    assert loaded.mergeable_ranks == encoding.mergeable_ranks
    assert loaded.special_tokens == encoding.special_tokens
    for text in TEXTS[:2] + ["<|endoftext|> unseen text"]:
        assert loaded.encode(text, allowed_special="all") == encoding.encode(text, allowed_special="all")


def test_the_file_describes_itself(saved):
    fields = json.loads(saved.read_text(encoding="ascii"))
    assert fields["format"] == "bytebpe" and fields["version"] == 1
    assert fields["name"] == "tiny"
    assert fields["special_tokens"] == {"<|endoftext|>": 500, "<|pad|>": 501}
    assert [rank for _, rank in fields["mergeable_ranks"]] == list(range(len(fields["mergeable_ranks"])))


def test_a_real_vocabulary_round_trips(data_dir, tmp_path: Path):
    cl100k = bytebpe.get_encoding("cl100k_base")
    cl100k.save(tmp_path / "cl100k.json")
    loaded = bytebpe.load(tmp_path / "cl100k.json")
    assert loaded.mergeable_ranks == cl100k.mergeable_ranks
    assert loaded.special_tokens == cl100k.special_tokens


def test_tiktoken_export_loads_in_tiktoken(encoding, tmp_path: Path):
    import tiktoken.load

    path = tmp_path / "tiny.tiktoken"
    bytebpe.dump_tiktoken_bpe(encoding.mergeable_ranks, path)
    assert tiktoken.load.load_tiktoken_bpe(str(path)) == encoding.mergeable_ranks
    assert bytebpe.load_tiktoken_bpe(path) == encoding.mergeable_ranks


@pytest.mark.parametrize("keep", [0, 1, 10, 100, 0.5, 0.9, -2])
def test_a_truncated_file_is_a_clear_error(saved, keep):
    contents = saved.read_bytes()
    cut = keep if isinstance(keep, int) and keep >= 0 else int(len(contents) * keep) if keep > 0 else len(contents) + keep
    saved.write_bytes(contents[:cut])
    with pytest.raises(EncodingFileError, match=str(saved.name)):
        bytebpe.load(saved)


def test_a_changed_byte_is_caught_by_the_checksum(saved):
    contents = saved.read_text(encoding="ascii")
    # A valid base64 token swapped for another valid one: still parses, still the wrong vocabulary.
    fields = json.loads(contents)
    first, second = fields["mergeable_ranks"][300][0], fields["mergeable_ranks"][301][0]
    saved.write_text(contents.replace(f'"{first}"', "@").replace(f'"{second}"', f'"{first}"').replace(
        "@", f'"{second}"'), encoding="ascii")
    with pytest.raises(EncodingFileError, match="checksum mismatch"):
        bytebpe.load(saved)


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        (b"", "not a saved bytebpe encoding"),
        (b"\xff\xfe garbage", "not a saved bytebpe encoding"),
        (b"[1, 2, 3]", "no \"format\""),
        (b'{"format": "tiktoken"}', "no \"format\""),
        (b'{"format": "bytebpe", "version": 99}', "format version 99"),
        (b'{"format": "bytebpe", "version": 1}', "checksum mismatch"),
    ],
)
def test_foreign_and_future_files_are_refused(tmp_path: Path, contents, message):
    path = tmp_path / "file.json"
    path.write_bytes(contents)
    with pytest.raises(EncodingFileError, match=message):
        bytebpe.load(path)
    assert issubclass(EncodingFileError, ValueError)


def test_consistent_but_invalid_contents_are_refused(encoding, tmp_path: Path):
    # A file written by hand with a correct checksum but a vocabulary the core refuses.
    from bytebpe import serialization

    fields = {"format": "bytebpe", "version": 1, "name": "x", "pattern": r"\w+",
              "special_tokens": {}, "mergeable_ranks": [["YQ==", 0], ["YQ==", 1]]}
    fields["sha256"] = serialization._checksum(fields)
    (tmp_path / "dup.json").write_text(json.dumps(fields), encoding="ascii")
    with pytest.raises(EncodingFileError, match="listed twice"):
        bytebpe.load(tmp_path / "dup.json")
    fields["mergeable_ranks"] = [["YQ==", -1]]
    fields.pop("sha256")
    fields["sha256"] = serialization._checksum(fields)
    (tmp_path / "neg.json").write_text(json.dumps(fields), encoding="ascii")
    with pytest.raises(EncodingFileError, match="outside"):
        bytebpe.load(tmp_path / "neg.json")
