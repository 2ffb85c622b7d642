"""``python -m components.cli``: the ``gpu-platform`` command."""

import sys

from .main import main

sys.exit(main())
