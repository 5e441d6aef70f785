"""The cross-version heat map: lanes x invariants, one panel per SDK version, as SVG.

Every panel names its lanes (left) and its invariants (under it), so a panel read alone is
whole; a cell no run measured is hatched, unlike the page around it and unlike "not
applicable" (grey).

matplotlib is optional (the ``report`` extra); it is imported only to draw, so that
``python -m arib compare`` still writes the Markdown without it and says why there is no
picture. The same documents give the same bytes: a fixed font, size and hash salt, no date.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from arib.ground.invocations import REPORT_REQUIREMENTS
from arib.ground.keys import Cell

# category -> colour, in the legend's order.
COLOURS = {
    "held": "#4d9a57",
    "violated-some": "#f0a04b",
    "violated-every": "#c8322d",
    "not-applicable": "#c4c4c4",
    "error": "#6a3d9a",
    "not-measured": "#ffffff",
}
# category -> hatch: only "not measured" is hatched (grey lines on white), so it is neither the
# page's white nor "not applicable"'s grey.
HATCHES = {"not-measured": "////"}
NAMES = {
    "held": "held", "violated-some": "violated in some trials",
    "violated-every": "violated in every trial", "not-applicable": "not applicable",
    "error": "error (not judged)", "not-measured": "not measured",
}
LEGEND = ("green held, orange violated in some trials, red violated in every trial, grey not "
          "applicable, purple error, white hatched not measured")
EDGE = "#888888"
HATCH = "#8c8c8c"  # the colour of the hatch lines
CELL_PT = 12  # the side of one cell, in points (72 to the inch)
RC = {"font.family": "DejaVu Sans", "font.size": 7.0, "svg.hashsalt": "arib-cross-version",
      "svg.fonttype": "none", "path.simplify": False, "hatch.linewidth": 0.6}


def category(finding: Mapping[str, Any] | None) -> str:
    """The colour category of one cell: its verdict, a violation split by its trials."""
    if finding is None:
        return "not-measured"
    verdict = finding["verdict"]
    if verdict == "violated":
        every = finding["violating_trials"] >= finding["trials"]
        return "violated-every" if every else "violated-some"
    return {"held": "held", "not_applicable": "not-applicable"}.get(verdict, "error")


def unavailable() -> str | None:
    """Why the heat map cannot be drawn here (matplotlib missing), or None when it can."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return (f"matplotlib is not installed ({exc}); install the `report` extra: "
                f"`pip install {' '.join(REPORT_REQUIREMENTS)}` (`nox -s bench` installs it)")
    return None


def grid(docs: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The lanes (rows) and invariants (columns) of the picture: every one any version has."""
    found = {Cell.of(f) for d in docs for f in d["findings"]}
    return sorted({c.lane for c in found}), sorted({c.check_id for c in found})


def _cells_path(origins: Sequence[tuple[int, int]]) -> Any:
    """One compound path of unit squares centred on ``origins`` (x, y): a category's cells."""
    from matplotlib.path import Path

    vertices, codes = [], []
    for x, y in origins:
        vertices += [(x - 0.5, y - 0.5), (x + 0.5, y - 0.5), (x + 0.5, y + 0.5),
                     (x - 0.5, y + 0.5), (x - 0.5, y - 0.5)]
        codes += [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    return Path(vertices, codes)


def _panel(ax: Any, doc: Mapping[str, Any], lanes: Sequence[str],
           checks: Sequence[str]) -> None:
    """One version's panel: a compound path per category (SVG group
    ``cells-<version>-<category>``, one subpath per cell), grid lines, the lanes' names on the
    left and the invariants' names under it."""
    from matplotlib.patches import PathPatch

    version = doc["sdk"]["version"]
    found = {Cell.of(f): f for f in doc["findings"]}
    origins: dict[str, list[tuple[int, int]]] = {name: [] for name in COLOURS}
    for y, lane in enumerate(lanes):
        for x, check in enumerate(checks):
            origins[category(found.get(Cell(check, lane)))].append((x, y))
    for name, cells in origins.items():
        if cells:
            # edgecolor is the hatch's colour here (linewidth 0 draws no edge)
            ax.add_patch(PathPatch(_cells_path(cells), facecolor=COLOURS[name],
                                   edgecolor=HATCH, hatch=HATCHES.get(name), linewidth=0,
                                   gid=f"cells-{version}-{name}"))
    ax.hlines([y - 0.5 for y in range(len(lanes) + 1)], -0.5, len(checks) - 0.5,
              colors=EDGE, linewidth=0.3)
    ax.vlines([x - 0.5 for x in range(len(checks) + 1)], -0.5, len(lanes) - 0.5,
              colors=EDGE, linewidth=0.3)
    ax.set_xlim(-0.5, len(checks) - 0.5)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes)), labels=lanes, fontsize=6)
    ax.set_xticks(range(len(checks)), labels=checks, rotation=90, fontsize=6)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"{doc['sdk']['name']} {version}", loc="left", fontsize=8,
                 gid=f"title-{version}")


def heatmap_svg(docs: Sequence[Mapping[str, Any]]) -> str:
    """The heat map of ``docs`` (ordered by version) as SVG text: one panel per version, each
    with its title above, its lanes' names left of it and its invariants' names under it.

    The geometry is in whole points (a cell is 12 pt), so the SVG's coordinates are short.
    """
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    lanes, checks = grid(docs)
    left = 18 + 4 * max(map(len, lanes), default=4)
    names = 10 + 4 * max(map(len, checks), default=4)  # the invariants' names under a panel
    top, title, gap, right, bottom = 30, 16, 10, 18, 8
    width = max(left + CELL_PT * len(checks) + right, 540)  # room for the legend
    tall = CELL_PT * len(lanes)
    block = title + tall + names  # one panel with its title and its names
    height = top + len(docs) * block + (len(docs) - 1) * gap + bottom
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width / 72, height / 72))
        for i, doc in enumerate(docs):
            y = height - top - i * (block + gap) - title - tall
            ax = fig.add_axes((left / width, y / height, CELL_PT * len(checks) / width,
                               tall / height))
            _panel(ax, doc, lanes, checks)
        fig.legend(handles=[Patch(facecolor=c, edgecolor=EDGE, hatch=HATCHES.get(n),
                                  label=NAMES[n]) for n, c in COLOURS.items()],
                   loc="upper center", ncol=len(COLOURS), frameon=False, fontsize=6.5)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()
