"""`bytebpe.train` learns exactly the merges the tie rule predicts, equal to the pure-Python reference
trainer, to rustbpe and bpeasy, and gives an Encoding that round-trips and encodes as tiktoken would.

The tie rule: the highest count wins; among equal counts, the smallest (left id, right id).
"""
from __future__ import annotations

import collections
import gzip
import json
import warnings
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _train, readers
from bytebpe.readers import BadDocumentError
from bytebpe._reference import bpe_train
from bytebpe.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN
from bytebpe.training import EmptyCorpusWarning

from ..gil import ticks_during

# The seeds' toy corpus: each word is its own text, so with any of the known patterns it is one pre-token.
TOY_CORPUS = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3


def learned_tokens(enc: bytebpe.Encoding) -> list[bytes]:
    """The merged tokens in rank order (everything after the 256 single bytes)."""
    by_rank = sorted(enc.mergeable_ranks.items(), key=lambda item: item[1])
    return [token for token, _ in by_rank[256:]]


def ranks_from_merges(merges: list[tuple[int, int]]) -> dict[bytes, int]:
    """The mergeable ranks that `merges` define: 256 single bytes, then merge i as rank 256 + i."""
    tokens = [bytes([b]) for b in range(256)]
    for left, right in merges:
        tokens.append(tokens[left] + tokens[right])
    return {token: rank for rank, token in enumerate(tokens)}


def compiled_merges(piece_counts: dict[bytes, int], n_merges: int, long_word: int = 64,
                    **options) -> list[tuple[int, int]]:
    """The compiled trainer's merges; words of `long_word` symbols or more go through its occurrence index."""
    counts = _train.PieceCounts()
    counts.add_counts(piece_counts)
    trainer = _train.BPETrainer(counts, options.get("min_frequency", 1), options.get("max_token_length") or 0,
                                long_word)
    trainer.merge(n_merges)
    return trainer.merges


def regex_piece_counts(texts: list[str], pattern: str = CL100K_PATTERN) -> dict[bytes, int]:
    compiled = regex.compile(pattern)
    return dict(collections.Counter(piece.encode() for text in texts for piece in compiled.findall(text)))


# ==== the tie rule, by hand =====================================================================


def test_toy_corpus_gives_the_merges_the_tie_rule_predicts():
    # Worked by hand. Initial pair counts: es 9, st 9, we 8, lo 7, ow 7, ne 6, ew 6, ...
    #  1. es 9 ties st 9: (e, s) = (101, 115) < (115, 116)             -> "es"
    #  2. (es, t) 9                                                     -> "est"
    #  3. lo 7 ties ow 7 ("we" fell to 2 when "es" took newest's e): (108, 111) < (111, 119) -> "lo"
    #  4. (lo, w) 7                                                     -> "low"
    #  5. ne, ew, (w, est) all 6: (101, 119) is smallest               -> "ew"
    #  6. (n, ew) 6 ties (ew, est) 6: (110, 260) < (260, 257)          -> "new"
    #  7. (new, est) 6                                                  -> "newest"
    #  8. (d, est), (i, d), (w, i) all 3: (100, 257) is smallest       -> "dest"
    #  9. (i, dest) 3 ties (w, i) 3: (105, 263) < (119, 105)           -> "idest"
    # 10. (w, idest) 3                                                  -> "widest"
    # 11. (low, e) 2 ties (e, r) 2: (101, 114) < (259, 101)            -> "er"
    # 12. (low, er) 2                                                   -> "lower"; then no pair is left.
    expected = [b"es", b"est", b"lo", b"low", b"ew", b"new", b"newest", b"dest", b"idest", b"widest",
                b"er", b"lower"]
    enc = bytebpe.train(TOY_CORPUS, 256 + len(expected))
    assert learned_tokens(enc) == expected
    assert [enc.mergeable_ranks[token] for token in expected] == list(range(256, 268))


def test_asking_for_more_merges_than_the_corpus_allows_warns_and_stops():
    with pytest.warns(UserWarning, match="only 12 merges"):
        enc = bytebpe.train(TOY_CORPUS, 1000)
    assert len(enc.mergeable_ranks) == 268


@pytest.mark.parametrize(
    ("piece", "expected"),
    [
        # (a, a) occurs twice in "aaa" (both windows count), but only one replacement fits, the leftmost.
        (b"aaa", [(97, 97), (256, 97)]),
        # "aaaa" -> [aa, aa]: (aa, aa) is then the only pair.
        (b"aaaa", [(97, 97), (256, 256)]),
        # "aaaaa" -> [aa, aa, a]; (aa, aa) and (aa, a) tie at 1: (256, 97) < (256, 256).
        (b"aaaaa", [(97, 97), (256, 97), (256, 257)]),
    ],
)
def test_overlapping_occurrences_are_replaced_leftmost_first(piece, expected):
    assert compiled_merges({piece: 1}, 10) == expected
    assert bpe_train({piece: 1}, 10) == expected


def test_counts_are_64_bit():
    # A 32-bit count would wrap 2**32 + 1 to 1, and (c, d) with count 2 would win.
    assert compiled_merges({b"ab": 2**32 + 1, b"cd": 2}, 1) == [(97, 98)]
    assert compiled_merges({b"ab": 3 * 2**31, b"cd": 3 * 2**31 + 1}, 1) == [(99, 100)]


# ==== the compiled trainer equals the reference ==================================================


@pytest.mark.parametrize(
    ("corpus", "chars", "n_merges"),
    [("taylorswift.txt", 60_000, 150), ("code.txt", 40_000, 150), ("multilingual.txt", 20_000, 150)],
)
def test_compiled_equals_reference_on_real_text(corpus_dir: Path, corpus, chars, n_merges):
    text = (corpus_dir / corpus).read_text(encoding="utf-8")[:chars]
    piece_counts = regex_piece_counts([text])
    assert compiled_merges(piece_counts, n_merges) == bpe_train(piece_counts, n_merges)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.dictionaries(
        st.binary(min_size=1, max_size=12).map(lambda raw: bytes(b % 4 + 97 for b in raw)),  # runs of a-d
        st.integers(1, 50),
        max_size=30,
    ),
    n_merges=st.integers(0, 60),
    min_frequency=st.integers(1, 6),
    max_token_length=st.one_of(st.none(), st.integers(1, 6)),
)
def test_compiled_equals_reference_on_random_pieces(pieces, n_merges, min_frequency, max_token_length):
    options = {"min_frequency": min_frequency, "max_token_length": max_token_length}
    assert compiled_merges(pieces, n_merges, **options) == bpe_train(pieces, n_merges, **options)


# Long words (unspaced scripts, digit runs) are merged through an index of their pairs' positions instead of
# a rescan per merge; the two paths must give the same merges, so every case runs with every word long
# (long_word=2), with none long, and with a threshold in between, against the reference.
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.dictionaries(
        st.binary(min_size=1, max_size=80).map(lambda raw: bytes(b % 3 + 97 for b in raw)),  # runs of a-c
        st.integers(1, 9),
        max_size=12,
    ),
    n_merges=st.integers(0, 80),
    long_word=st.sampled_from([2, 3, 5, 16, 2**31]),
    min_frequency=st.integers(1, 3),
    max_token_length=st.one_of(st.none(), st.integers(2, 9)),
)
def test_long_words_merge_through_their_occurrences_exactly_as_by_rescanning(
        pieces, n_merges, long_word, min_frequency, max_token_length):
    options = {"min_frequency": min_frequency, "max_token_length": max_token_length}
    assert compiled_merges(pieces, n_merges, long_word, **options) == bpe_train(pieces, n_merges, **options)


def test_pairs_in_many_words_give_the_references_merges():
    # A pair's list of words holds two in place, then grows on the heap, and past 64 Ki words (256 KiB) in
    # its own mapping, resized by mremap: 70,000 distinct words all holding (a, b) and (b, c) take every
    # path, and the merges must not depend on where the lists live.
    letters = b"defghijklmnopqrstuvwxyz"
    words = {}
    for i in range(70_000):
        suffix = bytes(letters[(i // len(letters) ** k) % len(letters)] for k in range(4))
        words[b"abc" + suffix] = 1 + i % 7
    assert compiled_merges(words, 8) == bpe_train(words, 8)


@pytest.mark.parametrize("piece", [b"a" * 1000, b"ab" * 700, b"aab" * 400, b"0123456789" * 200,
                                   "吾輩は猫である。名前はまだ無い。".encode() * 40])
def test_one_long_repetitive_word_gives_the_references_merges(piece):
    assert compiled_merges({piece: 3, piece[:50]: 2}, 40, 2) == bpe_train({piece: 3, piece[:50]: 2}, 40)
    assert compiled_merges({piece: 3, piece[:50]: 2}, 40) == bpe_train({piece: 3, piece[:50]: 2}, 40)


def test_long_word_must_be_at_least_two_symbols():
    with pytest.raises(ValueError, match="long_word must be at least 2"):
        _train.BPETrainer(_train.PieceCounts(), 1, 0, 1)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(alphabet="ab cé\n1", max_size=40), max_size=12), n_merges=st.integers(0, 40))
def test_train_equals_reference_on_random_texts(texts, n_merges):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # small corpora often run out of pairs
        enc = bytebpe.train(texts, 256 + n_merges)
    assert dict(enc.mergeable_ranks) == ranks_from_merges(bpe_train(regex_piece_counts(texts), n_merges))


def test_piece_counts_are_the_regex_pieces(corpus_dir: Path):
    text = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:200_000]
    counts = bytebpe.training.count_split_pieces(text.splitlines(keepends=True), bytebpe.training.pretokenizer_for(
        CL100K_PATTERN))
    assert counts.to_dict() == regex_piece_counts(text.splitlines(keepends=True))


# ==== the trained Encoding ======================================================================


@pytest.fixture(scope="module")
def trained(corpus_dir: Path) -> bytebpe.Encoding:
    with open(corpus_dir / "train_1mb.txt", encoding="utf-8") as file:
        return bytebpe.train(file, 3000, special_tokens=["<|endoftext|>"], name="train_1mb_3000")


def test_trained_encoding_is_ready(trained):
    assert trained.name == "train_1mb_3000"
    assert len(trained.mergeable_ranks) == 2999
    assert sorted(trained.mergeable_ranks.values()) == list(range(2999))
    assert all(trained.mergeable_ranks[bytes([b])] == b for b in range(256))
    assert trained.special_tokens == {"<|endoftext|>": 2999}
    assert trained.n_vocab == 3000
    assert trained.encode("<|endoftext|>", allowed_special="all") == [2999]


def test_trained_encoding_equals_tiktoken_built_from_the_same_ranks(trained, corpus_dir: Path):
    import tiktoken

    reference = tiktoken.Encoding(
        trained.name, pat_str=trained._pat_str, mergeable_ranks=dict(trained.mergeable_ranks),
        special_tokens=dict(trained.special_tokens))
    for corpus in ("english_prose.txt", "code.txt", "multilingual.txt"):
        text = (corpus_dir / corpus).read_text(encoding="utf-8")[:300_000]
        ids = trained.encode_ordinary(text)
        assert ids == reference.encode_ordinary(text)
        assert trained.decode(ids) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_trained_encoding_round_trips_any_string(trained, text):
    expected = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")   # lone surrogates -> U+FFFD
    assert trained.decode(trained.encode_ordinary(text)) == expected


@pytest.mark.parametrize(("name", "pattern"), [("gpt2", R50K_PATTERN), ("r50k_base", R50K_PATTERN),
                                               ("p50k_base", R50K_PATTERN), ("cl100k_base", CL100K_PATTERN),
                                               ("o200k_base", O200K_PATTERN)])
def test_pattern_names_select_the_encodings_patterns(name, pattern):
    enc = bytebpe.train(["Hello world, it's 2024!"], 260, pattern=name)
    assert enc._pat_str == pattern
    assert dict(enc.mergeable_ranks) == ranks_from_merges(bpe_train(regex_piece_counts(["Hello world, it's 2024!"], pattern), 4))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_a_known_pattern_given_as_pat_str_trains_exactly_as_its_name(name):
    texts = ["Hello world, it's 2024! Don't   stop.\n\n"] * 3
    by_regex = bytebpe.train(texts, 280, pat_str=bytebpe.registry.encoding_spec(name).pattern)
    assert dict(by_regex.mergeable_ranks) == dict(bytebpe.train(texts, 280, pattern=name).mergeable_ranks)


def test_any_regex_is_a_pattern_and_groups_do_not_change_the_pieces():
    texts = ["aa bb aa-bb cc"] * 3
    plain = bytebpe.train(texts, 259, pat_str=r"\w+|\W")
    grouped = bytebpe.train(texts, 259, pat_str=r"(\w)+|\W")
    assert learned_tokens(plain) == learned_tokens(grouped) == [b"aa", b"bb", b"cc"]


def test_special_tokens_follow_the_merges_unless_ids_are_given():
    enc = bytebpe.train(TOY_CORPUS, 262, special_tokens=["<|a|>", "<|b|>"])
    assert len(enc.mergeable_ranks) == 260
    assert enc.special_tokens == {"<|a|>": 260, "<|b|>": 261}
    enc = bytebpe.train(TOY_CORPUS, 262, special_tokens={"<|a|>": 1000, "<|b|>": 260})
    assert len(enc.mergeable_ranks) == 260
    assert enc.special_tokens == {"<|a|>": 1000, "<|b|>": 260}
    assert enc.encode("<|a|>low", allowed_special="all") == [1000, enc.mergeable_ranks[b"low"]]


def test_min_frequency_stops_at_the_first_pair_below_it():
    with pytest.warns(UserWarning, match="min_frequency=6"):
        enc = bytebpe.train(TOY_CORPUS, 300, min_frequency=6)
    # Merges 1-7 have counts 9, 9, 7, 7, 6, 6, 6; merge 8 ("dest") has 3.
    assert learned_tokens(enc) == [b"es", b"est", b"lo", b"low", b"ew", b"new", b"newest"]


def test_max_token_length_skips_longer_merges():
    with pytest.warns(UserWarning):
        enc = bytebpe.train(TOY_CORPUS, 300, max_token_length=3)
    tokens = learned_tokens(enc)
    assert tokens[:4] == [b"es", b"est", b"lo", b"low"]
    assert max(map(len, tokens)) == 3
    assert dict(enc.mergeable_ranks) == ranks_from_merges(bpe_train(regex_piece_counts(TOY_CORPUS), 44, max_token_length=3))


def test_empty_corpus_gives_the_256_bytes_and_says_so():
    for texts in ([], [""], iter(())):
        with pytest.warns(EmptyCorpusWarning, match="no pre-token pair"):
            enc = bytebpe.train(texts, 1000, special_tokens=["<|end|>"])
        assert enc.mergeable_ranks == {bytes([b]): b for b in range(256)}
        assert enc.special_tokens == {"<|end|>": 256}


def test_a_corpus_of_single_characters_has_no_pair_either():
    with pytest.warns(EmptyCorpusWarning):
        enc = bytebpe.train(["a", "b", " ", "."] * 10, 300, pat_str=r".")
    assert len(enc.mergeable_ranks) == 256


def test_a_generator_is_read_once_and_streamed():
    consumed = []

    def lines():
        for word in TOY_CORPUS:
            consumed.append(word)
            yield word

    enc = bytebpe.train(lines(), 268)
    assert consumed == TOY_CORPUS
    assert learned_tokens(enc)[-1] == b"lower"


@pytest.mark.parametrize("pattern", [{"pattern": "cl100k_base"}, {"pat_str": "(?:" + CL100K_PATTERN + ")"}],
                         ids=["compiled", "regex"])
def test_surrogates_are_trained_as_encode_repairs_them(pattern):
    """Lone surrogates become U+FFFD and a surrogate pair its character, in the whole text before it is
    cut (found by the fuzzer: the regex engine once cut U+1D400 as two characters)."""
    for raw, repaired in [("ab\ud800ab", "ab\ufffdab"), ("xa\ud835\udc00b", "xa\U0001d400b")]:
        enc = bytebpe.train([raw] * 3, 259, **pattern)
        assert enc.mergeable_ranks == bytebpe.train([repaired] * 3, 259, pattern="cl100k_base").mergeable_ranks


def test_progress_bars_report_counting_and_merging(capsys):
    bytebpe.train(TOY_CORPUS, 268, progress=True)
    err = capsys.readouterr().err
    assert "counting pre-tokens" in err
    assert "learning merges" in err and "12/12" in err


# ==== against rustbpe and bpeasy ================================================================


def test_identical_to_rustbpe_and_bpeasy_on_train_1mb(corpus_dir: Path):
    import bpeasy    # test dependencies (the `test` extra), never imported by bytebpe
    import rustbpe

    path = corpus_dir / "train_1mb.txt"
    # All three read the file line by line (each line one text) with tiktoken's cl100k pattern.
    with open(path, encoding="utf-8") as file:
        ours = dict(bytebpe.train(file, 4096, pattern="cl100k_base").mergeable_ranks)
    tokenizer = rustbpe.Tokenizer()
    with open(path, encoding="utf-8") as file:
        tokenizer.train_from_iterator(file, 4096, pattern=CL100K_PATTERN)
    assert ours == dict(tokenizer.get_mergeable_ranks())
    with open(path, encoding="utf-8") as file:
        assert ours == bpeasy.train_bpe(file, CL100K_PATTERN, 1 << 20, 4096)


# ==== files =====================================================================================


def test_train_from_files_reads_txt_jsonl_and_gzip(tmp_path: Path, corpus_dir: Path):
    text = (corpus_dir / "taylorswift.txt").read_text(encoding="utf-8")
    documents = [text[:60_000], text[60_000:]]
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as file:
        file.write(text)
    jsonl = "".join(json.dumps({"id": k, "body": doc}) + "\n" for k, doc in enumerate(documents))
    (tmp_path / "b.jsonl").write_text(jsonl, encoding="utf-8")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as file:
        file.write(jsonl)

    whole = bytebpe.train([text], 600).mergeable_ranks
    assert bytebpe.train_from_files(tmp_path / "a.txt", 600).mergeable_ranks == whole
    assert bytebpe.train_from_files([str(tmp_path / "a.txt.gz")], 600).mergeable_ranks == whole
    by_document = bytebpe.train(documents, 600).mergeable_ranks
    for name in ("b.jsonl", "b.jsonl.gz"):
        assert bytebpe.train_from_files([tmp_path / name], 600, jsonl_field="body").mergeable_ranks == by_document


def test_text_files_are_cut_only_where_no_piece_crosses(tmp_path: Path, corpus_dir: Path, monkeypatch):
    # Force many cuts: the counts must still equal those of the whole file.
    monkeypatch.setattr(readers, "CUT_CHARS", 500)
    for corpus in ("code.txt", "multilingual.txt"):
        text = (corpus_dir / corpus).read_text(encoding="utf-8")[:200_000]
        (tmp_path / corpus).write_text(text, encoding="utf-8")
        (file,) = readers.find_input_files(tmp_path / corpus)
        documents = [document for document, _line in file.documents(cut=True)]
        assert len(documents) > 20 and "".join(documents) == text
        for pattern in (CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN):
            assert regex_piece_counts(documents, pattern) == regex_piece_counts([text], pattern)
        # Encoding never cuts: a .txt is one document there.
        assert [document for document, _line in file.documents()] == [text]


def test_text_files_read_as_utf8_bytes_count_exactly_as_their_text(tmp_path: Path, corpus_dir: Path, monkeypatch):
    # A compiled scanner counts a .txt's UTF-8 bytes, cut by the same rule found in the bytes. Many cuts,
    # lines that end in non-ASCII spaces and letters, CRLF, a BOM, bad bytes repaired: the counts are those
    # of the whole text, on one worker and on two.
    monkeypatch.setattr(readers, "CUT_CHARS", 700)
    text = "".join((corpus_dir / corpus).read_text(encoding="utf-8")[:60_000]
                   for corpus in ("english_prose.txt", "code.txt", "multilingual.txt"))
    text += "".join(f"ligne{i}\u00a0\nétude {i}\u3000\n中文{i}。\r\nword{i}\n" for i in range(300))
    (tmp_path / "t.txt").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    (file,) = readers.find_input_files(tmp_path / "t.txt")
    documents = [document for document, _line in file.documents(cut=True, utf8=True)]
    assert len(documents) > 100 and all(type(d) is bytes for d in documents)
    assert b"".join(documents) == text.encode("utf-8")
    for pattern in ("r50k_base", "cl100k_base", "o200k_base"):
        expected = bytebpe.count_pieces([text], pattern=pattern).to_dict()
        for workers in (1, 2):
            counted = bytebpe.count_pieces_from_files(tmp_path / "t.txt", pattern=pattern, workers=workers)
            assert counted.to_dict() == expected
    # Bad bytes: repaired as the str reader repairs them (U+FFFD), or refused naming the line.
    bad = text.encode("utf-8")[:5000] + b"\xff\xfe" + text.encode("utf-8")[5000:9000]
    (tmp_path / "bad.txt").write_bytes(bad)
    repaired = bad.decode("utf-8", "replace")
    with pytest.warns(UserWarning, match="replaced"):
        counted = bytebpe.count_pieces_from_files(tmp_path / "bad.txt", pattern="cl100k_base", errors="replace")
    assert counted.to_dict() == bytebpe.count_pieces([repaired], pattern="cl100k_base").to_dict()
    with pytest.raises(BadDocumentError, match="bad.txt"):
        bytebpe.count_pieces_from_files(tmp_path / "bad.txt", pattern="cl100k_base")


def test_bad_files_are_named(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        bytebpe.train_from_files([tmp_path / "missing.txt"], 300)
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\n{"text": 5}\n', encoding="utf-8")
    with pytest.raises(BadDocumentError, match="bad.jsonl:2: field 'text' is int"):
        bytebpe.train_from_files(tmp_path / "bad.jsonl", 300)
    (tmp_path / "bad2.jsonl").write_text('{"text": "ok"}\nnot json\n', encoding="utf-8")
    with pytest.raises(BadDocumentError, match="bad2.jsonl:2: not valid JSON"):
        bytebpe.train_from_files(tmp_path / "bad2.jsonl", 300)
    with pytest.raises(BadDocumentError, match="no field 'body'"):
        bytebpe.train_from_files(tmp_path / "bad2.jsonl", 300, jsonl_field="body")


# ==== threads ===================================================================================


def test_another_thread_keeps_running_while_merges_are_learned(corpus_dir: Path):
    """The merge loop runs without the GIL: a Python thread makes progress while a trainer merges."""
    counts = _train.PieceCounts()
    text = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:1_000_000]
    counts.add_pieces(regex.compile(CL100K_PATTERN).findall(text))
    trainer = _train.BPETrainer(counts)
    during, elapsed = ticks_during(lambda: trainer.merge(20_000))   # control returns only at the end
    # With the GIL held for the whole call the counter could tick at most once or twice.
    assert elapsed > 0.05, "the input is too small to show anything"
    assert during >= 10, f"only {during} ticks in {elapsed:.2f} s: the merge loop held the GIL"
