"""``python -m lcbayes.cli``: the ``lcbayes`` command."""

import sys

from . import main

sys.exit(main())
