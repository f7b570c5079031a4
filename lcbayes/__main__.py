"""``python -m lcbayes``: the ``lcbayes`` command (:mod:`lcbayes.cli`)."""

from .cli import entry

entry()
