"""What a result records of where it was measured: the harness's commit, the lock, the
interpreter and the installed packages."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from arib.ground.family import active_family, plugin_lanes
from arib.ground.package import checkout_root, version


def harness_commit() -> str:
    """The git commit of the harness, with '-dirty' when the work tree has changes."""
    root = checkout_root()
    if root is None:  # an installed wheel: never the commit of the folder the user is in
        return f"installed {version()}"
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def lock_hash(sdk: str) -> str:
    """SHA-256 of the lock file the environment was installed from, or 'unlocked': the file
    ``$ARIB_LOCK`` names (an environment of another lock than the family's version's, a
    third-party lane's), else the family's lock of ``sdk``."""
    named = os.environ.get("ARIB_LOCK")
    path = Path(named) if named else active_family().lock_file(sdk)
    if path is None or not path.exists():
        return "unlocked"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def environment() -> dict[str, Any]:
    """Python, platform and every relevant package version of this process: the family's
    distribution and packages, and the distribution of every installed plugin lane."""
    packages: dict[str, str | None] = {}
    family = active_family()
    # the packages installed lanes measure (a third-party lane names its distribution)
    measured = (getattr(lane, "distribution", "") for lane in plugin_lanes(family.name).loaded)
    for name in dict.fromkeys((family.distribution, *family.packages, *filter(None, measured))):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": packages,
    }
