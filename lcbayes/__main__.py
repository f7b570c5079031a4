"""``python -m lcbayes``: the ``lcbayes`` command (:mod:`lcbayes.cli`)."""

import sys

from .cli import main

sys.exit(main())
