"""bytebpe.parts.chars answers as the installed HF `tokenizers` does, asked live through its public API.

src/bytebpe/parts/_char_tables.py was read off one tokenizers release by tools/gen_hf_chars.py; these tests ask the
installed one again, with probes of their own (no answer is written down here). The fast tier asks about a
sample of code points — every code point where HF and Python's `unicodedata` disagree on a table (but for the
829,847 unassigned code points BertNormalizer keeps and `unicodedata` calls "other": there, the edges of each
range), the edges of every table's ranges, a seeded random draw — and about random strings built to exercise
contexts (canonical reordering, composition, Hangul, final sigma, each BertNormalizer option). The exhaustive
tier (``-m exhaustive``) asks about every code point but the surrogates. The normal forms and lowercase are
checked both on their `unicodedata`/`str.lower` fast path and on the pure-Python path over the tables.
"""
from __future__ import annotations

import random
import string
import unicodedata

import pytest

from bytebpe.parts import _char_tables as tables
from bytebpe.parts import chars as hf_chars

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import normalizers, pre_tokenizers

EVERY = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
FORMS = ("NFC", "NFD", "NFKC", "NFKD")


def hint() -> str:
    installed = tokenizers.__version__
    if installed != tables.TOKENIZERS_VERSION:
        return (f"the tables were read from tokenizers {tables.TOKENIZERS_VERSION}, tokenizers {installed} is "
                "installed and answers otherwise: run `python tools/gen_hf_chars.py`")
    return f"tokenizers {installed}, the release the tables were read from, answers otherwise: a bug"


def first_few(code_points) -> str:
    code_points = sorted(code_points)
    return ", ".join(f"U+{cp:04X}" for cp in code_points[:8]) + (" ..." if len(code_points) > 8 else "")


def in_table(name: str) -> set[int]:
    values = getattr(tables, name)
    return {cp for start, end in zip(values[0::2], values[1::2]) for cp in range(start, end)}


# --- probes (HF, live) ------------------------------------------------------------------------------------------

def hf_each(normalizer, code_points, separator="\x00") -> dict[int, str]:
    """normalizer.normalize_str(chr(cp)) for each code point, in chunks joined by `separator` (itself alone)."""
    out: dict[int, str] = {}
    cps = [cp for cp in code_points if cp != ord(separator)]
    for start in range(0, len(cps), 1 << 16):
        chunk = cps[start:start + (1 << 16)]
        got = normalizer.normalize_str(separator.join(map(chr, chunk))).split(separator)
        assert len(got) == len(chunk), f"{normalizer!r} does not keep {separator!r} apart"
        out.update(zip(chunk, got))
    if ord(separator) in code_points:
        out[ord(separator)] = normalizer.normalize_str(separator)
    return out


def hf_alone(pre_tokenizer, code_points) -> set[int]:
    """The code points the pre-tokenizer makes a piece of their own between two letters: " x" + c + "x "."""
    cps = list(code_points)
    found = set()
    text = "".join("x" + chr(cp) for cp in cps) + "x"
    for _, (start, end) in pre_tokenizer.pre_tokenize_str(text):
        if start % 2 == 1 and end == start + 1:
            found.add(cps[start // 2])
    return found


def hf_dropped(pre_tokenizer, code_points) -> set[int]:
    cps = list(code_points)
    kept = set()
    text = "".join("x" + chr(cp) for cp in cps) + "x"
    for _, (start, end) in pre_tokenizer.pre_tokenize_str(text):
        kept.update(cps[i // 2] for i in range(start, end) if i % 2 == 1)
    return set(cps) - kept


def bert(**options):
    flags = {"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": False}
    return normalizers.BertNormalizer(**{**flags, **options})


# --- the sample -------------------------------------------------------------------------------------------------

def python_differs() -> set[int]:
    """Every code point where a table's answer is not what Python's `unicodedata`/`str` would give (but the
    unassigned code points of BertNormalizer's clean_text, see the module docstring)."""
    numeric, space, punct = in_table("NUMERIC"), in_table("WHITESPACE"), in_table("PUNCTUATION")
    marks, bert_marks = in_table("COMBINING_MARKS"), in_table("BERT_NONSPACING_MARKS")
    removed, ccc = in_table("BERT_REMOVED"), {cp for cp in range(0x110000) if hf_chars.combining_class(chr(cp))}
    out = set()
    for cp in EVERY:
        char = chr(cp)
        category = unicodedata.category(char)
        if ((cp in numeric) != (category[0] == "N") or (cp in space) != char.isspace()
                or (cp in punct) != (char in string.punctuation or category[0] == "P")
                or (cp in marks) != (category[0] == "M") or (cp in bert_marks) != (category == "Mn")
                or (cp in ccc) != (unicodedata.combining(char) != 0)
                or tables.LOWERCASE.get(cp, char) != char.lower()
                or (cp in removed) != (category[0] == "C" and category != "Cn" and char not in "\t\n\r")
                or any(unicodedata.normalize(form, char) != (tables.NFD.get(cp, char) if form == "NFD" else
                                                             tables.NFKD.get(cp, tables.NFD.get(cp, char)))
                       for form in ("NFD", "NFKD") if not 0xAC00 <= cp <= 0xD7A3)):
            out.add(cp)
    return out


def edges() -> set[int]:
    out = set()
    for name in ("NUMERIC", "WHITESPACE", "WORD", "WORD_SPACE", "PUNCTUATION", "COMBINING_MARKS", "BERT_REMOVED",
                 "BERT_SPACE", "BERT_CHINESE", "BERT_NONSPACING_MARKS"):
        for value in getattr(tables, name):
            out.update(cp for cp in (value - 1, value) if 0 <= cp < 0x110000 and not 0xD800 <= cp < 0xE000)
    previous = None
    for cp in EVERY:                            # where Python's category changes: its unassigned ranges' edges
        category = unicodedata.category(chr(cp))
        if category != previous:
            out.update((cp - 1, cp))
            previous = category
    return {cp for cp in out if 0 <= cp < 0x110000 and not 0xD800 <= cp < 0xE000}


@pytest.fixture(scope="module")
def sample() -> list[int]:
    rng = random.Random(1234)
    chosen = python_differs() | edges() | set(range(0x300)) | set(rng.sample(EVERY, 8000))
    chosen |= set(tables.NFD) | set(tables.NFKD) | set(tables.LOWERCASE)
    return sorted(chosen)


@pytest.fixture(params=["fast", "tables"])
def path(request, monkeypatch):
    """Each text through `unicodedata`/`str.lower` where hf_chars may take them, and through its tables."""
    if request.param == "tables":
        monkeypatch.setattr(hf_chars, "_fast", lambda: False)
    return request.param


# --- per code point ----------------------------------------------------------------------------------------------

def check_code_points(code_points: list[int]) -> None:
    sets = {
        "is_numeric (Digits)": (hf_alone(pre_tokenizers.Digits(individual_digits=True), code_points),
                                hf_chars.is_numeric),
        "is_punctuation (Punctuation)": (hf_alone(pre_tokenizers.Punctuation(behavior="isolated"), code_points),
                                         hf_chars.is_punctuation),
        "is_whitespace (WhitespaceSplit)": (hf_dropped(pre_tokenizers.WhitespaceSplit(), code_points),
                                            hf_chars.is_whitespace),
    }
    for name, (expected, predicate) in sets.items():
        differ = [cp for cp in code_points if (cp in expected) != predicate(chr(cp))]
        assert not differ, f"{name} at {first_few(differ)}: {hint()}"
    strip = normalizers.Strip(left=True, right=True)
    differ = [cp for cp in code_points if strip.normalize_str(f"{chr(cp)}x{chr(cp)}") != hf_chars.strip(
        f"{chr(cp)}x{chr(cp)}")]
    assert not differ, f"Strip at {first_few(differ)}: {hint()}"
    whitespace = pre_tokenizers.Whitespace()
    differ = [cp for cp in code_points for text in (f"x{chr(cp)} ", f"-{chr(cp)}x")
              if whitespace.pre_tokenize_str(text) != hf_chars.whitespace_pretokenize(text)]
    assert not differ, f"Whitespace pre-tokenizer at {first_few(differ)}: {hint()}"
    mappings = {
        "lowercase": (normalizers.Lowercase(), hf_chars.lowercase),
        "StripAccents": (normalizers.StripAccents(), hf_chars.strip_accents),
        **{form: (getattr(normalizers, form)(), lambda text, form=form: hf_chars.normalize(form, text))
           for form in FORMS},
        **{f"BertNormalizer({option})": (bert(**{option: True}),
                                         lambda text, option=option: hf_chars.bert_normalize(text, **{
                                             "clean_text": False, "handle_chinese_chars": False,
                                             "strip_accents": False, "lowercase": False, option: True}))
           for option in ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")},
    }
    for name, (normalizer, ours) in mappings.items():
        expected = hf_each(normalizer, code_points, "|" if name.startswith(("Bert", "Strip")) else "\x00")
        differ = [cp for cp in code_points if ours(chr(cp)) != expected[cp]]
        assert not differ, f"{name} at {first_few(differ)}: {hint()}"


def test_the_sample_holds_every_difference_from_python(sample):
    assert len(sample) > 15000
    assert {0x3A3, 0x130, 0x11938, 0x1C89} <= set(sample)


def test_sampled_code_points_are_hfs(sample, path):
    check_code_points(sample)


@pytest.mark.exhaustive
def test_every_code_point_is_hfs(path):
    check_code_points(EVERY)


# --- in context ----------------------------------------------------------------------------------------------

def pool() -> list[str]:
    """Characters for random strings: marks of every class (HF's and Python's), the starters they compose
    with, Hangul jamo and syllables, every code point a fast path must avoid, sigma, spaces, CJK."""
    marks = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
             and (hf_chars.combining_class(chr(cp)) or unicodedata.combining(chr(cp)))]
    composing = [chr(v) for i, v in enumerate(tables.COMPOSITIONS) if i % 3 != 2]
    excluded = [chr(cp) for form in FORMS for start, end in zip(tables.FAST_PATH_EXCLUDED[form][0::2],
                                                                 tables.FAST_PATH_EXCLUDED[form][1::2])
                for cp in range(start, end)]
    hangul = [chr(cp) for cp in (*range(0x1100, 0x1113), *range(0x1161, 0x1176), *range(0x11A7, 0x11C3),
                                 0xAC00, 0xAC01, 0xAC1C, 0xD7A3)]
    decomposing = [chr(cp) for cp in tables.NFD][::7] + [chr(cp) for cp in tables.NFKD][::11]
    extra = list("ΣσςAaİI i\t\n\u00a0\u3000\u4e00\x00\ufffd\x85\x0b\u200d\u00b2-.,'") + \
        [chr(cp) for cp in tables.LOWERCASE][::5]
    return marks + composing + excluded * 3 + hangul * 3 + decomposing + extra * 4


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rng = random.Random(99)
    chars = pool()
    return ["".join(rng.choice(chars) for _ in range(rng.randint(1, 10))) for _ in range(6000)]


def check_texts(name: str, normalizer, ours, texts: list[str]) -> None:
    differ = [text for text in texts if ours(text) != normalizer.normalize_str(text)]
    assert not differ, f"{name} on {[ascii(t) for t in differ[:3]]}: {hint()}"


@pytest.mark.parametrize("form", FORMS)
def test_normal_forms_in_context(form, texts, path):
    check_texts(form, getattr(normalizers, form)(), lambda text: hf_chars.normalize(form, text), texts)


def composition_texts() -> list[str]:
    """Each pair HF composes and each pair Python composes, alone, followed by marks, split by marks."""
    pairs = {(chr(a), chr(b)) for a, b in zip(tables.COMPOSITIONS[0::3], tables.COMPOSITIONS[1::3])}
    for cp in EVERY:
        mapping = unicodedata.decomposition(chr(cp))
        if mapping and not mapping.startswith("<") and len(mapping.split()) == 2:
            pairs.add(tuple(chr(int(part, 16)) for part in mapping.split()))
    texts = []
    for a, b in sorted(pairs):
        texts += [a + b, a + b + "\u0301", a + "\u0316" + b, a + "\u0301" + b, "x" + a + b + "\u0334" + a + b,
                  unicodedata.normalize("NFD", a) + b]
    return texts


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_every_composition_in_context(form, path):
    check_texts(form, getattr(normalizers, form)(), lambda text: hf_chars.normalize(form, text),
                composition_texts())


def test_lowercase_strip_and_strip_accents_in_context(texts, path):
    check_texts("Lowercase", normalizers.Lowercase(), hf_chars.lowercase, texts)
    check_texts("StripAccents", normalizers.StripAccents(), hf_chars.strip_accents, texts)
    for left in (False, True):
        for right in (False, True):
            check_texts(f"Strip({left}, {right})", normalizers.Strip(left=left, right=right),
                        lambda text, left=left, right=right: hf_chars.strip(text, left, right), texts)
    for text in ("ΑΣ", "ΑΣ ", "ΑΣ.", "ΣΑ", "Α\u0301Σ", "ΣΣ", "İ", "AİB"):
        assert hf_chars.lowercase(text) == normalizers.Lowercase().normalize_str(text), f"{text!r}: {hint()}"


@pytest.mark.parametrize("clean_text", [False, True])
@pytest.mark.parametrize("handle_chinese_chars", [False, True])
@pytest.mark.parametrize("strip_accents", [None, False, True])
@pytest.mark.parametrize("lowercase", [False, True])
def test_bert_normalizer_in_context(clean_text, handle_chinese_chars, strip_accents, lowercase, texts, path):
    options = {"clean_text": clean_text, "handle_chinese_chars": handle_chinese_chars,
                   "strip_accents": strip_accents, "lowercase": lowercase}
    check_texts(f"BertNormalizer({options})", normalizers.BertNormalizer(**options),
                lambda text: hf_chars.bert_normalize(text, **options), texts[:1500])


def test_whitespace_pre_tokenizer_in_context(texts):
    whitespace = pre_tokenizers.Whitespace()
    differ = [text for text in texts if whitespace.pre_tokenize_str(text) != hf_chars.whitespace_pretokenize(text)]
    assert not differ, f"Whitespace on {[ascii(t) for t in differ[:3]]}: {hint()}"


def test_unknown_form_is_refused():
    with pytest.raises(ValueError):
        hf_chars.normalize("NFX", "a")


def test_the_generator_names_the_tables_release():
    import pathlib

    generator = pathlib.Path(__file__).resolve().parents[2] / "tools" / "gen_hf_chars.py"
    assert f"Read from tokenizers {tables.TOKENIZERS_VERSION} " in generator.read_text()
    assert hf_chars.TOKENIZERS_VERSION == tables.TOKENIZERS_VERSION


def split_by(text: str, predicate, isolated: bool, drop=None) -> list[tuple[str, tuple[int, int]]]:
    """Pieces of `text`: runs of code points where `predicate` holds (each alone when `isolated`) and runs
    where it does not; those `drop` holds for are removed."""
    pieces: list[tuple[int, int]] = []
    for i, char in enumerate(text):
        if drop is not None and drop(char):
            continue
        kind = predicate(char)
        if pieces and pieces[-1][1] == i and pieces[-1][2] == kind and not (kind and isolated):
            pieces[-1] = (pieces[-1][0], i + 1, kind)
        else:
            pieces.append((i, i + 1, kind))
    return [(text[start:end], (start, end)) for start, end, _ in pieces]


def test_digits_punctuation_and_bert_pre_tokenizers_in_context(texts):
    """The predicates as the pre-tokenizers that use them cut texts (BertPreTokenizer: whitespace and
    punctuation)."""
    rng = random.Random(7)
    digits = [chr(cp) for cp in sorted(in_table("NUMERIC"))]
    punct = [chr(cp) for cp in sorted(in_table("PUNCTUATION"))]
    extra = ["".join(rng.choice(digits + punct + list("ab \u3000\u00b2")) for _ in range(8)) for _ in range(2000)]
    cases = {
        "Digits(individual_digits=True)": (pre_tokenizers.Digits(individual_digits=True),
                                           lambda t: split_by(t, hf_chars.is_numeric, True)),
        "Digits(individual_digits=False)": (pre_tokenizers.Digits(individual_digits=False),
                                            lambda t: split_by(t, hf_chars.is_numeric, False)),
        "Punctuation": (pre_tokenizers.Punctuation(behavior="isolated"),
                        lambda t: split_by(t, hf_chars.is_punctuation, True)),
        "BertPreTokenizer": (pre_tokenizers.BertPreTokenizer(),
                             lambda t: split_by(t, hf_chars.is_punctuation, True, hf_chars.is_whitespace)),
    }
    for name, (pre_tokenizer, ours) in cases.items():
        differ = [text for text in texts + extra if pre_tokenizer.pre_tokenize_str(text) != ours(text)]
        assert not differ, f"{name} on {[ascii(t) for t in differ[:3]]}: {hint()}"
