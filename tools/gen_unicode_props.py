"""Generate src/bytebpe/_unicode_props.h: every code point's properties as each oracle's regex engine sees them.

The pattern compiler (src/bytebpe/pattern_compiler.py) turns any split pattern of the GPT family into a program
for the compiled scanner. Its character classes (``\\p{L}``, ``[^\\s\\p{L}\\p{N}]``, ``\\p{Lu}``, ``\\d``, ...)
must be the oracle's, not the `regex` package's (newer Unicode) nor `unicodedata`'s (Python's Unicode): so
they are built, when a pattern is compiled, from one byte per code point read off the oracle's own engine:

    bits 0-4  the general category, an index into GENERAL_CATEGORIES (0: Cn, unassigned, and surrogates)
    bit 5     ``\\s``
    bit 6     ``\\w``
    bit 7     ``\\d``

Every class the compiler accepts is a function of this byte plus explicit code points. Two oracles, two tables:
stock tiktoken's engine (fancy-regex over Rust's `regex` crate), the oracle of `Encoding(pat_str=...)`,
`.tiktoken` and Tekken files; and HF `tokenizers`' (Oniguruma), the oracle of `tokenizer.json` files. Each
general category, ``\\s``, ``\\w`` and ``\\d`` is asked of each engine about every code point with the probes
of tests/tiktoken_probe.py and tests/hf_probe.py; the generator checks that each code point is in exactly one
category. Also per oracle: the code points ``(?i:x)`` matches for each ASCII letter x (the case-insensitive
literals the compiler accepts), e.g. U+017F for s and U+212A for k.

Layout: STAGE1[cp >> 8] (uint16) picks a distinct 256-code-point block, STAGE2[block * 256 + (cp & 255)] holds
the byte. Surrogates get 0 (Cn): no engine sees them (`Encoding` repairs them first).

    python tools/gen_unicode_props.py          # with the `test` extra: tiktoken and tokenizers

tests/exactness/test_unicode_props.py checks the header against both installed oracles on every code point (slow tier).
"""
from __future__ import annotations

import importlib.util
import pathlib
import string
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "src" / "bytebpe" / "_unicode_props.h"
BLOCK = 256
N_CODE_POINTS = 0x110000

# The general categories, in the order of their index in bits 0-4 of a code point's byte (Cn first: the default).
GENERAL_CATEGORIES = ("Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                      "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co")
# The flags in bits 5, 6, 7.
FLAGS = ((r"\s", 5), (r"\w", 6), (r"\d", 7))
ORACLES = ("tiktoken", "hf")


def load_probe(name: str):
    """tests/NAME.py, a probe of an oracle's engine that the tests use too."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def matcher(oracle: str):
    """fragment -> uint8 array over every code point: 1 where the oracle's engine matches it."""
    if oracle == "tiktoken":
        probe = load_probe("tiktoken_probe")
        return lambda fragment: np.frombuffer(probe.tiktoken_matches(fragment), dtype=np.uint8)
    probe = load_probe("hf_probe")
    return lambda fragment: np.frombuffer(probe.hf_matches(fragment), dtype=np.uint8)


def oracle_version(oracle: str) -> str:
    if oracle == "tiktoken":
        return load_probe("tiktoken_probe").tiktoken_version()
    return load_probe("hf_probe").tokenizers_version()


def property_bytes(matches) -> np.ndarray:
    """The byte of every code point (see the module docstring), read off one oracle."""
    props = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    seen = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for index, category in enumerate(GENERAL_CATEGORIES):
        if category == "Cs":        # no engine can be asked about surrogates: they stay Cn
            continue
        hit = matches(rf"\p{{{category}}}")
        props[hit == 1] = index
        seen += hit
    surrogates = slice(0xD800, 0xE000)
    seen[surrogates] = 1
    if (seen != 1).any():
        bad = np.flatnonzero(seen != 1)[:10]
        raise SystemExit(f"code points in none or several general categories: {[hex(cp) for cp in bad]}")
    for fragment, bit in FLAGS:
        props |= (matches(fragment) << bit).astype(np.uint8)
    return props


def case_orbits(matches) -> dict[str, list[int]]:
    """ASCII letter -> every code point ``(?i:letter)`` matches."""
    return {letter: np.flatnonzero(matches(f"(?i:{letter})")).tolist() for letter in string.ascii_lowercase}


def c_array(ctype: str, name: str, values, per_line: int = 32) -> str:
    values = list(values)
    rows = (",".join(str(v) for v in values[i:i + per_line]) for i in range(0, len(values), per_line))
    return f"static const {ctype} {name}[{len(values)}] = {{\n" + ",\n".join(rows) + "\n};\n"


def two_stage(props: np.ndarray) -> tuple[list[int], bytes]:
    blocks: dict[bytes, int] = {}
    stage1 = [blocks.setdefault(props[start:start + BLOCK].tobytes(), len(blocks))
              for start in range(0, N_CODE_POINTS, BLOCK)]
    assert len(blocks) < 65536
    return stage1, b"".join(blocks)


def render(tables: dict[str, tuple[str, np.ndarray, dict[str, list[int]]]]) -> str:
    versions = ", ".join(f"{oracle} {version}" for oracle, (version, _, _) in tables.items())
    lines = [
        f"/* Generated by tools/gen_unicode_props.py from the regex engines of {versions}. Do not edit. */",
        "#pragma once",
        "#include <stdint.h>",
        "",
        "/* A code point's byte: bits 0-4 its general category (index into BYTEBPE_GENERAL_CATEGORIES),",
        "   bit 5 \\s, bit 6 \\w, bit 7 \\d, as the oracle's engine matches them. */",
        "#define BYTEBPE_PROP_SPACE 0x20",
        "#define BYTEBPE_PROP_WORD 0x40",
        "#define BYTEBPE_PROP_DIGIT 0x80",
        "#define BYTEBPE_PROP_CATEGORY 0x1F",
        "#define BYTEBPE_ORACLE_TIKTOKEN 0",
        "#define BYTEBPE_ORACLE_HF 1",
        f"#define BYTEBPE_N_ORACLES {len(tables)}",
        "/* The general categories by index: 2 letters each, in one string. */",
        f"static const char BYTEBPE_GENERAL_CATEGORIES[] = \"{''.join(GENERAL_CATEGORIES)}\";",
        "",
    ]
    for number, (oracle, (version, props, orbits)) in enumerate(tables.items()):
        stage1, stage2 = two_stage(props)
        upper = oracle.upper()
        lines += [
            f"/* {oracle} {version}: the oracle with index {number}. */",
            f"#define BYTEBPE_PROPS_{upper}_VERSION \"{version}\"",
            c_array("uint16_t", f"BYTEBPE_{upper}_PROPS_STAGE1", stage1),
            c_array("uint8_t", f"BYTEBPE_{upper}_PROPS_STAGE2", stage2),
            "/* (?i:letter) per ASCII letter a..z: the code points it matches besides the letter's two cases,",
            "   as (code point, letter) pairs, 0-terminated. */",
            c_array("uint32_t", f"BYTEBPE_{upper}_CASE_EXTRAS",
                    [value for letter, cps in orbits.items()
                     for cp in cps if cp not in (ord(letter), ord(letter.upper()))
                     for value in (cp, ord(letter))] + [0, 0]),
        ]
    lines += [
        "static inline uint8_t bytebpe_props_of(int oracle, uint32_t cp) {",
        "    if (cp >= 0x110000) return 0;",
    ]
    for number, oracle in enumerate(tables):
        upper = oracle.upper()
        lines.append(f"    if (oracle == {number}) return BYTEBPE_{upper}_PROPS_STAGE2["
                     f"(uint32_t)BYTEBPE_{upper}_PROPS_STAGE1[cp >> 8] * {BLOCK} + (cp & {BLOCK - 1})];")
    lines += ["    return 0;", "}", ""]
    lines += ["/* The block index of code points block * 256 .. block * 256 + 255 (block < 4352). */",
              "static inline uint16_t bytebpe_props_block(int oracle, uint32_t block) {"]
    for number, oracle in enumerate(tables):
        lines.append(f"    if (oracle == {number}) return BYTEBPE_{oracle.upper()}_PROPS_STAGE1[block];")
    lines += ["    return 0;", "}", ""]
    lines += ["static inline const uint32_t* bytebpe_case_extras(int oracle) {"]
    for number, oracle in enumerate(tables):
        lines.append(f"    if (oracle == {number}) return BYTEBPE_{oracle.upper()}_CASE_EXTRAS;")
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def read_oracle(oracle: str) -> tuple[str, np.ndarray, dict[str, list[int]]]:
    matches = matcher(oracle)
    orbits = case_orbits(matches)
    for letter, cps in orbits.items():
        if ord(letter) not in cps or ord(letter.upper()) not in cps:
            raise SystemExit(f"{oracle}: (?i:{letter}) does not match both cases of {letter}")
    return oracle_version(oracle), property_bytes(matches), orbits


def main() -> int:
    tables = {oracle: read_oracle(oracle) for oracle in ORACLES}
    OUTPUT.write_text(render(tables))
    print(f"wrote {OUTPUT}")
    tiktoken_props, hf_props = tables["tiktoken"][1], tables["hf"][1]
    differ = np.flatnonzero(tiktoken_props != hf_props)
    print(f"code points whose byte differs between the oracles: {len(differ)} "
          f"(first: {[hex(cp) for cp in differ[:8].tolist()]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
