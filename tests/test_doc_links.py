"""The documentation holds together: every relative link and #anchor of README.md and of every
README.md page resolves (the file exists, the anchor is a heading of it), and the top README
stays short, with the two commands CI and users rely on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"node_modules", "__pycache__", "build", "dist"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
COMMANDS = (
    "python3 -m pip install -r .ci/tools.txt && nox -s bench",
    "python3 -m pip install -r .ci/tools.txt && nox -s selftest slowtest langgraph",
)


def pages() -> list[Path]:
    """README.md and every README.md below it, outside hidden and build folders."""
    return sorted(p for p in ROOT.rglob("README.md")
                  if not any(part.startswith(".") or part in SKIP
                             for part in p.relative_to(ROOT).parts[:-1]))


def prose(text: str) -> str:
    """The text without fenced code blocks (links and headings inside them are code)."""
    return FENCE.sub("", text)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces as
    hyphens; a repeated heading gets -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(text).splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(text: str) -> list[str]:
    return LINK.findall(CODE.sub("x", prose(text)))


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """The links of a page that do not resolve, each with the reason (paths relative to
    ``root``)."""
    bad = []
    for target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto: - not checked offline
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            bad.append(f"{target}: no file {file.relative_to(root)}")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file.read_text())):
            bad.append(f"{target}: no heading #{anchor} in {file.relative_to(root)}")
    return bad


def test_the_pages_are_found():
    names = {str(p.relative_to(ROOT)) for p in pages()}
    assert {"README.md", "checks/README.md", "mutants/README.md", "targets/README.md",
            "harness/README.md", "results/README.md"} <= names


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path):
    assert broken(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path):
    (tmp_path / "other.md").write_text("# A page\n\n## Its part: one\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](other.md#its-part-one) [self](#top) [gone](missing.md) "
                    "[no](other.md#nowhere) `[code](skipped.md)`\n\n# Top\n\n```\n[x](y.md)\n```\n")
    assert broken(page, tmp_path) == ["missing.md: no file missing.md",
                                      "other.md#nowhere: no heading #nowhere in other.md"]


def test_anchors_follow_github():
    text = ("# The survey: what the suite cannot see\n## `arib.api` (LangGraph)\n"
            "## Limits\n## Limits\n")
    assert anchors(text) == {"the-survey-what-the-suite-cannot-see", "aribapi-langgraph",
                             "limits", "limits-1"}


def test_readme_is_short_and_keeps_its_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    head = text.split("\n## ", 1)[0]
    for command in COMMANDS:
        assert command in head
