"""The argument parser of ``lcbayes``: argparse's, with a usage error as one line.

argparse prints the whole usage before an error and (on Python 3.11) suggests nothing for a
misspelt option. Here an error is one line, ``lcbayes fit: error: ...``, with the closest
option or subcommand where one is close (:func:`difflib.get_close_matches`) and where to
find the rest (``--help``); the exit status stays argparse's 2.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import NoReturn

__all__ = ["Parser"]

_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors are one line (module docstring);
    ``words`` are the arguments being parsed (default: the process's)."""

    words: list[str] | None = None

    def error(self, message: str) -> NoReturn:
        hint, prog = self._suggestion(message)
        print(f"{self.prog}: error: {message}{hint} ({prog} --help lists the options)",
              file=sys.stderr)
        sys.exit(2)

    def _options(self) -> tuple[list[str], dict[str, argparse.ArgumentParser]]:
        """This parser's option strings, and its subcommands' parsers by name."""
        options: list[str] = []
        commands: dict[str, argparse.ArgumentParser] = {}
        for action in self._actions:
            options.extend(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                commands.update(action.choices)
        return options, commands

    def _suggestion(self, message: str) -> tuple[str, str]:
        """``"; did you mean --n-classes?"`` for the closest option of the subcommand run
        (or the closest subcommand), else nothing; and the program whose ``--help`` lists
        the options."""
        options, commands = self._options()
        if message.endswith("expected one argument"):
            option = message.split()[1].rstrip(":")
            return (f"; a value that starts with - goes after =, e.g. {option}=-99",
                    self.prog)
        if match := _INVALID_CHOICE.search(message):
            close = difflib.get_close_matches(match.group(1), list(commands), n=1)
            return (f"; did you mean {close[0]!r}?" if close else ""), self.prog
        if not (match := _UNRECOGNIZED.search(message)):
            return "", self.prog
        # the top-level parser reports a subcommand's unknown options: look in the one run
        words = sys.argv[1:] if self.words is None else self.words
        command = next((commands[a] for a in words if a in commands), None)
        prog = self.prog
        if command is not None:
            options = [s for action in command._actions for s in action.option_strings]
            prog = command.prog
        hints = []
        for word in match.group(1).split():
            name = word.split("=", 1)[0]
            if name.startswith("-"):
                close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
                if close:
                    hints.append((close[0], name))
        if len(hints) == 1:
            return f"; did you mean {hints[0][0]}?", prog
        listed = ", ".join(f"{option} (for {name})" for option, name in hints)
        return (f"; did you mean {listed}?" if hints else ""), prog
