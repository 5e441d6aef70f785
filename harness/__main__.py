"""``python -m arib``: see arib.cli."""

import sys

from arib.cli import main

sys.exit(main())
