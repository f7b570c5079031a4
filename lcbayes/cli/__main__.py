"""``python -m lcbayes.cli``: the ``lcbayes`` command."""

from . import entry

entry()
