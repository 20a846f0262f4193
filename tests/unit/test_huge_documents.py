"""One huge document: a piece that repeats one byte (50 MB of "a", a line of dashes) merges as runs, with
tiktoken's ids, and a long piece that does not (random letters) merges window by window
(tests/unit/test_merge_windows.py) -- both in memory of a small multiple of the text, measured in a child process."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytebpe import _core

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
