"""Generate src/bytebpe/parts/_char_tables.py: the character predicates and mappings HF `tokenizers` takes from Rust.

HF's `Split` patterns run on Oniguruma, whose classes bytebpe already reads off HF (tools/gen_unicode_props.py).
Other components ask Rust code instead — `char::is_numeric`, `char::is_whitespace`, `str::to_lowercase`, the
`unicode_categories` crate (punctuation, marks, "other" characters), the unicode-normalization crate (NFC, NFD,
NFKC, NFKD) — each with its own Unicode version, none of them Python's `unicodedata`. This generator asks the
INSTALLED HF `tokenizers`, through its public Python API only, about every code point (U+0000..U+10FFFF but the
surrogates, which a Rust string cannot hold), and writes what it answers as absolute tables (independent of the
Python that later reads them):

    NUMERIC                 pre_tokenizers.Digits: "a" + c + "a" cut as "a", c, "a"
    WHITESPACE              pre_tokenizers.WhitespaceSplit removes c; normalizers.Strip trims c (checked equal)
    PUNCTUATION             pre_tokenizers.Punctuation: "a" + c + "a" cut as "a", c, "a"
    COMBINING_MARKS         normalizers.StripAccents deletes c (no decomposition first: "é" stays)
    LOWERCASE               normalizers.Lowercase per character (checked context-free: no Final_Sigma rule)
    NFD, NFKD               normalizers.NFD / NFKD of c alone, where not c (Hangul left to the algorithm)
    COMBINING_CLASSES       the canonical combining class, read off canonical reordering (NFD of "a" + r + c
                            for a reference mark r of each class)
    COMPOSITIONS            the primary composites: (a, b) -> c where NFC(a + b) == c
    BERT_REMOVED, BERT_SPACE, BERT_CHINESE, BERT_NONSPACING_MARKS
                            normalizers.BertNormalizer with one option at a time: clean_text deletes c / makes
                            it " "; handle_chinese_chars surrounds c with spaces; strip_accents deletes c after NFD
    FAST_PATHS              per form, the code points where `unicodedata.normalize` of the Python that ran this
                            generator (UNIDATA_VERSION) may differ from HF: a text with none of them may take it

    WORD, WORD_SPACE        pre_tokenizers.Whitespace (``\\w+|[^\\w\\s]+``) on "a" + c + " ": c joins the "a"
                            (its ``\\w``) / c vanishes (its ``\\s``). NOT Oniguruma's classes: at 0.23.3 it
                            disagrees with the HF tables of tools/gen_unicode_props.py on 8 code points (U+00B2,
                            U+00B3, U+00B9, U+00BC..U+00BE are not \\w, U+200C, U+200D are) and agrees on
                            every code point with Rust's `regex` crate (the tiktoken tables there).

Checked too (nothing written): Metaspace replaces U+0020 only; BertNormalizer's lowercase is Lowercase's;
Strip trims exactly WhitespaceSplit's whitespace. ByteLevel without its regex maps bytes (no predicate);
with it, its regex is a Split pattern on Oniguruma (the HF props tables).

Read from tokenizers 0.23.3 (Python 3.11.7, unicodedata 14.0.0). At that release HF disagrees with Python's
`unicodedata` (the generator prints these counts) on: is_numeric 133 code points (vs general category N*;
Rust's std has Unicode 16), is_whitespace 4 (vs str.isspace: U+001C..U+001F), punctuation 106 (vs ASCII
punctuation or P*: unicode_categories is older), lowercase 55 (vs str.lower per code point; and HF never
applies the final-sigma rule), NFD 1, NFKD 73, NFKC 72, NFC 0 single code points, the combining class of 98,
the composition U+11935 U+11930 -> U+11938 (HF lacks it: unicode-normalization is older), StripAccents 315
(vs M*), BertNormalizer clean_text 829,847 (vs C* but tab/LF/CR, plus NUL and U+FFFD: HF keeps unassigned
code points and U+000B, U+000C, U+0085), BertNormalizer strip_accents 385 marks (vs Mn).

    python tools/gen_hf_chars.py               # with the `test` extra (tokenizers)

tests/exactness/test_hf_chars.py checks src/bytebpe/parts/chars.py against the installed tokenizers (a sample in
the fast tier, every code point with ``-m exhaustive``).
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "src" / "bytebpe" / "parts" / "_char_tables.py"
N_CODE_POINTS = 0x110000
PROBED = [cp for cp in range(N_CODE_POINTS) if not 0xD800 <= cp < 0xE000]
HANGUL = range(0xAC00, 0xD7A4)
FORMS = ("NFC", "NFD", "NFKC", "NFKD")


# --- probes ---------------------------------------------------------------------------------------------------

def tokenizers_version() -> str:
    import tokenizers

    return tokenizers.__version__


def each(normalizer, separator: str = "\0", code_points=None) -> dict[int, str]:
    """code point -> normalizer.normalize_str(chr(cp)), asked in one string: the code points joined by
    `separator` (a character the normalizer maps to itself and makes of nothing else, which it checks),
    the separator alone."""
    cps = [cp for cp in (PROBED if code_points is None else code_points) if cp != ord(separator)]
    out = normalizer.normalize_str(separator.join(map(chr, cps))).split(separator)
    if len(out) != len(cps):
        raise SystemExit(f"{normalizer!r}: the separator {separator!r} is not kept apart")
    result = dict(zip(cps, out))
    if code_points is None or ord(separator) in code_points:
        result[ord(separator)] = normalizer.normalize_str(separator)
    return result


def isolated(pre_tokenizer) -> set[int]:
    """The code points c that `pre_tokenizer` cuts out alone from "a" + c + "a" (asked in one string,
    "a" + c0 + "a" + c1 ...; 'a' itself is neither a digit nor punctuation, which it checks)."""
    text = "".join("a" + chr(cp) for cp in PROBED) + "a"
    found = {PROBED[start // 2] for _, (start, end) in pre_tokenizer.pre_tokenize_str(text)
             if start % 2 == 1 and end - start == 1}
    if ord("a") in found:
        raise SystemExit(f"{pre_tokenizer!r} isolates 'a'")
    return found


def removed_by_split(pre_tokenizer) -> set[int]:
    """The code points c that `pre_tokenizer` drops from "a" + c + "a"."""
    text = "".join("a" + chr(cp) for cp in PROBED) + "a"
    kept = set()
    for _, (start, end) in pre_tokenizer.pre_tokenize_str(text):
        kept.update(PROBED[i // 2] for i in range(start | 1, end, 2))
    return set(PROBED) - kept


def whitespace_classes() -> dict[int, str]:
    """pre_tokenizers.Whitespace on "a" + c + " ": 'w' when c joins the "a" (``\\w``), 's' when it vanishes
    (``\\s``), 'o' when it is a piece of its own."""
    from tokenizers import pre_tokenizers

    text = "".join("a" + chr(cp) + " " for cp in PROBED)
    classes = {cp: "s" for cp in PROBED}
    for _, (start, end) in pre_tokenizers.Whitespace().pre_tokenize_str(text):
        for i in range(start, end):
            if i % 3 == 1:
                classes[PROBED[i // 3]] = "w" if start % 3 == 0 else "o"
    return classes


def combining_classes(nfd: dict[int, str]) -> dict[int, int]:
    """HF's canonical combining class of every code point its NFD leaves alone, where not 0. Canonical
    reordering is the only witness: c > 0 moves before a mark r of a greater class in NFD("a" + r + c). The
    reference marks are Python's, one per class, each confirmed by HF (it has a class where Python says so)."""
    from tokenizers import normalizers

    norm = normalizers.NFD()
    fixed = [cp for cp in PROBED if nfd[cp] == chr(cp) and cp != 0]

    def moves(strings):
        out = norm.normalize_str("\0".join(strings)).split("\0")
        assert len(out) == len(strings)
        return [o != s for o, s in zip(out, strings)]
    # Screen: a class in 1..239 moves before U+0345 (240); a class above 1 moves after U+0334 (1).
    low = moves(["a\u0345" + chr(cp) for cp in fixed])
    high = moves(["a" + chr(cp) + "\u0334" for cp in fixed])
    marks = [cp for cp, x, y in zip(fixed, low, high) if x or y]
    references: dict[int, int] = {}
    for cp in marks:
        references.setdefault(unicodedata.combining(chr(cp)), cp)
    references.pop(0, None)
    classes = sorted(references)
    # Confirm the references among themselves: r_u moves before r_v exactly when u < v.
    for u in classes:
        got = moves(["a" + chr(references[v]) + chr(references[u]) for v in classes])
        if got != [u < v for v in classes]:
            raise SystemExit(f"reference mark U+{references[u]:04X} is not of class {u} in HF")
    result = {}
    for cp in marks:
        before = moves(["a" + chr(references[v]) + chr(cp) for v in classes])     # cp < v
        after = moves(["a" + chr(cp) + chr(references[v]) for v in classes])      # cp > v
        equal = [v for v, b, a in zip(classes, before, after) if not b and not a]
        if len(equal) != 1:
            raise SystemExit(f"U+{cp:04X}: a combining class HF has and Python does not: extend the probe")
        result[cp] = equal[0]
    return result


# --- reading the tables ---------------------------------------------------------------------------------------

def ranges(code_points) -> tuple[int, ...]:
    """Flat (start, end) pairs, end exclusive, sorted."""
    out: list[int] = []
    for cp in sorted(code_points):
        if out and out[-1] == cp:
            out[-1] = cp + 1
        else:
            out += [cp, cp + 1]
    return tuple(out)


def hangul_decomposition(cp: int) -> str:
    s = cp - 0xAC00
    lead, vowel, trail = 0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + s % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def compositions(nfd: dict[int, str], nfc: dict[int, str]) -> list[tuple[int, int, int]]:
    """HF's primary composites (a, b, c): c is NFC of itself, decomposes, and NFC(a + b) == c. The pair is
    Python's canonical mapping when Python knows c, else c's two-character NFD; each asked of HF."""
    from tokenizers import normalizers

    candidates = []
    for cp in PROBED:
        if cp in HANGUL or nfd[cp] == chr(cp) or nfc[cp] != chr(cp):
            continue
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and not mapping.startswith("<"):
            pair = [int(part, 16) for part in mapping.split()]
        else:
            pair = [ord(c) for c in nfd[cp]]
        if len(pair) != 2:
            raise SystemExit(f"U+{cp:04X} composes in HF from {len(pair)} characters: extend the generator")
        candidates.append((pair[0], pair[1], cp))
    # Python's composites too, in case HF lacks one it decomposes the same.
    for cp in PROBED:
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and not mapping.startswith("<") and len(mapping.split()) == 2 \
                and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            a, b = (int(part, 16) for part in mapping.split())
            candidates.append((a, b, cp))
    candidates = sorted(set(candidates))
    got = normalizers.NFC().normalize_str("\0".join(chr(a) + chr(b) for a, b, _ in candidates)).split("\0")
    assert len(got) == len(candidates)
    return [(a, b, c) for (a, b, c), o in zip(candidates, got) if o == chr(c)]


def read_hf() -> dict:
    from tokenizers import normalizers, pre_tokenizers

    tables: dict = {"version": tokenizers_version()}
    tables["numeric"] = isolated(pre_tokenizers.Digits(individual_digits=True))
    whitespace = removed_by_split(pre_tokenizers.WhitespaceSplit())
    left = normalizers.Strip(left=True, right=False)
    right = normalizers.Strip(left=False, right=True)
    stripped = {cp for cp in PROBED if left.normalize_str(chr(cp) + "a") == "a"}
    stripped_right = {cp for cp in PROBED if right.normalize_str("a" + chr(cp)) == "a"}
    if not whitespace == stripped == stripped_right:
        raise SystemExit("Strip and WhitespaceSplit disagree on whitespace: give Strip its own table")
    tables["whitespace"] = whitespace
    tables["punctuation"] = isolated(pre_tokenizers.Punctuation(behavior="isolated"))

    accents = each(normalizers.StripAccents(), "|")
    if any(out not in ("", chr(cp)) for cp, out in accents.items()):
        raise SystemExit("StripAccents makes something of a code point other than nothing or itself")
    tables["combining_marks"] = {cp for cp, out in accents.items() if out == ""}

    lower = each(normalizers.Lowercase())
    everything = "".join(map(chr, PROBED))
    if normalizers.Lowercase().normalize_str(everything) != "".join(lower[cp] for cp in PROBED):
        raise SystemExit("Lowercase depends on context: per-character tables cannot give it")
    for text in ("\u03a3", "A\u03a3", "A\u03a3 ", "\u0391\u03a3.", "A\u0301\u03a3", "\u03a3\u03a3", "a\u03a3b"):
        if normalizers.Lowercase().normalize_str(text) != "".join(lower[ord(c)] for c in text):
            raise SystemExit(f"Lowercase has a context rule (sigma?) at {text!r}")
    tables["lowercase"] = {cp: out for cp, out in lower.items() if out != chr(cp)}

    results = {form: each(getattr(normalizers, form)()) for form in FORMS}
    tables["forms"] = results
    for cp in HANGUL:
        if results["NFD"][cp] != hangul_decomposition(cp) or results["NFKD"][cp] != hangul_decomposition(cp):
            raise SystemExit(f"HF decomposes the syllable U+{cp:04X} otherwise")
    tables["nfd"] = {cp: out for cp, out in results["NFD"].items() if out != chr(cp) and cp not in HANGUL}
    tables["nfkd"] = {cp: out for cp, out in results["NFKD"].items()
                      if out != results["NFD"][cp] and cp not in HANGUL}
    tables["ccc"] = combining_classes(results["NFD"])
    tables["compositions"] = compositions(results["NFD"], results["NFC"])

    def bert(**option):
        flags = {"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": False}
        return normalizers.BertNormalizer(**{**flags, **option})
    clean = each(bert(clean_text=True), "|")
    if any(out not in ("", " ", chr(cp)) for cp, out in clean.items()):
        raise SystemExit("clean_text makes something of a code point other than nothing, a space or itself")
    tables["bert_removed"] = {cp for cp, out in clean.items() if out == ""}
    tables["bert_space"] = {cp for cp, out in clean.items() if out == " " and cp != 0x20}
    chinese = each(bert(handle_chinese_chars=True), "|")
    if any(out not in (chr(cp), f" {chr(cp)} ") for cp, out in chinese.items()):
        raise SystemExit("handle_chinese_chars makes something other than the code point or it spaced")
    tables["bert_chinese"] = {cp for cp, out in chinese.items() if out != chr(cp)}
    accent = each(bert(strip_accents=True), "|")
    nfd = results["NFD"]
    marks = {cp for cp, out in accent.items() if out == "" and nfd[cp] == chr(cp)}
    for cp, out in accent.items():
        if out != "".join(c for c in nfd[cp] if ord(c) not in marks):
            raise SystemExit(f"strip_accents is not NFD then a filter at U+{cp:04X}")
    tables["bert_marks"] = marks
    if each(bert(lowercase=True), "|") != {**{cp: chr(cp) for cp in PROBED}, **tables["lowercase"]}:
        raise SystemExit("BertNormalizer's lowercase is not Lowercase's: give it its own table")

    classes = whitespace_classes()
    tables["word"] = {cp for cp, kind in classes.items() if kind == "w"}
    tables["word_space"] = {cp for cp, kind in classes.items() if kind == "s"}
    # For the report: where Whitespace is not Oniguruma's \w / \s (the HF tables of gen_unicode_props.py).
    oniguruma = load_probe("hf_probe")
    import numpy as np
    word = np.frombuffer(oniguruma.hf_matches(r"\w"), dtype=np.uint8)
    space = np.frombuffer(oniguruma.hf_matches(r"\s"), dtype=np.uint8)
    tables["whitespace_pretokenizer_differ"] = [
        cp for cp in PROBED if classes[cp] != ("w" if word[cp] else "s" if space[cp] else "o")]

    metaspace = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never", split=False)
    (piece, _), = metaspace.pre_tokenize_str(everything)
    if piece != everything.replace(" ", "\u2581"):
        raise SystemExit("Metaspace replaces more than U+0020")
    byte_chars = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shown = dict(zip(byte_chars, byte_chars)) | {b: 0x100 + i for i, b in
                                                 enumerate(b for b in range(256) if b not in byte_chars)}
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    (piece, _), = byte_level.pre_tokenize_str(everything)
    if piece != "".join(chr(shown[b]) for b in everything.encode()):
        raise SystemExit("ByteLevel without its regex does more than map bytes")
    return tables


def load_probe(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the fast paths --------------------------------------------------------------------------------------------

def fast_path_exclusions(tables: dict) -> dict[str, set[int]]:
    """Per form, the code points whose presence may make this Python's `unicodedata.normalize` differ from HF:
    those it decomposes otherwise, those whose decomposition holds a character of another combining class
    than Python's, and those whose decomposition holds a character of a composition one side has and the
    other has not."""
    py_ccc_differs = {cp for cp in PROBED
                      if tables["ccc"].get(cp, 0) != unicodedata.combining(chr(cp))
                      and tables["forms"]["NFD"][cp] == chr(cp)}
    hf_pairs = {(a, b): c for a, b, c in tables["compositions"]}
    py_pairs = {}
    for cp in PROBED:
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and not mapping.startswith("<") and len(mapping.split()) == 2 \
                and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            a, b = (int(part, 16) for part in mapping.split())
            py_pairs[(a, b)] = cp
    pair_differs = set()
    for pair in set(hf_pairs) | set(py_pairs):
        if hf_pairs.get(pair) != py_pairs.get(pair):
            pair_differs.update(pair)
    out = {}
    for form in FORMS:
        decomposing = "NFKD" if form.startswith("NFK") else "NFD"
        hf = tables["forms"][decomposing]
        bad = py_ccc_differs | (pair_differs if form in ("NFC", "NFKC") else set())
        excluded = set()
        for cp in PROBED:
            py = unicodedata.normalize(decomposing, chr(cp))
            if hf[cp] != py or any(ord(c) in bad for c in hf[cp] + py):
                excluded.add(cp)
        out[form] = excluded
    return out


# --- writing ---------------------------------------------------------------------------------------------------

def tuple_source(name: str, values, per_line: int = 12) -> str:
    values = list(values)
    rows = [", ".join(str(v) for v in values[i:i + per_line]) for i in range(0, len(values), per_line)]
    return f"{name} = (\n" + "".join(f"    {row},\n" for row in rows) + ")\n"


def dict_source(name: str, mapping: dict, per_line: int = 4) -> str:
    items = [f"{key}: {value!a}" for key, value in sorted(mapping.items())]
    rows = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return f"{name} = {{\n" + "".join(f"    {row},\n" for row in rows) + "}\n"


def render(tables: dict, fast: dict[str, set[int]]) -> str:
    lower_python = {cp: out for cp in PROBED
                    if (out := tables["lowercase"].get(cp, chr(cp))) != chr(cp).lower() or cp == 0x3A3}
    for cp, out in lower_python.items():
        if out.lower() != out:
            raise SystemExit(f"U+{cp:04X}: HF's lowercase is not lowercase to Python: the fast path needs care")
    ccc_runs: list[int] = []
    for cp, value in sorted(tables["ccc"].items()):
        if ccc_runs and ccc_runs[-2] == cp and ccc_runs[-1] == value:
            ccc_runs[-2] = cp + 1
        else:
            ccc_runs += [cp, cp + 1, value]
    parts = [
        (f'"""Generated by tools/gen_hf_chars.py from tokenizers {tables["version"]}. Do not edit.\n\n'
         "Read by bytebpe.parts.chars (see there). Sets are flat (start, end) pairs, end exclusive; strings are\n"
         'what HF makes of one code point."""\n'),
        f'TOKENIZERS_VERSION = "{tables["version"]}"\n',
        "# The `unicodedata` the fast paths (LOWERCASE_PYTHON, FAST_PATH_EXCLUDED) were checked against.\n",
        f'UNIDATA_VERSION = "{unicodedata.unidata_version}"\n',
        "\n# pre_tokenizers.Digits (Rust char::is_numeric)\n", tuple_source("NUMERIC", ranges(tables["numeric"])),
        "\n# pre_tokenizers.WhitespaceSplit, normalizers.Strip (Rust char::is_whitespace)\n",
        tuple_source("WHITESPACE", ranges(tables["whitespace"])),
        "\n# pre_tokenizers.Whitespace (\\w+|[^\\w\\s]+): its \\w and its \\s (Rust's regex crate, not Oniguruma)\n",
        tuple_source("WORD", ranges(tables["word"])), tuple_source("WORD_SPACE", ranges(tables["word_space"])),
        "\n# pre_tokenizers.Punctuation\n", tuple_source("PUNCTUATION", ranges(tables["punctuation"])),
        "\n# normalizers.StripAccents deletes these\n",
        tuple_source("COMBINING_MARKS", ranges(tables["combining_marks"])),
        "\n# normalizers.Lowercase, per code point where not the code point itself\n",
        dict_source("LOWERCASE", tables["lowercase"]),
        "\n# Where HF's lowercase is not Python's str.lower() of the code point alone (and U+03A3: no final sigma)\n",
        dict_source("LOWERCASE_PYTHON", lower_python),
        "\n# HF's NFD of a code point, where not itself (Hangul syllables: algorithmic)\n",
        dict_source("NFD", tables["nfd"]),
        "\n# HF's NFKD of a code point, where not its NFD\n", dict_source("NFKD", tables["nfkd"]),
        "\n# HF's canonical combining classes: flat (start, end, class) triples, end exclusive; others 0\n",
        tuple_source("COMBINING_CLASSES", ccc_runs),
        "\n# HF's primary composites: flat (first, second, composite) triples (Hangul: algorithmic)\n",
        tuple_source("COMPOSITIONS", [v for triple in tables["compositions"] for v in triple]),
        ("\n# BertNormalizer: clean_text deletes BERT_REMOVED and makes BERT_SPACE a space; handle_chinese_chars\n"
         "# spaces BERT_CHINESE; strip_accents deletes BERT_NONSPACING_MARKS after NFD\n"),
        tuple_source("BERT_REMOVED", ranges(tables["bert_removed"])),
        tuple_source("BERT_SPACE", ranges(tables["bert_space"])),
        tuple_source("BERT_CHINESE", ranges(tables["bert_chinese"])),
        tuple_source("BERT_NONSPACING_MARKS", ranges(tables["bert_marks"])),
        "\n# Per form, the code points with which unicodedata.normalize (UNIDATA_VERSION) may differ from HF\n",
        "FAST_PATH_EXCLUDED = {\n",
    ]
    for form in FORMS:
        parts.append(f'    "{form}": ' + tuple_source("", ranges(fast[form])).removeprefix(" = ")
                     .replace("\n    ", "\n        ").rstrip("\n").removesuffix(")") + "    ),\n")
    parts.append("}\n")
    return "".join(parts)


def python_differences(tables: dict) -> dict[str, int]:
    """How many code points HF's answer is not Python's, per table (for the report)."""
    import string

    def count(hf: set[int], py) -> int:
        return sum(1 for cp in PROBED if (cp in hf) != py(chr(cp)))
    forms = tables["forms"]
    return {
        "is_numeric (vs category N*)": count(tables["numeric"], lambda c: unicodedata.category(c)[0] == "N"),
        "is_numeric (vs str.isnumeric)": count(tables["numeric"], str.isnumeric),
        "is_whitespace (vs str.isspace)": count(tables["whitespace"], str.isspace),
        "is_punctuation (vs ASCII punctuation or P*)": count(
            tables["punctuation"], lambda c: c in string.punctuation or unicodedata.category(c)[0] == "P"),
        "StripAccents (vs category M*)": count(tables["combining_marks"],
                                               lambda c: unicodedata.category(c)[0] == "M"),
        "StripAccents (vs category Mn)": count(tables["combining_marks"], lambda c: unicodedata.category(c) == "Mn"),
        "lowercase (vs str.lower per code point)": sum(
            1 for cp in PROBED if tables["lowercase"].get(cp, chr(cp)) != chr(cp).lower()),
        **{f"{form} (single code point)": sum(1 for cp in PROBED if forms[form][cp]
                                              != unicodedata.normalize(form, chr(cp))) for form in FORMS},
        "combining class": sum(1 for cp in PROBED if forms["NFD"][cp] == chr(cp)
                               and tables["ccc"].get(cp, 0) != unicodedata.combining(chr(cp))),
        "BERT clean_text removes (vs C* but tab/LF/CR, NUL, U+FFFD)": count(
            tables["bert_removed"], lambda c: c not in "\t\n\r" and (c in "\0\ufffd" or
                                                                     unicodedata.category(c)[0] == "C")),
        "BERT strip_accents marks (vs Mn)": sum(
            1 for cp in PROBED if forms["NFD"][cp] == chr(cp)
            and (cp in tables["bert_marks"]) != (unicodedata.category(chr(cp)) == "Mn")),
    }


def main() -> int:
    tables = read_hf()
    cps = tables["whitespace_pretokenizer_differ"]
    print(f"pre_tokenizers.Whitespace differs from Oniguruma's \\w/\\s (HF props tables) at {len(cps)} code "
          f"points: {[hex(cp) for cp in cps[:10]]}; its \\s is char::is_whitespace: "
          f"{tables['word_space'] == tables['whitespace']}")
    fast = fast_path_exclusions(tables)
    OUTPUT.write_text(render(tables, fast))
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes) from tokenizers {tables['version']}, "
          f"unicodedata {unicodedata.unidata_version}")
    for name, number in python_differences(tables).items():
        print(f"  {name}: {number}")
    composed = {(a, b) for a, b, _ in tables["compositions"]}
    print(f"  compositions: {len(composed)}; fast-path exclusions: "
          + ", ".join(f"{form} {len(fast[form])}" for form in FORMS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
