"""Which code points a pattern fragment matches in stock tiktoken's own regex engine.

tiktoken is the oracle of bytebpe's ids, and its engine (fancy-regex over Rust's `regex` crate) has its own
Unicode tables, older than those of the `regex` package: the two disagree on thousands of code points. So
the compiled scanner's character classes are read off tiktoken itself, one code point at a time:
tools/gen_unicode_tables.py writes the tables from this module, and tests/exactness/test_unicode_tables.py checks them
with it. (The generator imports this file by path: it lives here so that the tests, which run against the
installed package without the source tree on the path, can import it.)

The probe: an encoding whose pattern is ``\\x00\\x00(?=FRAGMENT)|[\\s\\S]`` and whose ranks are the 256
bytes plus b"\\x00\\x00" (id 256) encodes ``\\x00\\x00`` + chr(cp) for every code point at once. Where the
code point matches FRAGMENT the marker is one piece, id 256; where it does not, the marker is two pieces,
ids 0 and 0. The code point's own bytes never contain 0 and never merge, so the markers can be read off in
order. U+0000 cannot follow a marker made of it and is probed after a ``\\x01\\x01`` marker instead.

Surrogates (U+D800..U+DFFF) cannot be probed: tiktoken replaces them with U+FFFD before its engine sees
them. They are left unmatched, which is also all the scanner needs: `Encoding` repairs lone surrogates
(tiktoken's way) before the scanner ever sees text, and UTF-8 cannot carry them.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

N_CODE_POINTS = 0x110000
SURROGATES = range(0xD800, 0xE000)

# The character classes of the split patterns (src/bytebpe/patterns.py), exactly as written there, by their
# names in `_pretokenize.CLASS_BITS`; the generator gives them bits in this order.
CLASSES = {
    "letter": r"\p{L}",
    "number": r"\p{N}",
    "space": r"\s",
    "upper": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",     # o200k's "upper case or caseless" class
    "lower": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",            # o200k's "lower case or caseless" class
}

# The letters of the contractions ('s 't 're 've 'm 'll 'd), matched case-insensitively (``(?i:...)``) by
# cl100k and o200k: which code points ``(?i:s)`` matches (S, s and U+017F LATIN SMALL LETTER LONG S) etc.
CONTRACTION_LETTERS = "dlmrstve"

# Every code point the probe can ask about.
PROBED = [cp for cp in range(N_CODE_POINTS) if cp not in SURROGATES]

Matcher = Callable[[str], bytearray]


def tiktoken_version() -> str:
    import tiktoken

    return tiktoken.__version__


def _probe(fragment: str, code_points: list[int], marker: str) -> np.ndarray:
    """matched[k]: whether `fragment` matches at code_points[k] (none of them surrogates or marker bytes)."""
    import tiktoken

    marker_bytes = marker.encode()
    escaped_marker = "".join(f"\\x{byte:02x}" for byte in marker_bytes)
    encoding = tiktoken.Encoding(
        "probe",
        pat_str=f"{escaped_marker}(?={fragment})|[\\s\\S]",
        mergeable_ranks={bytes([i]): i for i in range(256)} | {marker_bytes: 256},
        special_tokens={},
    )
    text, n_bytes = _probe_text(tuple(code_points), marker)
    ids = encoding.encode_to_numpy(text)
    # Keep the markers: one 256 (a match) or two of the marker's byte (no match) per code point, in order.
    half = marker_bytes[0]
    markers = ids[(ids == 256) | (ids == half)]
    halves = markers == half
    # The first half of each unmatched marker: halves come in pairs, so it is every odd-numbered one.
    firsts = (markers == 256) | (halves & (np.cumsum(halves) % 2 == 1))
    matched = markers[firsts] == 256
    if len(matched) != len(code_points) or len(ids) != n_bytes + 2 * len(code_points) - int(matched.sum()):
        raise AssertionError(f"the tiktoken probe of {fragment!r} did not read one marker per code point")
    return matched


@functools.lru_cache(maxsize=2)
def _probe_text(code_points: tuple[int, ...], marker: str) -> tuple[str, int]:
    """The text probed (`marker` before each code point) and the UTF-8 length of the code points alone."""
    text = "".join(marker + chr(cp) for cp in code_points)
    return text, len(text.encode()) - len(marker.encode()) * len(code_points)


def tiktoken_matches_at(fragment: str, code_points: Sequence[int]) -> np.ndarray:
    """matched[k]: whether tiktoken's engine matches `fragment` at code_points[k] (no surrogates)."""
    code_points = np.asarray(code_points, dtype=np.int64)
    if ((code_points < 0) | (code_points >= N_CODE_POINTS)
            | ((code_points >= SURROGATES.start) & (code_points < SURROGATES.stop))).any():
        raise ValueError("only code points that are not surrogates can be probed")
    matched = np.zeros(len(code_points), dtype=bool)
    nul = code_points == 0
    if nul.any():   # U+0000 cannot follow a marker made of U+0000s
        matched[nul] = _probe(fragment, [0], "\x01\x01")[0]
    if not nul.all():
        matched[~nul] = _probe(fragment, code_points[~nul].tolist(), "\x00\x00")
    return matched


def tiktoken_matches(fragment: str) -> bytearray:
    """1 at every code point that tiktoken's engine matches `fragment` at, else 0 (surrogates: 0)."""
    matches = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    matches[PROBED] = tiktoken_matches_at(fragment, PROBED)
    return bytearray(matches.tobytes())


def regex_matches(fragment: str) -> bytearray:
    """The same question asked of the `regex` package (surrogates: 0, as for tiktoken), for comparison."""
    import regex

    every_code_point = "".join(map(chr, range(N_CODE_POINTS)))
    matches = bytearray(N_CODE_POINTS)
    for run in regex.finditer(f"(?:{fragment})+", every_code_point):
        matches[run.start():run.end()] = b"\x01" * (run.end() - run.start())
    matches[SURROGATES.start:SURROGATES.stop] = bytes(len(SURROGATES))
    return matches


def class_matches(matcher: Matcher) -> dict[str, bytearray]:
    """CLASSES' name -> its matches, by `matcher`."""
    return {name: matcher(fragment) for name, fragment in CLASSES.items()}


def contraction_matches(matcher: Matcher) -> dict[str, bytearray]:
    """Contraction letter -> the matches of ``(?i:letter)``, by `matcher`, asked about every code point."""
    return {letter: matcher(f"(?i:{letter})") for letter in CONTRACTION_LETTERS}


def tiktoken_contraction_matches() -> dict[str, bytearray]:
    """Contraction letter -> the code points that ``(?i:letter)`` matches in tiktoken's engine.

    The same answer as ``contraction_matches(tiktoken_matches)`` in an eighth of the time: every code point
    is asked about ``(?i:[dlmrstve])`` and only those that match it about each ``(?i:letter)`` (a code point
    outside a case-insensitive class matches none of its letters case-insensitively).
    """
    candidates = np.flatnonzero(tiktoken_matches(f"(?i:[{CONTRACTION_LETTERS}])")).tolist()
    result = {}
    for letter in CONTRACTION_LETTERS:
        matches = np.zeros(N_CODE_POINTS, dtype=np.uint8)
        matches[candidates] = tiktoken_matches_at(f"(?i:{letter})", candidates)
        result[letter] = bytearray(matches.tobytes())
    return result
