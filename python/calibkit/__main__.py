"""``python -m calibkit``: the same as the ``calibkit`` command (see :mod:`calibkit.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
