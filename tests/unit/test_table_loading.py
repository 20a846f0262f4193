"""Fast loading: the compiled `.tiktoken` parser, the compiled reading of a Tekken file's vocabulary, and the
converted-vocabulary cache.

The compiled parser is only a fast path: for any file it either builds exactly the table the Python reader
(`load_tiktoken_bpe`) would, or declines (None) and leaves the verdict — and the line-numbered error — to
that reader. The registry builds named encodings from it without ever making a ranks dict.
"""
from __future__ import annotations

import base64
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _core, file_formats, registry
from bytebpe.file_formats import TokenizerFileError
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


# ==== Tekken files: the "vocab" array read in C ======================================================
#
# `file_formats.recognise` leaves a Tekken file's "vocab" array unparsed (json parses the rest) and the
# loader reads it in C (_json_scan.pxi) when it is plain, else with json. Either way the verdict must be the
# one of parsing the whole file with json: the same table, special tokens and size, or an error of the same
# kind. `whole_file_json` forces that reference path.


@pytest.fixture
def whole_file_json(monkeypatch):
    def load(path):
        with monkeypatch.context() as patched:
            patched.setattr(file_formats, "json_member_span", lambda contents, key: None)
            return verdict(path)
    return load


def verdict(path) -> tuple:
    """What loading `path` gives: ("ok", ranks, special tokens, n_vocab) or ("error", message). For JSON that
    does not parse, only that: the parse that finds it (the whole file's or the vocabulary's) says where."""
    try:
        enc = bytebpe.load_tokenizer(path)
    except TokenizerFileError as error:
        message = str(error)
        assert message.startswith(f"{path}: ")
        return ("error", "not valid JSON" if "not valid JSON, or truncated" in message else message)
    return ("ok", enc._table.to_dict(), enc._special_tokens, enc.n_vocab)


def tiny_tekken_text(indent: int | None = 2, extra: str = "") -> str:
    tokens = [bytes([b]) for b in range(256)] + [b"th", b"he", b"the", b" t", b"\xc3\xa6", b"\xff\xfe"]
    document = {
        "config": {"pattern": r"\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+", "num_vocab_tokens": len(tokens),
                   "default_vocab_size": 25 + len(tokens) - 1, "default_num_special_tokens": 25, "version": "v3"},
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(token).decode(),
                   "token_str": token.decode("utf-8", "replace") if i % 3 else None}
                  for i, token in enumerate(tokens)],
    }
    return json.dumps(document, indent=indent) + extra


def test_the_real_tekken_files_are_read_in_c_exactly_as_json_reads_them(whole_file_json):
    mistral_common = pytest.importorskip("mistral_common")
    for name in ("tekken_240718.json", "tekken_240911.json"):
        path = Path(mistral_common.__file__).parent / "data" / name
        found = file_formats.recognise(path.read_bytes())
        assert found.kind == "tekken" and found.unparsed_vocab is not None and "vocab" not in found.document
        assert verdict(path) == whole_file_json(path)


VOCAB_EDITS = [
    ('"token_bytes": "//4="', '"token_bytes": "//4=", "token_str": "x", "token_str": null'),  # a key twice
    ('"token_bytes": "//4="', '"token_bytes": "\\/\\/4="'),        # escaped slashes: json decodes them
    ('"token_bytes": "//4="', '"token_bytes": "// 4="'),           # not base64
    ('"token_bytes": "//4="', '"token_bytes": "//4=", "is_control": false'),   # another member
    ('"rank": 7,', '"rank": 7.0,'),
    ('"rank": 7,', '"rank": 07,'),
    ('"rank": 7,', '"rank": -7,'),
    ('"rank": 7,', '"rank": 7e0,'),
    ('"rank": 7,', '"rank": 8,'),
    ('"rank": 7,', '"rank": 99999999999,'),
    ('"rank": 7,', ''),                                             # no rank
    ('"token_str": null', '"token_str": 5'),
    ('"token_str": null', '"token_str": "\\u00e6\\ud800 \\" \\\\ \\/ \\b\\f\\n\\r\\t"'),   # every escape
    ('"token_str": null', '"token_str": "\\x"'),                   # not an escape
    ('"token_str": null', '"token_str": "\u00e6\u4e2d\U0001F600"'),   # UTF-8 of 2, 3 and 4 bytes
    ('"token_str": null', '"token_str": "\x01"'),                  # a control character
    ('"token_str": null', '"token_str": null,'),                   # a trailing comma
    ('"rank": 0', '"rank" : 0'),
    ('}\n  ]', '},\n  ]'),                                          # a trailing comma after the last entry
    ('"vocab": [', '"vocab": [{"rank": 0, "token_bytes": "AA=="}, '),   # one entry too many at the front
    ('"config": {', '"vocab": [], "config": {'),                     # "vocab" twice
    ('"config": {', '"config": {"vocab": 3, '),                     # a "vocab" inside the config
    ('"config"', '"conf\\u0069g"'),                                 # an escaped member name
    ('"vocab"', '"voc\\u0061b"'),
]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize(("old", "new"), VOCAB_EDITS)
def test_an_edited_tekken_file_is_read_as_json_reads_it(tmp_path, whole_file_json, indent, old, new):
    text = tiny_tekken_text(indent)
    if indent is None:
        old, new = re.sub(r"\n *", "", old), re.sub(r"\n *", "", new)
    assert old in text, old
    path = tmp_path / "tekken.json"
    path.write_bytes(text.replace(old, new, 1).encode("utf-8", "surrogatepass"))
    assert verdict(path) == whole_file_json(path)


@pytest.mark.parametrize("contents", [b"\xef\xbb\xbf", b"  \n", b"[", b"{}", b"\xff"])
def test_bytes_around_a_tekken_file_are_read_as_json_reads_them(tmp_path, whole_file_json, contents):
    for text in (contents + tiny_tekken_text().encode(), tiny_tekken_text().encode() + contents):
        path = tmp_path / "tekken.json"
        path.write_bytes(text)
        assert verdict(path) == whole_file_json(path)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=6), st.integers(0, 10**6), st.booleans(), st.sampled_from([None, 1]))
def test_a_mangled_tekken_file_is_never_read_differently_from_json(noise, where, replace, indent):
    # (no fixture: hypothesis runs the body many times per test)
    text = tiny_tekken_text(indent).encode()
    vocab_at = text.index(b'"vocab"')
    position = vocab_at + where % (len(text) - vocab_at)   # mostly inside the array
    mangled = text[:position] + noise + text[position + (len(noise) if replace else 0):]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tekken.json"
        path.write_bytes(mangled)
        fast = verdict(path)
        original = file_formats.json_member_span
        file_formats.json_member_span = lambda contents, key: None
        try:
            reference = verdict(path)
        finally:
            file_formats.json_member_span = original
    assert fast == reference


@pytest.mark.parametrize("indent", [None, 0, 2, "\t"])
def test_plain_tekken_vocabularies_take_the_compiled_path(indent):
    """Formatting, member order, a null or escaped token_str, entries past the kept ones: still plain."""
    document = json.loads(tiny_tekken_text())
    document["vocab"][5] = {"token_str": "\u00e6\\\"", "token_bytes": document["vocab"][5]["token_bytes"], "rank": 5}
    text = json.dumps(document, indent=indent, ensure_ascii=indent is None).encode()
    found = file_formats.recognise(text)
    assert found.kind == "tekken" and found.unparsed_vocab is not None
    lines = _core.tekken_vocab_lines(found.unparsed_vocab, 25, 261)
    assert lines == b"".join(b"%s %d\n" % (entry["token_bytes"].encode(), 25 + i)
                             for i, entry in enumerate(document["vocab"][:261]))
    assert _core.tekken_vocab_lines(found.unparsed_vocab, 25, 263) is None     # fewer entries than asked
