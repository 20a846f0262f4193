"""The CHAR_WORDS scanner (_char_words.h) cuts a character-level model's text where HF's BPE would see its
words and unknown characters: runs of known characters, cut before the mark as its rule says, and each byte
of an unknown character a piece of its own. Compared here with the rule written plainly in Python; the ids
it leads to are compared with HF's in tests/exactness/test_hf_parts.py and test_real_files.py."""
from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe._pretokenize import PatternKind, Scanner
from bytebpe.hf_import import from_tokenizer_json

MARK = "\u2581"
KNOWN = MARK + "abcdeé日😀 ."
ALPHABET = KNOWN + "xyzΩ語\n\t😂" + "\u0301"
RULES = ["none", "after_word", "every"]


def reference(text: str, known: str, mark: str, rule: str) -> list[bytes]:
    """The pieces as bytes: runs of known characters, cut before `mark` by `rule`; each byte of any other
    character alone."""
    pieces: list[bytes] = []
    run = ""
    for char in text:
        if char not in known:
            if run:
                pieces.append(run.encode())
                run = ""
            pieces += [bytes([byte]) for byte in char.encode()]
            continue
        if run and char == mark and (rule == "every" or (rule == "after_word" and run[-1] != mark)):
            pieces.append(run.encode())
            run = ""
        run += char
    if run:
        pieces.append(run.encode())
    return pieces


def pieces(scanner: Scanner, text: str) -> list[bytes]:
    """The scanner's pieces of `text`, as bytes (its pieces may cut a character: it gives their ends)."""
    utf8 = text.encode()
    ends, _ = scanner.pieces_seen(utf8, 0, len(utf8), len(utf8) + 1)
    return [utf8[start:end] for start, end in zip([0, *ends], ends)]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("text,expected", [
    ("▁hello▁world", {"none": ["▁hello▁world"], "after_word": ["▁hello", "▁world"],
                     "every": ["▁hello", "▁world"]}),
    ("a▁▁b▁", {"none": ["a▁▁b▁"], "after_word": ["a", "▁▁b", "▁"], "every": ["a", "▁", "▁b", "▁"]}),
    ("▁▁", {"none": ["▁▁"], "after_word": ["▁▁"], "every": ["▁", "▁"]}),
])
def test_runs_are_cut_before_the_mark_as_the_rule_says(rule, text, expected):
    known = "▁abhelowrd"
    assert pieces(Scanner.char_words(known, MARK, rule), text) == [piece.encode() for piece in expected[rule]]


def test_each_byte_of_an_unknown_character_is_a_piece_of_its_own():
    scanner = Scanner.char_words("ab" + MARK, MARK, "after_word")
    assert pieces(scanner, "a\nΩb😂") == [b"a", b"\n", b"\xce", b"\xa9", b"b", b"\xf0", b"\x9f", b"\x98", b"\x82"]
    with pytest.raises(TypeError, match="not text: pieces_seen gives where they end"):
        scanner.split("a")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=60), st.sampled_from(RULES))
def test_the_scanner_equals_the_rule_on_generated_text(text, rule):
    assert pieces(Scanner.char_words(KNOWN, MARK, rule), text) == reference(text, KNOWN, MARK, rule)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=40), st.sampled_from(RULES), st.data())
def test_a_prefix_beyond_what_a_piece_looked_at_cuts_it_alike(text, rule, data):
    """`pieces_seen`'s contract, which the token budgets rely on: a prefix longer than every byte the first
    pieces looked at cuts those pieces as the whole text does."""
    scanner = Scanner.char_words(KNOWN, MARK, rule)
    utf8 = text.encode()
    ends, seen = scanner.pieces_seen(utf8, 0, len(utf8), 1000)
    assert ends[-1] == len(utf8) and all(start < end for start, end in zip([0] + ends, ends))
    k = data.draw(st.integers(0, len(ends) - 1))
    looked_at = max(seen[:k + 1])
    for cut in range(looked_at + 1, len(utf8) + 1):
        prefix_ends, _ = scanner.pieces_seen(utf8, 0, cut, 1000)
        assert prefix_ends[:k + 1] == ends[:k + 1], (cut, k)


def test_a_mark_that_is_ascii_and_characters_beyond_the_bmp():
    scanner = Scanner.char_words("_ab😀", "_", "every")
    assert pieces(scanner, "a_b__😀") == [piece.encode() for piece in ["a", "_b", "_", "_😀"]]


def test_it_pickles_and_says_what_it_is():
    scanner = Scanner.char_words(KNOWN, MARK, "every")
    copy = pickle.loads(pickle.dumps(scanner))
    assert copy.kind == PatternKind.CHAR_WORDS and copy.char_words_args == (KNOWN, MARK, "every")
    assert pieces(copy, "ab▁▁c") == pieces(scanner, "ab▁▁c") == [b"ab", "▁".encode(), "▁c".encode()]
    assert repr(scanner) == f"Scanner.char_words(<{len(KNOWN)} characters>, '▁', 'every')"


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="mark_rule must be one of none, after_word, every"):
        Scanner.char_words("ab", MARK, "sometimes")
    with pytest.raises(ValueError, match="the mark must be one character"):
        Scanner.char_words("ab", "▁▁", "none")
    with pytest.raises(ValueError, match="made by Scanner.char_words"):
        Scanner(PatternKind.CHAR_WORDS)


def _llama_style_file() -> str:
    """A small SentencePiece-style tokenizer.json of Llama 2's shape: byte fallback, Prepend and Replace."""
    vocab = {"<unk>": 0, **{f"<0x{byte:02X}>": 1 + byte for byte in range(256)}}
    for token in ["▁", "a", "b", "c", "é", "日", "▁a", "ab", "▁ab", "bc", "▁▁"]:
        vocab[token] = len(vocab)
    merges = [["▁", "a"], ["a", "b"], ["▁a", "b"], ["b", "c"], ["▁", "▁"]]
    return json.dumps({
        "version": "1.0", "added_tokens": [], "truncation": None, "padding": None, "post_processor": None,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": merges}})


def test_a_sentencepiece_style_file_encodes_through_the_scanner_as_hf_does():
    """The scanner's pieces through the core, whole texts and batches on threads (the sanitizer run's
    case for _char_words.h), against HF."""
    tokenizers = pytest.importorskip("tokenizers")
    text_file = _llama_style_file()
    enc = from_tokenizer_json(text_file)
    hf = tokenizers.Tokenizer.from_str(text_file)
    assert enc._pretokenize.kind == PatternKind.CHAR_WORDS
    texts = ["ab abc", "  a\nb\tc日x😂", "é" * 300 + " ab" * 500, "", "▁", "\n" * 70, "Ωa b ab  c"] * 20
    expected = [hf.encode(text, add_special_tokens=False).ids for text in texts]
    assert [enc.encode(text) for text in texts] == expected
    assert enc.encode_batch(texts, num_threads=2) == expected
    flat, offsets = enc.encode_batch_to_numpy(texts, num_threads=2)
    assert [flat[start:end].tolist() for start, end in zip(offsets[:-1], offsets[1:])] == expected
    assert [enc.decode(ids) for ids in expected] == [hf.decode(ids) for ids in expected]


def test_offsets_through_a_normalizer_that_moves_characters_are_refused_naming_it():
    enc = from_tokenizer_json(_llama_style_file())
    with pytest.raises(ValueError, match="not supported yet: the normalizer Prepend moves characters"):
        enc.encode_with_offsets("ab c")
