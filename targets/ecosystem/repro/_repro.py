"""Shared by the reproduction scripts: their exit code, kept apart from a crash.

`python -m arib ecosystem confirm` reads exit 1 as "reproduced" and 0 as "not reproduced"; an
uncaught exception also makes Python exit 1, so ``run`` turns one into exit 2 (confirms
nothing) after printing it.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

REPRODUCED, NOT_REPRODUCED, CRASHED = 1, 0, 2


def run(main: Callable[[], bool]) -> None:
    """Exit 1 when ``main`` returns True (it saw the violation), 0 when False, 2 when it
    raised."""
    try:
        seen = main()
    except Exception:  # noqa: BLE001 - any crash confirms nothing
        traceback.print_exc()
        print("CRASHED: the script did not finish; this confirms nothing")
        sys.exit(CRASHED)
    print("REPRODUCED" if seen else "NOT REPRODUCED")
    sys.exit(REPRODUCED if seen else NOT_REPRODUCED)
