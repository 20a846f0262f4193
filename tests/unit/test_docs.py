"""The documentation's cross-references resolve: every relative link in the Markdown files names a file that
exists, and a `#section` in it a heading that file has; the README stays a front page (at most 250 lines),
and its recipes run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
DOCUMENTS = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md")), CHECKOUT / "benchmarks" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path: Path) -> set[str]:
    return {anchor(line.lstrip("#")) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(CHECKOUT)))
def test_every_relative_link_resolves(document):
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file, _, section = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif section and path.suffix == ".md" and section not in headings(path):
            broken.append(f"{target}: no such section")
    assert not broken, f"{document.name}: " + "; ".join(broken)


def test_the_readme_is_a_front_page():
    assert len((CHECKOUT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_the_planted_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n[ok](#title) [gone](missing.md) [bad](#nowhere)\n")
    targets = LINK.findall(page.read_text())
    assert targets == ["#title", "missing.md", "#nowhere"]
    assert "title" in headings(page) and "nowhere" not in headings(page)


def test_the_readmes_recipes_run_as_written():
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Recipes", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md#recipes", "exec"), namespace)     # noqa: S102 (the README's own code)
    assert namespace["printed"] == "日本語 😀" and namespace["eot"] == 199999
