"""``python -m components.cli``: the ``gpu-platform`` command."""

import sys

from components.cli.main import main

sys.exit(main())
