"""Fast loading: the compiled `.tiktoken` parser and the converted-vocabulary cache.

The compiled parser is only a fast path: for any file it either builds exactly the table the Python reader
(`load_tiktoken_bpe`) would, or declines (None) and leaves the verdict — and the line-numbered error — to
that reader. The registry builds named encodings from it without ever making a ranks dict.
"""
from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _core, registry
from bytebpe.vocab_sources import load_tiktoken_bpe
from bytebpe.vocab_io import dump_tiktoken_bpe_bytes


def python_reader_verdict(contents: bytes) -> dict[bytes, int] | None:
    try:
        return load_tiktoken_bpe(contents)
    except ValueError:
        return None


@pytest.mark.parametrize("filename", ["r50k_base.tiktoken", "p50k_base.tiktoken", "cl100k_base.tiktoken",
                                      "o200k_base.tiktoken"])
def test_the_compiled_parser_reads_every_real_file_exactly(filename, data_dir):
    contents = (data_dir / filename).read_bytes()
    table = _core.MergeTable.from_tiktoken(contents)
    assert table is not None
    assert table.to_dict() == load_tiktoken_bpe(contents)


VALID = b"YQ== 0\nYg== 1\nYWI= 2\n"


@pytest.mark.parametrize("contents", [
    b"",                        # empty
    b"YQ== 0\nYQ== 1\n",        # duplicate token
    b"YQ== 1\nYg== 0\n",        # ranks out of order
    b"YQ== 0\nYg== 0\n",        # repeated rank
    b"YQ== -1\n",               # negative rank
    b"YQ== +1\n",               # signed rank
    b"YQ== 0\r\nYg== 1\r\n",    # CRLF line ends
    b"YQ==  0\n",               # two spaces
    b"YQ== 0 x\n",              # three fields
    b"Y*== 0\n",                # not base64
    b"YQ= 0\n",                 # bad padding
    b"=QYA 0\n",                # padding first
    b" 0\n",                    # empty token
    b"YQ== 0\n\nYg== 1\n",      # blank line inside
    b"YQ== 99999999999\n",      # rank beyond any id
    b"YQ== 2000000000\n",       # a gap that would need gigabytes of empty slots
])
def test_the_compiled_parser_declines_what_is_not_plainly_valid(contents):
    assert _core.MergeTable.from_tiktoken(contents) is None


def test_gaps_and_a_missing_final_newline_are_read_like_the_python_reader():
    for contents in (b"YQ== 0\nYg== 5\n", VALID.rstrip(b"\n"), VALID + b"\n\n"):
        assert _core.MergeTable.from_tiktoken(contents).to_dict() == load_tiktoken_bpe(contents)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12), st.integers(0, len(VALID) - 1), st.booleans())
def test_a_mangled_file_is_never_read_differently_from_the_python_reader(noise, position, replace):
    contents = VALID[:position] + noise + VALID[position + (len(noise) if replace else 0):]
    table = _core.MergeTable.from_tiktoken(contents)
    if table is not None:
        assert table.to_dict() == python_reader_verdict(contents)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=20), st.just(0), min_size=1, max_size=40))
def test_any_written_vocabulary_is_read_back_by_the_compiled_parser(tokens):
    ranks = {token: rank for rank, token in enumerate(tokens)}
    table = _core.MergeTable.from_tiktoken(dump_tiktoken_bpe_bytes(ranks))
    assert table is not None and table.to_dict() == ranks


def test_named_encodings_load_without_a_ranks_dict_until_asked(data_dir):
    registry._clear_caches()
    enc = bytebpe.get_encoding("cl100k_base")
    assert not enc._table.ranks_built
    expected = load_tiktoken_bpe(data_dir / "cl100k_base.tiktoken")
    assert dict(enc.mergeable_ranks) == expected
    assert enc._table.ranks_built and enc._mergeable_ranks is enc._table.ranks()
    # o200k_base and o200k_harmony share one table, and so one dict.
    assert bytebpe.get_encoding("o200k_base")._table is bytebpe.get_encoding("o200k_harmony")._table


def test_gpt2_is_converted_once_into_the_cache_and_a_damaged_copy_is_rebuilt(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(data_dir))     # GPT-2's own files, not the bundled vocabulary
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path))
    registry._clear_caches()
    expected = bytebpe.get_encoding("gpt2").encode("hello world, again")
    converted = list(tmp_path.glob("vocab.bpe.*.tiktoken"))
    assert len(converted) == 1 and converted[0].with_name(converted[0].name + ".sha256").is_file()

    # Swap two tokens' ranks: still a well-formed file, but not the one recorded, so it must not be used.
    lines = converted[0].read_bytes().split(b"\n")
    lines[300], lines[301] = lines[301].split(b" ")[0] + b" 300", lines[300].split(b" ")[0] + b" 301"
    converted[0].write_bytes(b"\n".join(lines))
    registry._clear_caches()
    assert bytebpe.get_encoding("gpt2").encode("hello world, again") == expected
    assert load_tiktoken_bpe(converted[0]) == registry.ranks_for("gpt2")     # rebuilt


def test_a_read_only_cache_only_costs_the_conversion(data_dir, tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(blocked))
    registry._clear_caches()
    assert bytebpe.get_encoding("gpt2").decode(bytebpe.get_encoding("gpt2").encode("still works")) == "still works"


def test_base64_of_every_byte_value_decodes():
    ranks = {bytes([b]): b for b in range(256)} | {bytes(range(256)): 256}
    contents = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items())
    assert _core.MergeTable.from_tiktoken(contents).to_dict() == ranks
