"""The cross-version heat map: categories, the SVG's cells, determinism, and Chromium's view."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from arib.cli.main import main
from arib.ground.invocations import REPORT_REQUIREMENTS
from arib.reports import heatmap
from tests.test_mutation_report import CHROMIUM, chromium

ROOT = Path(__file__).resolve().parents[1]
Cells = dict[tuple[str, str], tuple[str, int, int]]  # (check, lane) -> (verdict, k, n)


def run_doc(version: str, cells: Cells) -> dict[str, Any]:
    """A small synthetic whole run: the fields the cross-version report and the picture read."""
    lanes = sorted({lane for _, lane in cells})
    checks = sorted({check for check, _ in cells})
    findings = [{"invariant_id": c, "target": lane, "verdict": v, "violating_trials": k,
                 "trials": n, "counts": {"lost": k}, "samples": [f"lost {k} in {c}"] if k else []}
                for (c, lane), (v, k, n) in cells.items()]
    coverage = {"lanes_selected": lanes, "lanes_measured": lanes, "checks_selected": checks,
                "checks_admitted": checks, "every_lane": True, "every_check": True,
                "complete": True}
    return {"sdk": {"name": "openai-agents", "version": version}, "findings": findings,
            "coverage": coverage}


OLD: Cells = {("ARIB-A-001", "lane-a"): ("violated", 3, 3),
              ("ARIB-A-001", "lane-b"): ("held", 0, 3),
              ("ARIB-B-001", "lane-a"): ("held", 0, 2), ("ARIB-B-001", "lane-b"): ("error", 0, 2),
              ("ARIB-C-001", "lane-a"): ("not_applicable", 0, 1)}
NEW: Cells = {**OLD, ("ARIB-A-001", "lane-a"): ("held", 0, 3),
              ("ARIB-A-001", "lane-b"): ("violated", 1, 3),
              ("ARIB-C-001", "lane-b"): ("held", 0, 1)}


def subpaths(svg: str) -> dict[str, int]:
    """Cells drawn per SVG group ``cells-<version>-<category>``: one closed subpath each."""
    groups = re.findall(r'<g id="(cells-[^"]+)">\s*<path d="([^"]*)"', svg)
    return {gid: d.count("z") for gid, d in groups}


def test_category_of_each_verdict() -> None:
    assert heatmap.category(None) == "not-measured"
    assert heatmap.category({"verdict": "held"}) == "held"
    assert heatmap.category({"verdict": "not_applicable"}) == "not-applicable"
    assert heatmap.category({"verdict": "error"}) == "error"
    assert heatmap.category({"verdict": "violated", "violating_trials": 3,
                             "trials": 3}) == "violated-every"
    assert heatmap.category({"verdict": "violated", "violating_trials": 1,
                             "trials": 3}) == "violated-some"


def test_every_cell_is_drawn_once_in_its_colour_and_the_bytes_repeat() -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    svg = heatmap.heatmap_svg([run_doc("0.1.0", OLD), run_doc("0.2.0", NEW)])
    assert subpaths(svg) == {
        "cells-0.1.0-held": 2, "cells-0.1.0-violated-every": 1, "cells-0.1.0-error": 1,
        "cells-0.1.0-not-applicable": 1, "cells-0.1.0-not-measured": 1,
        "cells-0.2.0-held": 3, "cells-0.2.0-violated-some": 1, "cells-0.2.0-error": 1,
        "cells-0.2.0-not-applicable": 1,
    }
    assert svg == heatmap.heatmap_svg([run_doc("0.1.0", OLD), run_doc("0.2.0", NEW)])
    assert "<dc:date>" not in svg and "openai-agents 0.2.0" in svg


def test_every_panel_names_its_lanes_and_checks() -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    versions = ("0.1.0", "0.2.0", "0.3.0")
    svg = heatmap.heatmap_svg([run_doc(v, NEW) for v in versions])
    labels = [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    for name in ("lane-a", "lane-b", "ARIB-A-001", "ARIB-B-001", "ARIB-C-001"):
        assert labels.count(name) == len(versions), name


def test_not_measured_alone_is_hatched_in_the_cells_and_the_legend() -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    svg = heatmap.heatmap_svg([run_doc("0.1.0", OLD)])
    fills = dict(re.findall(r'<g id="cells-0\.1\.0-([a-z-]+)">\s*<path d="[^"]*"\s*'
                            r'clip-path="[^"]*"\s*style="fill: ([^;"]+)', svg))
    assert set(fills) == {"held", "violated-every", "error", "not-applicable", "not-measured"}
    assert fills["not-measured"].startswith("url(#h")  # a pattern: the hatch
    assert not any(f.startswith("url(") for c, f in fills.items() if c != "not-measured")
    assert len(set(fills.values())) == len(fills)
    assert "white hatched not measured" in heatmap.LEGEND
    legend = svg[svg.index('<g id="legend_1">'):]
    assert legend.count("fill: url(#h") == 1  # the legend's "not measured" swatch


def test_report_extra_admits_the_release_nox_installs() -> None:
    from packaging.requirements import Requirement

    line = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines()
                if line.startswith("report = "))
    extra = [Requirement(r) for r in json.loads(line.removeprefix("report = "))]
    pins = [Requirement(r) for r in REPORT_REQUIREMENTS]
    assert [r.name for r in extra] == [p.name for p in pins]
    for wanted, pin in zip(extra, pins, strict=True):
        (version,) = [s.version for s in pin.specifier]
        assert wanted.specifier.contains(version), (wanted, pin)


def test_without_matplotlib_the_reason_and_the_fix_are_given(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    reason = heatmap.unavailable()
    assert reason is not None and "matplotlib is not installed" in reason
    assert REPORT_REQUIREMENTS[0] in reason


def write_runs(folder: Path) -> list[str]:
    """The two synthetic runs as result files: the arguments of `compare`."""
    args = []
    for doc in (run_doc("0.1.0", OLD), run_doc("0.2.0", NEW)):
        path = folder / f"run-{doc['sdk']['version']}.json"
        path.write_text(json.dumps(doc))
        args.append(str(path))
    return args


@pytest.fixture
def unvalidated(monkeypatch):
    """Synthetic runs lack most of a real run's fields: read them without the schema check."""
    monkeypatch.setattr("arib.runs.compare.read_results",
                        lambda path: json.loads(Path(path).read_text()))


def test_compare_writes_the_picture_beside_the_markdown(tmp_path, capsys, unvalidated) -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    args = write_runs(tmp_path)
    assert main(["compare", *args, "--report", str(tmp_path / "x.md")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'x.svg'} (the heat map)" in out
    text = (tmp_path / "x.md").read_text()
    assert "](x.svg)" in text and "No picture" not in text
    first = (tmp_path / "x.svg").read_bytes()
    assert main(["compare", *args, "--report", str(tmp_path / "x.md")]) == 0
    assert (tmp_path / "x.svg").read_bytes() == first


def test_compare_without_matplotlib_says_so_and_writes_the_markdown(tmp_path, capsys,
                                                                   monkeypatch,
                                                                   unvalidated) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["compare", *write_runs(tmp_path), "--report", str(tmp_path / "x.md")]) == 0
    out = capsys.readouterr().out
    assert "picture not drawn: matplotlib is not installed" in out
    text = (tmp_path / "x.md").read_text()
    assert "No picture: matplotlib is not installed" in text and ".svg)" not in text
    assert "## Every row" in text and not (tmp_path / "x.svg").exists()


# Test-only probe: the page shows the picture as the Markdown references it (an <img>, which
# fires onerror on SVG that does not parse) and inline, where the probe counts the cells of
# each category group, measures the rendered size of each group and counts the text labels.
PROBE = """<script>
window.addEventListener("load", () => {
  const img = document.getElementById("picture");
  const cells = {};
  for (const g of document.querySelectorAll('svg g[id^="cells-"]')) {
    const box = g.getBBox();
    cells[g.id] = {subpaths: (g.querySelector("path").getAttribute("d").match(/z/g) || []).length,
                   drawn: box.width > 0 && box.height > 0};
  }
  const labels = [...document.querySelectorAll("svg text")]
    .filter((t) => t.getComputedTextLength() > 0).map((t) => t.textContent.trim());
  const pre = document.createElement("pre");
  pre.id = "arib-probe";
  pre.textContent = JSON.stringify({loaded: img.complete && img.naturalWidth > 0,
                                    cells, labels});
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_renders_the_picture_the_markdown_references(tmp_path, unvalidated) -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    assert main(["compare", *write_runs(tmp_path), "--report", str(tmp_path / "x.md")]) == 0
    (ref,) = re.findall(r"!\[[^]]*\]\(([^)]+)\)", (tmp_path / "x.md").read_text())
    svg = (tmp_path / ref).read_text()
    inline = svg[svg.index("<svg"):]
    page = tmp_path / "page.html"
    page.write_text(f'<!doctype html><html><body><img id="picture" src="{ref}">{inline}'
                    f"{PROBE}</body></html>")
    proc = chromium("--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
                    profile=tmp_path / "profile")
    found = re.search(r'<pre id="arib-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the page rendered no probe: {proc.stderr[-2000:]}"
    shown = json.loads(html.unescape(found.group(1)))
    assert shown["loaded"], "Chromium could not load the SVG the Markdown references"
    assert {gid: c["subpaths"] for gid, c in shown["cells"].items()} == subpaths(svg)
    assert all(c["drawn"] for c in shown["cells"].values())
    assert sum(c["subpaths"] for c in shown["cells"].values()) == 2 * 2 * 3  # versions x grid
    for label in ("lane-a", "lane-b", "ARIB-A-001", "ARIB-C-001", "openai-agents 0.1.0",
                  "openai-agents 0.2.0", "violated in every trial", "not measured"):
        assert label in shown["labels"]
    for label in ("lane-a", "lane-b", "ARIB-A-001", "ARIB-B-001", "ARIB-C-001"):
        assert shown["labels"].count(label) == 2, label  # once per version's panel


def first_cell(svg: str, gid: str) -> tuple[float, float, float, float]:
    """The box (x0, y0, x1, y1, in the SVG's units) of the first cell of group ``gid``."""
    d = re.search(rf'<g id="{re.escape(gid)}">\s*<path d="([^z]*)z', svg)
    assert d, gid
    points = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d.group(1))]
    xs, ys = points[0::2], points[1::2]
    return min(xs), min(ys), max(xs), max(ys)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_shows_not_measured_apart_from_the_page_and_not_applicable(tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")
    from matplotlib.image import imread

    svg = heatmap.heatmap_svg([run_doc("0.1.0", OLD)])
    (tmp_path / "x.svg").write_text(svg)
    width, height = (float(v) for v in re.findall(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)[0])
    px = 4 / 3  # one SVG unit is one point: 4/3 CSS pixels at a device scale of 1
    shot = tmp_path / "x.png"
    chromium("--hide-scrollbars", "--force-device-scale-factor=1",
             f"--window-size={int(width * px) + 1},{int(height * px) + 1}",
             f"--screenshot={shot}", (tmp_path / "x.svg").as_uri(), profile=tmp_path / "profile")
    image = imread(shot)[:, :, :3] * 255

    def shown(gid: str) -> Any:
        """The pixels Chromium drew inside the first cell of ``gid`` (2 points in from its edge)."""
        x0, y0, x1, y1 = first_cell(svg, gid)
        return image[int((y0 + 2) * px):int((y1 - 2) * px), int((x0 + 2) * px):int((x1 - 2) * px)]

    page = image[2, 2]  # the top left corner: the page's background
    unmeasured, na = shown("cells-0.1.0-not-measured"), shown("cells-0.1.0-not-applicable")
    assert unmeasured.size and na.size
    assert (page == 255).all()
    # Hatched: lines on white, so the cell varies and is darker on average than the page...
    assert unmeasured.std() > 10 and page.mean() - unmeasured.mean() > 8
    # ...while "not applicable" is one flat grey, and no cell of it looks like the page.
    assert na.std() < 2 and (page.mean() - na.mean()) > 40
