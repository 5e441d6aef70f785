"""An HTML kill matrix shown by the standard mutation-testing-elements viewer.

The viewer is not part of this repository: the first time a report is built, ``npm pack``
fetches the pinned ``mutation-testing-elements`` tarball from the npm registry into
``<ARIB_CACHE_DIR>/npm`` (default ``.arib-cache/npm`` under the working directory, gitignored;
always made absolute, because npm runs with that folder as its working directory), its sha512
is checked against the pinned integrity, and later reports reuse it. Its browser bundle
``dist/mutation-test-elements.js`` (with the package's LICENSE) is copied next to
``report.html``. ``fetch_viewer()`` gets it up front, so that a long survey fails before it
starts, not after, when the viewer cannot be had. The report JSON is inlined in the page and
bound to the ``report`` property of ``<mutation-test-report-app>``, so the page also works
from ``file://``, where a ``src`` fetch of a local JSON file would be blocked.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError
from arib.ground.files import atomic_write_text
from arib.reports.mutation import validate_mutation_report

VIEWER_PACKAGE = "mutation-testing-elements"
VIEWER_VERSION = "3.9.0"
# The registry's integrity of mutation-testing-elements-3.9.0.tgz (npm view ... dist.integrity).
VIEWER_INTEGRITY = (
    "sha512-3G4GhBO8Wc/ZrqOJ5uT8AbM1h/ew9kfX0MIlpy59gWu/amMZyKH3TreKAOMwwXNibhZMOL7A3n5nFvhYWLdtYQ=="
)
BUNDLE_MEMBER = "package/dist/mutation-test-elements.js"
LICENSE_MEMBER = "package/LICENSE"
BUNDLE_NAME = "mutation-test-elements.js"
LICENSE_NAME = "mutation-test-elements.LICENSE.txt"
NPM_TIMEOUT_S = 180.0


class ViewerUnavailableError(ResultsError):
    """The viewer bundle could not be obtained from the npm registry (npm missing, offline)."""


def cache_dir() -> Path:
    """Where the viewer tarball is kept between runs: an absolute path.

    ``ARIB_CACHE_DIR`` may be relative (to the working directory, like the default); it is
    resolved here because ``npm pack`` runs inside this folder and would read a relative
    ``--pack-destination`` from there.
    """
    return (Path(os.environ.get("ARIB_CACHE_DIR", ".arib-cache")).expanduser() / "npm").resolve()


def _tarball(cache: Path) -> Path:
    return cache / f"{VIEWER_PACKAGE}-{VIEWER_VERSION}.tgz"


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _npm_pack(cache: Path) -> None:
    npm = shutil.which("npm")
    spec = f"{VIEWER_PACKAGE}@{VIEWER_VERSION}"
    if npm is None:
        raise ViewerUnavailableError(
            f"cannot build the HTML mutation report: `npm` is not on PATH, and it is needed "
            f"once to fetch the viewer {spec}; install Node.js/npm (e.g. `apt-get install -y "
            f"npm`) or put the tarball at {_tarball(cache)}"
        )
    cache = cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    try:
        proc = subprocess.run(
            [npm, "pack", spec, "--pack-destination", str(cache.resolve()), "--silent"],
            cwd=cache, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ViewerUnavailableError(
            f"`npm pack {spec}` did not finish in {NPM_TIMEOUT_S:.0f}s; check access to the "
            f"npm registry (`npm config get registry`) or put the tarball at {_tarball(cache)}"
        ) from None
    if proc.returncode != 0 or not _tarball(cache).is_file():
        detail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise ViewerUnavailableError(
            f"`npm pack {spec}` failed (exit {proc.returncode}: {detail or 'no output'}); "
            f"check access to the npm registry (`npm config get registry`, proxy settings) "
            f"or put the tarball at {_tarball(cache)}"
        )


def viewer_tarball(cache: Path | None = None) -> bytes:
    """The pinned viewer tarball, fetched once with ``npm pack`` and checked by its sha512."""
    cache = cache or cache_dir()
    path = _tarball(cache)
    if path.is_file() and _integrity(path.read_bytes()) != VIEWER_INTEGRITY:
        path.unlink()  # a corrupt or foreign cache entry: fetch it again
    if not path.is_file():
        _npm_pack(cache)
    data = path.read_bytes()
    if _integrity(data) != VIEWER_INTEGRITY:
        path.unlink()
        raise ViewerUnavailableError(
            f"the downloaded {path.name} does not match the pinned integrity "
            f"{VIEWER_INTEGRITY[:23]}...; the registry served other bytes than the published "
            f"{VIEWER_PACKAGE}@{VIEWER_VERSION}: check the registry (`npm config get registry`)"
        )
    return data


def fetch_viewer() -> dict[str, bytes]:
    """The viewer's bundle and license (fetched once, then cached); ViewerUnavailableError.

    Called before a long run that ends in an HTML report, so that it fails in seconds.
    """
    return _members(viewer_tarball())


def _members(tarball: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        for name in (BUNDLE_MEMBER, LICENSE_MEMBER):
            member = tar.extractfile(name)
            if member is None:
                raise ViewerUnavailableError(f"{VIEWER_PACKAGE} tarball has no {name}")
            out[name] = member.read()
    return out


def _inline_json(report: Mapping[str, Any]) -> str:
    """JSON that is safe inside a <script> element (no '<', '>' or '&' left raw)."""
    text = json.dumps(report, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kill matrix - agent integrity bench</title>
<script src="{bundle}"></script>
</head>
<body>
<mutation-test-report-app title-postfix="arib kill matrix"></mutation-test-report-app>
<script type="application/json" id="arib-mutation-report">{report}</script>
<script>
  const app = document.querySelector("mutation-test-report-app");
  const data = document.getElementById("arib-mutation-report").textContent;
  app.report = JSON.parse(data);
  const paint = () => {{ document.body.style.backgroundColor = app.themeBackgroundColor; }};
  app.addEventListener("theme-changed", paint);
  paint();
</script>
</body>
</html>
"""


def render_page(report: Mapping[str, Any], bundle: str = BUNDLE_NAME) -> str:
    """The HTML page that shows ``report`` with the viewer bundle at ``bundle``."""
    return PAGE.format(bundle=bundle, report=_inline_json(report))


def check_out_dir(out_dir: Path) -> None:
    """Refuse an ``out_dir`` that is a file or cannot be created or written (UsageError)."""
    from arib.ground.errors import UsageError

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"HTML report folder {str(out_dir)!r} cannot be created ({exc.strerror or exc}); "
            "the rule: it must be a folder you can write; fix: name another --html/--out folder"
        ) from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise UsageError(
            f"HTML report folder {str(out_dir)!r} is not writable; the rule: it must be a "
            "folder you can write; fix: name another --html/--out folder"
        )


def write_html(report: dict[str, Any], out_dir: Path) -> Path:
    """Write ``report.html`` and the viewer bundle into ``out_dir``; returns the page's path."""
    validate_mutation_report(report)
    members = fetch_viewer()
    check_out_dir(out_dir)
    (out_dir / BUNDLE_NAME).write_bytes(members[BUNDLE_MEMBER])
    (out_dir / LICENSE_NAME).write_bytes(members[LICENSE_MEMBER])
    page = out_dir / "report.html"
    atomic_write_text(page, render_page(report))
    page.chmod(0o644)  # readable like the files beside it (the atomic write makes it 0600)
    return page


def write_html_from_file(report_json: Path, out_dir: Path) -> Path:
    """Build the HTML report from a mutation-report JSON file written by ``survey --write``."""
    try:
        report = json.loads(report_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(
            f"cannot read mutation report {str(report_json)!r}: {exc}; the rule: a "
            "mutation-testing-report-schema JSON (survey --write writes mutation-report.json); "
            "fix: name such a file"
        ) from None
    if not isinstance(report, dict):
        raise ResultsError(
            f"mutation report {str(report_json)!r} holds a JSON {type(report).__name__}, not "
            "an object; fix: name the mutation-report.json that survey --write wrote"
        )
    return write_html(report, out_dir)
