"""Reading a tokenizer.json's merges in C (`_load.cut_merges`, `_load.pair_merge_table`).

The reader is a fast path beside json.loads, never a second opinion: for any text it either finds the model's
merges and reads each exactly as json.loads reads it, the rest of the text then being json.loads's to parse
with [] in their place, or declines (None) and json.loads reads the whole text. So a file is never read
differently, and a broken one gets json's error.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _load, file_formats
from bytebpe.file_formats import TokenizerJsonError, cut_merges
from tests.real_files import locate, real_files


def pairs_as_json_reads_them(merges: list) -> list[tuple[str, str] | None]:
    """Each merge's two tokens as HF reads them ("a b" split at its one space), None where it is not two."""
    pairs = []
    for merge in merges:
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, list) and len(merge) == 2 and all(isinstance(part, str) for part in merge):
            parts = merge
        else:
            parts = []
        pairs.append((parts[0], parts[1]) if len(parts) == 2 else None)
    return pairs


def read_in_c(text: str) -> tuple[dict, list[tuple[str, str] | None]] | None:
    """(json.loads of the text with the merges cut out, the merges as the C reader read them), or None."""
    found = cut_merges(text)
    if found is None:
        return None
    rest, cut = found
    strings = cut.strings
    return json.loads(rest), [strings.pair(index) for index in range(len(strings))]


def assert_read_as_json_reads_it(text: str) -> None:
    try:
        expected = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        expected = None
    try:
        found = read_in_c(text)
    except json.JSONDecodeError:
        assert expected is None, "json.loads reads the whole text but not the text with its merges cut out"
        return
    if found is None:
        return      # declined: json.loads reads the whole text, whatever it is
    assert expected is not None, "the C reader accepted a text that json.loads refuses"
    spec, pairs = found
    merges = expected["model"]["merges"]
    assert spec["model"].pop("merges") == []
    del expected["model"]["merges"]
    assert spec == expected
    assert pairs == pairs_as_json_reads_them(merges)


def tokenizer_json(merges: list, **dumps) -> str:
    return json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None,
                       "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": merges,
                                 "byte_fallback": False},
                       "decoder": None}, **dumps)


REAL_JSON = [entry for entry in real_files() if entry.format == "tokenizer.json"]


@pytest.mark.parametrize("entry", REAL_JSON, ids=str)
def test_every_real_files_merges_are_read_in_c_as_json_reads_them(entry):
    path = locate(entry)
    if path is None:
        pytest.skip("not here (tools/fetch_real_files.py)")
    text = path.read_text(encoding="utf-8")
    spec = json.loads(text)
    if not isinstance(spec.get("model"), dict) or "merges" not in spec["model"]:
        assert read_in_c(text) is None
        return
    assert read_in_c(text) is not None, "a real file's merges should take the compiled path"
    assert_read_as_json_reads_it(text)


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("indent", [None, 2])
def test_both_forms_escapes_and_surrogates_are_read_as_json_reads_them(ensure_ascii, indent):
    merges = ["a b", ["a", "b"], "Ġ Ġt", ["x y", "z"], "\u0120\u010a \"q\\", "😀 \ud800", ["\udc00\ud83d", "\ude00"],
              "no-space", "two  spaces", " lead", "trail ", "", ["", ""], "\t \n"]
    text = tokenizer_json(merges, ensure_ascii=ensure_ascii, indent=indent)
    assert read_in_c(text) is not None
    assert_read_as_json_reads_it(text)


@pytest.mark.parametrize("text", [
    '{"model": {"merges": ["a b"], "merges": []}}',         # given twice: json.loads takes the last
    '{"model": {"merges": []}, "model": {"merges": ["a b"]}}',
    '{"mod\\u0065l": {"merges": ["a b"]}}',                 # a name json.loads reads as "model"
    '{"model": {"m\\u0065rges": ["a b"]}}',
    '{"model": [{"merges": ["a b"]}]}',
    '{"model": {"merges": "a b"}}',
    '{"model": {"merges": ["a b", 3]}}',
    '{"model": {"merges": ["a\x01b"]}}',                    # a raw control character: json.loads refuses it
    '{"model": {"merges": ["a\\qb"]}}',
    '{"model": {"merges": ["a \\u12"]}}',
    '{"model": {"merges": [["a"]]}}',                       # HF's error for these is json's reading's
    '{"model": {"merges": [["a", "b", "c"]]}}',
    '{"model": {"merges": [[1, 2]]}}',
    '[{"model": {"merges": ["a b"]}}]',
])
def test_what_is_not_plainly_one_array_of_merges_is_left_to_json(text):
    assert read_in_c(text) is None


def test_a_text_broken_outside_the_merges_is_json_loadss_to_refuse():
    text = '{"model": {"vocab": {}, "merges": ["a b"]'
    with pytest.raises(json.JSONDecodeError):
        read_in_c(text)
    with pytest.raises(TokenizerJsonError, match="not valid JSON: Expecting ',' delimiter: line 1 column 42"):
        bytebpe.from_tokenizer_json(text)     # json's error about the whole text


@pytest.mark.parametrize("text", [
    '{"x": {"merges": ["a b"]}, "model": {"merges": ["c d"], "vocab": {"merges": 1}}}',
    ' \n{"model" : { "merges" : [ "a b" , [ "c" , "d" ] ] } }\n',
    '{"model": {"merges": []}}',
])
def test_only_the_models_own_merges_are_cut(text):
    assert read_in_c(text) is not None
    assert_read_as_json_reads_it(text)


json_strings = st.text(st.characters(codec="utf-8") | st.sampled_from("\"\\ \n\u0120\ud800\udfff"), max_size=6)
merge_lists = st.lists(
    st.one_of(json_strings.map(lambda s: s.replace(" ", "")).flatmap(
        lambda left: json_strings.map(lambda right: f"{left} {right.replace(' ', '')}")),
        st.lists(json_strings, min_size=2, max_size=2), json_strings), max_size=12)


@settings(max_examples=300, deadline=None)
@given(merges=merge_lists, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 1]))
def test_generated_merges_are_read_as_json_reads_them(merges, ensure_ascii, indent):
    assert_read_as_json_reads_it(tokenizer_json(merges, ensure_ascii=ensure_ascii, indent=indent))


@settings(max_examples=400, deadline=None)
@given(noise=st.text(alphabet='{}[]",:\\ u0a\n', min_size=1, max_size=3), where=st.floats(0, 1),
       replace=st.booleans())
def test_a_mangled_file_is_never_read_differently_from_json(noise, where, replace):
    text = tokenizer_json(["a b", ["a", "b"], "ab b"], indent=1)
    at = int(where * len(text))
    assert_read_as_json_reads_it(text[:at] + noise + text[at + (len(noise) if replace else 0):])


def test_a_merge_of_a_token_the_vocabulary_lacks_is_named():
    text = tokenizer_json(["a b", "a c"]).replace('"decoder": null', '"decoder": null, "pre_tokenizer": '
                                                   '{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": '
                                                   'false, "use_regex": true}')
    spec = json.loads(text)
    spec["model"]["vocab"] = {chr(c): i for i, c in enumerate(range(33, 127))} | {"ab": 200}
    with pytest.raises(TokenizerJsonError, match=r"merge 1 a c: 'c' is not in the vocabulary"):
        bytebpe.from_tokenizer_json(json.dumps(spec).replace('"c": 66, ', ""))


def test_the_pairs_of_a_list_and_of_the_text_are_the_same_reading():
    merges = ["a b", ["c d", "e"], "x", "y  z"]
    from_list = _load.MergeStrings.of_list(merges)
    assert [from_list.pair(index) for index in range(len(from_list))] == pairs_as_json_reads_them(merges)
    assert [from_list.merge(index) for index in range(len(from_list))] == merges
    _, cut = cut_merges(tokenizer_json(merges))
    assert [cut.strings.merge(index) for index in range(len(cut.strings))] == merges
    assert cut.as_list() == merges
    cut.strings.release()                   # (a loader frees them once the table is made)
    assert len(cut.strings) == 0 and cut.as_list() == merges
    with pytest.raises(IndexError):
        cut.strings.pair(0)
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(from_list)


def test_every_loader_reads_the_merges_in_c_and_gives_the_same_tokenizer(tmp_path):
    import bytebpe.hf

    alphabet = [chr(c) for c in range(33, 127)]
    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False,
                                                "trim_offsets": False, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "vocab": {char: i for i, char in enumerate(alphabet)} | {"ab": 94, "abc": 95},
                      "merges": [["a", "b"], "ab c"]}}
    text = json.dumps(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    assert file_formats.recognise(text.encode()).cut is not None
    for enc in (bytebpe.from_tokenizer_json(text), bytebpe.from_tokenizer_json(path), bytebpe.load_tokenizer(path)):
        assert enc.encode("abcab") == [95, 94]
    tok = bytebpe.hf.Tokenizer.from_str(text)
    assert tok.encode("abcab").ids == [95, 94]
    assert tok._pipeline._cut is not None          # the merges are not parsed ...
    assert json.loads(tok.to_str())["model"]["merges"] == [["a", "b"], "ab c"]     # ... until asked for
    assert tok._pipeline._cut is None
