"""The property tables of compiled patterns are each oracle's, on every code point.

src/bytebpe/_unicode_props.h gives every code point one byte — its general category (5 bits), ``\\s``, ``\\w``,
``\\d`` — as stock tiktoken's engine and HF `tokenizers`' engine match them (tools/gen_unicode_props.py). The
check asks the installed oracles again, with the generator's probes, in eight questions per oracle: for each
bit of the category index, the union of the categories whose index has that bit (a code point is in exactly
one category, so the five answers spell its index), then the three flags.
"""
from __future__ import annotations

import numpy as np
import pytest

from bytebpe._pretokenize import PROPS_VERSIONS, case_extras, code_point_props
from bytebpe.pattern_compiler import GENERAL_CATEGORIES

from .. import hf_probe, tiktoken_probe

FLAGS = {r"\s": 0x20, r"\w": 0x40, r"\d": 0x80}


def matcher(oracle: str):
    if oracle == "tiktoken":
        return lambda fragment: np.frombuffer(tiktoken_probe.tiktoken_matches(fragment), dtype=np.uint8)
    return lambda fragment: np.frombuffer(hf_probe.hf_matches(fragment), dtype=np.uint8)


def regenerate_hint(oracle: str) -> str:
    return (f"the installed {oracle} is not the release the tables were read off ({PROPS_VERSIONS[oracle]}): "
            "run `python tools/gen_unicode_props.py`")


def test_the_tables_name_the_installed_oracles():
    import tiktoken
    import tokenizers

    assert PROPS_VERSIONS == {"tiktoken": tiktoken.__version__, "hf": tokenizers.__version__}


@pytest.mark.slow
@pytest.mark.parametrize("oracle", ["tiktoken", "hf"])
def test_every_code_points_category_and_flags_are_the_oracles(oracle):
    props = np.frombuffer(code_point_props(oracle), dtype=np.uint8)
    matches = matcher(oracle)
    category = props & 0x1F
    for bit in range(5):
        names = [name for index, name in enumerate(GENERAL_CATEGORIES) if index >> bit & 1 and name != "Cs"]
        asked = matches("[" + "".join(f"\\p{{{name}}}" for name in names) + "]")
        expected = (category >> bit) & 1
        expected[0xD800:0xE000] = 0
        differ = np.flatnonzero(asked != expected)
        assert not len(differ), f"category bit {bit} at {[hex(cp) for cp in differ[:8]]}: {regenerate_hint(oracle)}"
    for fragment, flag in FLAGS.items():
        differ = np.flatnonzero(matches(fragment) != ((props & flag) != 0))
        assert not len(differ), f"{fragment} at {[hex(cp) for cp in differ[:8]]}: {regenerate_hint(oracle)}"


@pytest.mark.parametrize("oracle", ["tiktoken", "hf"])
def test_case_insensitive_letters_match_what_the_oracle_matches(oracle):
    extras = case_extras(oracle)
    assert extras["s"] == (0x17F,) and extras["k"] == (0x212A,)
    matches = matcher(oracle)
    for letter in "kse":
        expected = {ord(letter), ord(letter.upper()), *extras.get(letter, ())}
        assert set(np.flatnonzero(matches(f"(?i:{letter})")).tolist()) == expected
