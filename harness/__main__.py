"""``python -m arib``: see arib.cli.main."""

import sys

from arib.cli.main import main

sys.exit(main())
