"""Reading and writing vocabulary files: what a valid file is, and how each kind of damage is reported.

A `.tiktoken` file has one line per token, ``base64(token bytes) SPACE rank``, ranks increasing.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bytebpe import vocab_io
from bytebpe.vocab_sources import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe
from bytebpe.vocab_io import (
    VocabularyHashError,
    dump_tiktoken_bpe,
    sha256_of,
    verify_sha256,
)

TIKTOKEN_FILES = ["r50k_base.tiktoken", "p50k_base.tiktoken", "cl100k_base.tiktoken", "o200k_base.tiktoken"]


def line(token: bytes, rank: int | str) -> bytes:
    return base64.b64encode(token) + b" " + str(rank).encode() + b"\n"


# --------------------------------------------------------------------------- valid files


def test_load_reads_tokens_and_ranks_from_bytes():
    assert load_tiktoken_bpe(line(b"a", 0) + line(b"b", 1) + line(b"ab", 2)) == {b"a": 0, b"b": 1, b"ab": 2}


def test_load_reads_a_path(tmp_path):
    path = tmp_path / "tiny.tiktoken"
    path.write_bytes(line(b"\x00", 0) + line(b"\xff\xfe", 1))
    assert load_tiktoken_bpe(path) == {b"\x00": 0, b"\xff\xfe": 1}
    assert load_tiktoken_bpe(str(path)) == {b"\x00": 0, b"\xff\xfe": 1}


def test_missing_final_newline_and_trailing_blank_lines_are_accepted():
    assert load_tiktoken_bpe(line(b"a", 0) + b"Yg== 1") == {b"a": 0, b"b": 1}
    assert load_tiktoken_bpe(line(b"a", 0) + line(b"b", 1) + b"\n\n") == {b"a": 0, b"b": 1}


def test_a_gap_in_the_ranks_is_accepted_because_p50k_base_has_one(data_dir):
    # Rank 50256 is missing from p50k_base.tiktoken: that id belongs to the special <|endoftext|>.
    p50k = load_tiktoken_bpe(data_dir / "p50k_base.tiktoken")
    assert 50256 not in set(p50k.values())
    assert max(p50k.values()) == 50280 and len(p50k) == 50280
    assert load_tiktoken_bpe(line(b"a", 0) + line(b"b", 5)) == {b"a": 0, b"b": 5}


@pytest.mark.parametrize("filename", TIKTOKEN_FILES)
def test_real_file_loads_exactly_as_tiktoken_loads_it(data_dir, filename):
    tiktoken_load = pytest.importorskip("tiktoken.load")
    ours = load_tiktoken_bpe(data_dir / filename)
    theirs = tiktoken_load.load_tiktoken_bpe(str(data_dir / filename))
    assert list(ours.items()) == list(theirs.items())  # same pairs, in the same (rank) order


# --------------------------------------------------------------------------- writing


def test_dump_then_load_gives_back_the_same_ranks(tmp_path):
    ranks = {b"b": 1, b"a": 0, b" the": 3, b"\x00\xff": 2}
    path = tmp_path / "out.tiktoken"
    dump_tiktoken_bpe(ranks, path)
    assert load_tiktoken_bpe(path) == ranks
    assert path.read_bytes() == line(b"a", 0) + line(b"b", 1) + line(b"\x00\xff", 2) + line(b" the", 3)


@pytest.mark.parametrize("filename", TIKTOKEN_FILES)
def test_dumping_a_real_vocabulary_reproduces_the_file_byte_for_byte(data_dir, tmp_path, filename):
    copy = tmp_path / filename
    dump_tiktoken_bpe(load_tiktoken_bpe(data_dir / filename), copy)
    assert copy.read_bytes() == (data_dir / filename).read_bytes()


def test_dump_replaces_an_existing_file_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "v.tiktoken"
    path.write_bytes(b"old contents")
    dump_tiktoken_bpe({b"x": 0}, path)
    assert path.read_bytes() == line(b"x", 0)
    assert os.listdir(tmp_path) == ["v.tiktoken"]


@pytest.mark.parametrize(
    "ranks, complaint",
    [
        ({b"a": 0, b"b": 0}, "rank 0 is used by both"),
        ({b"a": -1}, "not a non-negative integer"),
        ({b"a": "0"}, "not a non-negative integer"),
        ({"a": 0}, "not a bytes object"),
        ({}, "empty vocabulary"),
    ],
)
def test_dump_refuses_what_load_could_not_read_back_and_keeps_the_old_file(tmp_path, ranks, complaint):
    path = tmp_path / "v.tiktoken"
    path.write_bytes(line(b"keep", 0))
    with pytest.raises(ValueError, match=complaint):
        dump_tiktoken_bpe(ranks, path)
    assert path.read_bytes() == line(b"keep", 0)


def test_a_failed_atomic_write_keeps_the_old_file_and_removes_the_temporary(tmp_path, monkeypatch):
    path = tmp_path / "v.tiktoken"
    path.write_bytes(b"old")

    def failing_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        vocab_io.write_bytes_atomically(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["v.tiktoken"]


# --------------------------------------------------------------------------- damaged files


@pytest.mark.parametrize(
    "contents, message",
    [
        # Lenient base64 would skip the '!' and read b"b": only strict decoding catches it.
        (line(b"a", 0) + b"Y!g== 1\n", "line 2: invalid base64"),
        (line(b"a", 0) + b"YQ 1\n", "line 2: invalid base64"),  # missing padding
        (line(b"a", 0) + b"Yg==  1\n", "line 2: expected 'base64 rank'"),  # two spaces
        (line(b"a", 0) + b"Yg==\n", "line 2: expected 'base64 rank'"),
        (line(b"a", 0) + b"Yg== 1 extra\n", "line 2: expected 'base64 rank'"),
        (line(b"a", 0) + b"\n" + line(b"b", 1), "line 2: expected 'base64 rank'"),  # blank line inside
        (line(b"a", 0) + b" 1\n", "line 2: empty token field"),
        (line(b"a", 0) + line(b"b", "one"), "line 2: rank is not an integer"),
        (line(b"a", 0) + line(b"b", "1.0"), "line 2: rank is not an integer"),
        (line(b"a", 0) + line(b"b", "+1"), "line 2: rank is not an integer"),
        (line(b"a", 0) + b"Yg== 1\r", "line 2: rank is not an integer"),  # a lone CR (CRLF loads, as in tiktoken)
        (line(b"a", -1), "line 1: negative rank -1"),
        (line(b"a", 0) + line(b"b", 1) + line(b"c", 1), "line 3: duplicate rank 1 \\(first on line 2\\)"),
        (line(b"a", 0) + line(b"b", 5) + line(b"c", 3), "line 3: rank 3 after rank 5"),
        (line(b"a", 0) + line(b"b", 1) + line(b"a", 2), "line 3: duplicate token b'a' \\(first on line 1\\)"),
        (b"", "empty vocabulary file"),
        (b"\n\n", "empty vocabulary file"),
    ],
)
def test_each_kind_of_damage_is_a_value_error_naming_the_line(contents, message):
    with pytest.raises(ValueError, match=message):
        load_tiktoken_bpe(contents)


def test_errors_name_the_file_when_reading_a_path(tmp_path):
    path = tmp_path / "broken.tiktoken"
    path.write_bytes(line(b"a", 0) + b"not base64! 1\n")
    with pytest.raises(ValueError) as caught:
        load_tiktoken_bpe(path)
    assert str(caught.value).startswith(f"{path}, line 2: ")


def test_require_dense_turns_a_gap_into_an_error():
    contents = line(b"a", 0) + line(b"b", 3)
    with pytest.raises(ValueError, match="line 2: rank 3 where 1 was expected"):
        load_tiktoken_bpe(contents, require_dense=True)


def test_cutting_a_real_file_inside_its_last_line_is_always_detected(data_dir):
    contents = (data_dir / "cl100k_base.tiktoken").read_bytes()
    last_line_start = contents.rindex(b"\n", 0, len(contents) - 1) + 1
    last_line = contents[last_line_start:]
    assert last_line == b"IENvbnZleW9y 100255\n"  # " Conveyor"
    # Each cut inside the line leaves invalid base64, a missing rank, or a rank that is smaller
    # than the previous line's (100255 cut to 10025 is a duplicate rank): never a valid file.
    for cut in range(1, len(last_line) - 1):
        with pytest.raises(ValueError, match="line 100256: "):
            load_tiktoken_bpe(contents[: last_line_start + cut])


def test_cutting_a_real_file_at_a_line_boundary_gives_a_smaller_valid_vocabulary(data_dir):
    # The format cannot tell this from a real, smaller vocabulary: only a pinned sha256 can (the
    # registry checks one for every named encoding; see test_registry).
    contents = (data_dir / "cl100k_base.tiktoken").read_bytes()
    first_1000_lines = b"".join(contents.splitlines(keepends=True)[:1000])
    assert len(load_tiktoken_bpe(first_1000_lines)) == 1000


# --------------------------------------------------------------------------- GPT-2 "data gym" files


def test_data_gym_files_give_exactly_the_r50k_base_vocabulary(data_dir):
    gpt2 = data_gym_to_mergeable_bpe_ranks(data_dir / "vocab.bpe", data_dir / "encoder.json")
    assert gpt2 == load_tiktoken_bpe(data_dir / "r50k_base.tiktoken")


def test_data_gym_single_bytes_come_printable_first():
    # '!' (0x21) is the first printable byte, so it gets rank 0; byte 0x00 is not printable and
    # comes after all 188 printable bytes; the space is treated as non-printable.
    ranks = data_gym_to_mergeable_bpe_ranks(b"#version: 0.2\n", json.dumps(_single_byte_encoder()).encode())
    assert ranks[b"!"] == 0
    assert ranks[b"\x00"] == 188
    assert ranks[b" "] == 188 + 32
    assert len(ranks) == 256


def _single_byte_encoder() -> dict[str, int]:
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    others = [b for b in range(256) if b not in printable]
    encoder = {chr(b): rank for rank, b in enumerate(printable)}
    encoder.update({chr(256 + k): len(printable) + k for k in range(len(others))})
    return encoder


def test_data_gym_merges_are_ranked_after_the_bytes_and_text_uses_the_byte_mapping():
    encoder = _single_byte_encoder()
    encoder.update({"\u0120t": 256, "\u0120th": 257, "<|endoftext|>": 258})  # Ġ (U+0120) is the space
    merges = b"#version: 0.2\n\xc4\xa0 t\n\xc4\xa0t h\n"
    ranks = data_gym_to_mergeable_bpe_ranks(merges, json.dumps(encoder).encode())
    assert ranks[b" t"] == 256 and ranks[b" th"] == 257
    assert b"<|endoftext|>" not in ranks  # a special token, not a mergeable one


@pytest.fixture
def gpt2_files(data_dir, tmp_path):
    """Writable copies of GPT-2's vocab.bpe and encoder.json, to damage."""
    vocab_bpe = shutil.copy(data_dir / "vocab.bpe", tmp_path / "vocab.bpe")
    encoder_json = shutil.copy(data_dir / "encoder.json", tmp_path / "encoder.json")
    return Path(vocab_bpe), Path(encoder_json)


def test_clobber_one_byte_tokens_takes_the_byte_ranks_from_encoder_json_as_tiktoken_does(gpt2_files):
    """A vocabulary numbering two single bytes the other way round than GPT-2: refused as inconsistent by
    default, taken with clobber_one_byte_tokens=True — by tiktoken and bytebpe alike, to the same ranks."""
    tiktoken_load = pytest.importorskip("tiktoken.load")
    vocab_bpe, encoder_json = gpt2_files
    encoder = json.loads(encoder_json.read_text())
    encoder["!"], encoder["#"] = encoder["#"], encoder["!"]
    encoder_json.write_text(json.dumps(encoder))
    with pytest.raises(ValueError, match="'!' has id 2, but the merges rank it 0"):
        data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json)
    with pytest.raises(AssertionError):
        tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    ours = data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json, clobber_one_byte_tokens=True)
    assert ours == tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json),
                                                                 clobber_one_byte_tokens=True)
    assert (ours[b"!"], ours[b"#"]) == (2, 0)


def test_encoder_json_with_a_different_id_is_rejected_naming_the_token(gpt2_files):
    vocab_bpe, encoder_json = gpt2_files
    encoder = json.loads(encoder_json.read_text())
    encoder["\u0120the"] += 1
    encoder_json.write_text(json.dumps(encoder))
    with pytest.raises(ValueError, match="'Ġthe' has id 263, but the merges rank it 262"):
        data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json)


def test_encoder_json_missing_a_token_is_rejected(gpt2_files):
    vocab_bpe, encoder_json = gpt2_files
    encoder = json.loads(encoder_json.read_text())
    del encoder["\u0120gazed"]
    encoder_json.write_text(json.dumps(encoder))
    with pytest.raises(ValueError, match="token b' gazed' \\(rank 50255\\) from the merges is missing"):
        data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json)


def test_a_lost_merge_line_is_caught_by_the_cross_check(gpt2_files):
    vocab_bpe, encoder_json = gpt2_files
    lines = vocab_bpe.read_bytes().split(b"\n")
    del lines[-2]  # the last merge (the file ends with a newline)
    vocab_bpe.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="is not produced by the merges"):
        data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json)


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("\u0120 t x", "line 3: expected 'first second'"),
        ("\u0120t", "line 3: expected 'first second'"),
        ("\u0120 \u2603", "line 3: character '☃'"),  # not one of GPT-2's 256 byte characters
        ("zq x", "line 3: 'zq' is merged before it is a token"),
        ("\u0120 t", "line 3: merge 'Ġ t' repeats token b' t'"),
    ],
)
def test_malformed_merge_lines_are_rejected_with_their_line_number(bad_line, message, tmp_path):
    merges = f"#version: 0.2\n\u0120 t\n{bad_line}\n".encode()
    with pytest.raises(ValueError, match=message):
        data_gym_to_mergeable_bpe_ranks(merges, json.dumps(_single_byte_encoder()).encode())


# --------------------------------------------------------------------------- hashes


def test_sha256_of_matches_hashlib_and_the_pinned_value(data_dir):
    path = data_dir / "r50k_base.tiktoken"
    assert sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert sha256_of(path) == "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"


def test_verify_sha256_accepts_the_right_hash_and_names_file_and_both_hashes_otherwise(tmp_path):
    path = tmp_path / "f.tiktoken"
    path.write_bytes(b"abc")
    actual = hashlib.sha256(b"abc").hexdigest()
    verify_sha256(path, actual)
    verify_sha256(path, actual.upper())
    wrong = "0" * 64
    with pytest.raises(VocabularyHashError) as caught:
        verify_sha256(path, wrong)
    message = str(caught.value)
    assert str(path) in message and wrong in message and actual in message
    assert isinstance(caught.value, ValueError)


def test_the_empty_byte_string_is_written_and_read_as_tiktoken_reads_it(tmp_path):
    # Whisper's multilingual vocabulary has it (rank 50256), written "=", which tiktoken's reader decodes to b"".
    path = tmp_path / "v.tiktoken"
    dump_tiktoken_bpe({b"a": 0, b"": 1}, path)
    assert path.read_bytes() == b"YQ== 0\n= 1\n"
    assert load_tiktoken_bpe(path) == {b"a": 0, b"": 1}
