"""Patterns outside the compiler's family run on the `regex` package, with the oracle's classes spelled out.

`regex` follows a newer Unicode than tiktoken's engine (thousands of code points are letters to one and not to
the other), so `pretokenizer.with_oracle_classes` rewrites ``\\p{..}``, ``\\s``, ``\\d``, ``\\w`` and their
negations into the code points tiktoken's engine gives them (_unicode_props.h). Proof here: the rewritten
classes equal the tables on every code point, and an encoding whose pattern the compiler refuses gives
tiktoken's ids on every code point in context.
"""
from __future__ import annotations

import numpy as np
import pytest
import regex

import bytebpe
from bytebpe import pretokenizer
from bytebpe._pretokenize import code_point_props
from bytebpe.pattern_compiler import property_values

from .. import tiktoken_probe as probe

EVERY_CODE_POINT = "".join(map(chr, probe.PROBED))


def matched_code_points(fragment: str) -> np.ndarray:
    """1 at every code point (but surrogates) that `regex` matches the one-character `fragment` at."""
    matches = np.zeros(probe.N_CODE_POINTS, dtype=np.uint8)
    where = np.array(probe.PROBED)
    for run in regex.finditer(f"(?:{fragment})+", EVERY_CODE_POINT):
        matches[where[run.start():run.end()]] = 1
    return matches


@pytest.mark.slow
@pytest.mark.parametrize("escape", [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lo}", r"\p{M}", r"\p{N}", r"\p{P}",
                                    r"\p{S}", r"\P{L}", r"\s", r"\S", r"\d", r"\w", r"\p{Letter}"])
def test_rewritten_classes_are_the_tables_on_every_code_point(escape):
    props = np.frombuffer(code_point_props("tiktoken"), dtype=np.uint8)
    rewritten = pretokenizer.with_oracle_classes(escape)
    assert rewritten != escape
    if escape[1] in "pP":
        values = property_values(escape[3:-1])
        expected = np.array([(values >> v) & 1 for v in range(256)], dtype=np.uint8)[props]
    else:
        flag = {"s": 0x20, "d": 0x80, "w": 0x40}[escape[1].lower()]
        expected = ((props & flag) != 0).astype(np.uint8)
    expected ^= escape[1].isupper()
    expected[0xD800:0xE000] = 0
    differ = np.flatnonzero(matched_code_points(rewritten) != expected)
    assert not len(differ), f"{escape}: {[hex(cp) for cp in differ[:10]]}"


def test_classes_inside_brackets_and_escapes_the_tables_do_not_hold():
    parts = [r"\\p{L}", r"[\[\]x]", r"\p{Greek}", r"[^\r\n\p{L}\p{N}]?\p{L}+"]
    escaped, bracket, greek, word = map(pretokenizer.with_oracle_classes, parts)
    assert escaped == r"\\p{L}"                # an escaped backslash, then literal text
    assert bracket == r"[\[\]x]"
    assert greek == r"\p{Greek}"               # scripts keep regex's own tables
    # The properties stay, with the oracle's differences beside them (a lookahead for what it takes away, a
    # class of what it adds): not every range of its tables, which `regex` matches several times slower.
    assert "\\p{L}" in word and "(?![" in word and len(word) < 3000
    rewritten = pretokenizer.with_oracle_classes("|".join(parts))
    assert regex.findall(rewritten, "\\p{L}]x ab") == ["\\p{L}", "]", "x", " ab"]


# A pattern the compiler refuses (a lookbehind), with the classes whose tables differ most between engines.
LOOKBEHIND = r"(?<=\p{L})'s|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+(?!\S)|\s+"
CONTEXTS = ["{0}'s", " {0}x", "{0}{0}1"]


def revealing_code_points() -> list[int]:
    """Every code point whose \\p{L}, \\p{N} or \\s differs between `regex` and tiktoken's tables, and every
    61st other one."""
    differ = np.zeros(probe.N_CODE_POINTS, dtype=bool)
    for escape in (r"\p{L}", r"\p{N}", r"\s"):
        ours = matched_code_points(pretokenizer.with_oracle_classes(escape)).astype(bool)
        differ |= matched_code_points(escape).astype(bool) != ours
    assert differ.sum() > 10_000        # regex's Unicode is newer: the point of the rewrite
    chosen = set(np.flatnonzero(differ).tolist()) | set(probe.PROBED[::61])
    return sorted(cp for cp in chosen if not 0xD800 <= cp < 0xE000)


@pytest.mark.slow
def test_a_pattern_outside_the_family_gives_tiktokens_ids_where_the_engines_classes_differ():
    import tiktoken

    ranks = bytebpe.get_encoding("cl100k_base")._mergeable_ranks
    ours = bytebpe.Encoding("lookbehind", pat_str=LOOKBEHIND, mergeable_ranks=ranks, special_tokens={})
    assert ours.pretokenizer == "regex"
    theirs = tiktoken.Encoding("lookbehind", pat_str=LOOKBEHIND, mergeable_ranks=ranks, special_tokens={})
    cps = revealing_code_points()
    for context in CONTEXTS:
        text = "\n".join(context.format(chr(cp)) for cp in cps)
        if ours.encode_ordinary(text) != theirs.encode_ordinary(text):
            wrong = [hex(cp) for cp in cps if ours.encode_ordinary(context.format(chr(cp)))
                     != theirs.encode_ordinary(context.format(chr(cp)))]
            pytest.fail(f"ids differ from tiktoken's in {context!r} at {wrong[:10]}")
