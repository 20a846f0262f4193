"""Which code points a character class matches in HF `tokenizers`' own regex engine (Oniguruma).

HF `tokenizers` is the oracle of an imported `tokenizer.json`'s ids, and its `Split` pre-tokenizers run on
Oniguruma with Oniguruma's Unicode tables. The compiled scanners serve imported files too (GPT-2's ByteLevel
regex, cl100k/o200k-style Splits, DeepSeek's three Splits), so their classes must be HF's as well as
tiktoken's: tools/gen_unicode_tables.py reads the classes only HF files use (``[\\p{L}\\p{M}]`` and
``[\\p{P}\\p{S}]``) off HF with this probe, and tests/exactness/test_unicode_tables.py checks every class against it.

The probe: a ``Split`` by ``(?:CLASS)+`` with behavior "removed", run over one string of every code point
but the surrogates (which a Rust string cannot hold; the scanner never sees them either). What survives is
the code points the class does not match, with their offsets in characters.
"""
from __future__ import annotations

import functools

import numpy as np

N_CODE_POINTS = 0x110000
# Every code point but the surrogates (U+D800..U+DFFF), as in tiktoken_probe.py (this module is loaded by path
# from tools/ too, so it imports nothing of the tests).
PROBED = [cp for cp in range(N_CODE_POINTS) if not 0xD800 <= cp < 0xE000]


# The classes that only imported files use (DeepSeek's Splits), by their names in `_pretokenize.CLASS_BITS`;
# the generator gives them the bits after tiktoken_probe.CLASSES'.
CLASSES = {
    "letter_or_mark": r"[\p{L}\p{M}]",         # DeepSeek's word runs
    "punct_or_symbol": r"[\p{P}\p{S}]",        # DeepSeek's runs of punctuation and symbols
}


def tokenizers_version() -> str:
    import tokenizers

    return tokenizers.__version__


@functools.lru_cache(maxsize=1)
def _every_code_point() -> str:
    return "".join(map(chr, PROBED))


def hf_matches(fragment: str) -> bytearray:
    """1 at every code point that HF's engine matches the one-character class `fragment` at, else 0
    (surrogates: 0)."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(f"(?:{fragment})+"), behavior="removed")
    matched = np.ones(len(PROBED), dtype=np.uint8)
    for _, (start, end) in split.pre_tokenize_str(_every_code_point()):
        matched[start:end] = 0
    matches = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    matches[PROBED] = matched
    return bytearray(matches.tobytes())
