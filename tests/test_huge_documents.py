"""One huge document: a piece that repeats one byte (50 MB of "a", a line of dashes) merges as runs, and a
long piece that does not (random letters, CJK without spaces) merges window by window between offsets no
token can span -- both with the ids of one merge of the whole piece (tiktoken's, HF's), in memory of a small
multiple of the text, measured in a child process."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _core
from bytebpe._core import WINDOW_BYTES, WINDOWS_MIN_BYTES
from tests.test_pair_rank import core_table, hf_ids, hf_model, random_pair_vocab

RUN_MIN_BYTES = 4096    # _core.pyx's RUN_MIN_BYTES: a one-byte piece this long merges as runs
MEGABYTES = 50_000_000


def tiktoken_oracle(ranks: dict[bytes, int]):
    import tiktoken     # the `test` extra: never skipped

    return tiktoken.Encoding("oracle", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_runs_of_one_byte_have_tiktokens_ids_on_the_named_vocabularies(name, tiktoken_encoding):
    reference = tiktoken_encoding(name)
    table = _core.MergeTable(reference._mergeable_ranks)
    for byte in b"a -=0x\n.#*_~\t\xff\xe6" + bytes(range(0, 256, 37)):
        for n in (RUN_MIN_BYTES - 1, RUN_MIN_BYTES, RUN_MIN_BYTES + 1, RUN_MIN_BYTES + 7, 6000 + byte):
            piece = bytes([byte]) * n
            assert table.encode_single_piece(piece) == reference._encode_single_piece(piece), (byte, n)


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(2, 48), min_size=1, max_size=12, unique=True), order=st.randoms(),
       extra=st.integers(0, 400))
def test_runs_have_the_bpe_ids_whatever_the_ranks(lengths, order, extra):
    # Tokens b"a" * L in any rank order: often a longer run token ranks below a shorter one, which the
    # run merge must hand over to the general path; tiktoken is the oracle.
    ranks = {bytes([b]): b for b in range(256)}
    run_tokens = [b"a" * length for length in lengths]
    order.shuffle(run_tokens)
    for token in run_tokens:
        ranks[token] = len(ranks)
    piece = b"a" * (RUN_MIN_BYTES + extra)
    assert _core.MergeTable(ranks).encode_single_piece(piece) == tiktoken_oracle(ranks)._encode_single_piece(piece)


def long_pieces(seed: int) -> dict[str, bytes]:
    """Pieces of a few windows that repeat nothing, as a pattern passes them whole (random data). (Words run
    together -- "theofandthe..." -- have a token across nearly every offset, so they are rarely cut.)"""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    n = 3 * WINDOWS_MIN_BYTES
    return {
        "lowercase": "".join(rng.choices(letters, k=n)).encode(),
        "mixed case": "".join(rng.choices(letters + letters.upper(), k=n)).encode(),
        "CJK": "".join(chr(rng.randrange(0x4E00, 0xA000)) for _ in range(n // 3)).encode(),
        "letters and accents": "".join(rng.choices(letters + "éèüñçåøß", k=n)).encode(),
    }


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
@pytest.mark.parametrize("kind", list(long_pieces(0)))
def test_long_pieces_merged_by_windows_have_tiktokens_ids(name, kind, tiktoken_encoding):
    reference = tiktoken_encoding(name)
    table = _core.MergeTable(reference._mergeable_ranks)
    piece = long_pieces(len(kind) + len(name))[kind]
    cuts = table.window_cuts(piece)
    assert len(cuts) >= 2, "the piece was not cut: this test would compare one merge with itself"
    assert all(b - a >= WINDOW_BYTES for a, b in zip([0, *cuts], cuts))
    expected = reference._encode_single_piece(piece)
    assert table.merge_bytes(piece) == expected
    assert table.merge_bytes(piece, windows=False) == expected


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_no_token_spans_a_window_cut(name, tiktoken_encoding):
    # The cut rule checks hashed 2-4 byte grams; here every token that could span each cut is looked up.
    ranks = tiktoken_encoding(name)._mergeable_ranks
    table = _core.MergeTable(ranks)
    longest = max(map(len, ranks))
    for kind, piece in long_pieces(1).items():
        for cut in table.window_cuts(piece):
            assert piece[cut] & 0xC0 != 0x80, (kind, cut)     # a character boundary
            for start in range(max(0, cut - longest + 1), cut):
                for end in range(cut + 1, min(len(piece), start + longest) + 1):
                    assert piece[start:end] not in ranks, (kind, cut, piece[start:end])


def spanning_vocab(seed: int) -> dict[bytes, int]:
    """Ranks made as a trainer makes them (each new token joins two earlier ones), favouring long tokens, so
    that many tokens of 4+ bytes join parts whose junction is no 2- or 3-byte token: offsets that only the
    4-byte grams of the cut rule show to be spanned."""
    rng = random.Random(seed)
    ranks = {bytes([b]): b for b in range(256)}
    tokens = [bytes([b]) for b in b"abcdef"]
    while len(tokens) < 70:
        left, right = rng.choice(tokens), rng.choice(tokens[len(tokens) // 2:])
        if left + right not in ranks and len(left + right) <= 12:
            ranks[left + right] = len(ranks)
            tokens.append(left + right)
    return ranks


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_cuts_avoid_long_tokens_that_join_at_no_short_token(seed):
    ranks = spanning_vocab(seed)
    table = _core.MergeTable(ranks)
    rng = random.Random(seed)
    piece = b"".join(rng.choice(list(ranks)[256:] + [b"a", b"b", b"c", b"d", b"e", b"f"])
                     for _ in range(WINDOWS_MIN_BYTES // 3))
    longest = max(map(len, ranks))
    for cut in table.window_cuts(piece):
        for start in range(cut - longest + 1, cut):
            for end in range(cut + 1, start + longest + 1):
                assert piece[start:end] not in ranks, (cut, piece[start:end])
    assert table.merge_bytes(piece) == tiktoken_oracle(ranks)._encode_single_piece(piece)


def test_a_piece_with_no_cut_merges_whole():
    # "abab...": every offset lies inside the token "abab" or its like, so nothing can be cut.
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"ab", b"abab", b"ba", b"bab"):
        ranks[token] = len(ranks)
    table = _core.MergeTable(ranks)
    piece = b"ab" * WINDOWS_MIN_BYTES
    assert table.window_cuts(piece) == []
    assert table.merge_bytes(piece) == [ranks[b"abab"]] * (WINDOWS_MIN_BYTES // 2)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), drop_bytes=st.booleans(), n_merges=st.integers(50, 600))
def test_long_pieces_merged_by_windows_under_the_pair_rank_rule_have_hfs_ids(seed, drop_bytes, n_merges):
    # HF's rule with adversarial vocabularies (tests/test_pair_rank.py), some bytes without a token.
    token_ids, merges = random_pair_vocab(seed, n_merges, b"abcdefghij", drop_bytes)
    table = core_table(token_ids, merges, ignore_merges=False)
    piece = bytes(random.Random(seed).choices(b"abcdefghij", k=2 * WINDOWS_MIN_BYTES + 999))
    cuts = table.window_cuts(piece)
    assert len(cuts) >= 2, "the piece was not cut: this test would compare one merge with itself"
    expected = hf_ids(hf_model(token_ids, merges, ignore_merges=False), piece)
    assert table.merge_bytes(piece) == expected
    assert table.merge_bytes(piece, windows=False) == expected
    for cut in cuts:
        assert all(bytes([b]) in token_ids for b in piece[cut - 3:cut + 3])


def peak_ratio(code: str, tmp_path: Path, size: int = MEGABYTES) -> float:
    """(peak resident memory - resident memory after imports) / `size`, of `code` run in a fresh process."""
    script = textwrap.dedent("""
        import sys
        def status(key):
            for line in open("/proc/self/status"):
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        import numpy, bytebpe, bytebpe.cli, bytebpe.datasets
        enc = bytebpe.get_encoding("cl100k_base")
        enc.encode_to_numpy("warm up"), enc.encode("warm up")
        base = status("VmRSS")
        open("/proc/self/clear_refs", "w").write("5")    # VmHWM := VmRSS
        assert status("VmHWM") < base + 4_000_000, "cannot reset the peak"
    """) + textwrap.dedent(code) + '\nprint((status("VmHWM") - base) / {})\n'.format(size)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return float(result.stdout.split()[-1])


@pytest.mark.parametrize(("how", "bound"), [("encode_to_numpy", 2), ("encode", 4)])
def test_50_mb_of_one_letter_peaks_within_a_small_multiple_of_its_size(how, bound, tmp_path):
    ratio = peak_ratio(f"""
        text = "a" * {MEGABYTES}
        ids = enc.{how}(text)
        assert len(ids) == {MEGABYTES // 8} and ids[0] == ids[-1] == enc.encode_single_token("a" * 8)
    """, tmp_path)
    assert ratio <= bound, f"{how}: peak {ratio:.2f}x the text"


@pytest.mark.parametrize("options", [[], ["--eot"], ["--format", "bin"]])
def test_bytebpe_encode_of_a_50_mb_one_letter_txt_peaks_within_twice_its_size(options, tmp_path):
    (tmp_path / "a.txt").write_text("a" * MEGABYTES)
    ratio = peak_ratio(f"""
        assert bytebpe.cli.main(["encode", "a.txt", "--encoding", "cl100k_base", "-o", "out", "-q", *{options}]) == 0
    """, tmp_path)
    assert ratio <= 2, f"bytebpe encode {options}: peak {ratio:.2f}x the text"
    data = __import__("bytebpe").load_token_files(tmp_path / "out")
    assert data.meta.documents == 1 and data.meta.tokens == MEGABYTES // 8 + ("--eot" in options)


@pytest.mark.parametrize(("how", "bound"), [("encode_to_numpy", 4), ("encode", 9)])
def test_20_mb_of_random_letters_peaks_within_a_small_multiple_of_its_size(how, bound, tmp_path):
    # One 20 MB piece merged whole took 20x its size (16 bytes of state per byte and the queued pairs); by
    # windows, the state is a window's, and what is left is the ids (4 bytes each, ~0.65 per byte, and a
    # list's 8-byte pointers).
    ratio = peak_ratio(f"""
        import random
        letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        text = random.Random(1).randbytes(20_000_000).translate(bytes(letters[i % 52] for i in range(256))).decode()
        base = status("VmRSS")
        open("/proc/self/clear_refs", "w").write("5")
        ids = enc.{how}(text)
        assert 12_000_000 < len(ids) < 14_000_000
    """, tmp_path, size=20_000_000)
    assert ratio <= bound, f"{how}: peak {ratio:.2f}x the text"
