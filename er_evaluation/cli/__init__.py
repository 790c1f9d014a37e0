"""``er-eval``: the command-line interface.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable
taking the parsed ``argparse.Namespace`` and returning an exit code).

Every failure ends in one line on stderr, ``er-eval COMMAND: error: ...``, naming the
file, column or flag at fault, and exit code 1; ``--traceback`` shows the Python
traceback instead (for bug reports).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import warnings

from er_evaluation import __version__, _progress
from er_evaluation.cli._common import flag_terms, resolve_output_format
from er_evaluation.errors import suggest


class Parser(argparse.ArgumentParser):
    """argparse's parser with the closest valid name in the error on a mistyped flag,
    command or choice (``did you mean '--metrics'?``)."""

    def error(self, message: str):
        super().error(message + _suggestion(message, self))


def _suggestion(message: str, parser: argparse.ArgumentParser) -> str:
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        return suggest([choice.group(1)], re.findall(r"'([^']*)'", choice.group(2)))
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
        given = [t.split("=")[0] for t in unknown.group(1).split() if t.startswith("-")]
        return suggest(given, flags)
    return ""


def _command_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` ran: ``er-eval review status``'s own."""
    while True:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, actions[0].dest, None) if actions else None
        if name is None:
            return parser
        parser = actions[0].choices[name]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="er-eval",
        description="Evaluate entity resolution: exact metrics, summaries and sampling-based "
        "estimates with confidence intervals. 'er-eval COMMAND --help' documents each command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an error, show the Python traceback instead of one line (for bug reports)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help=_QUIET)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        importlib.import_module(f"{__name__}.{module.name}").register(subparsers)
    for command in subparsers.choices.values():
        _add_quiet(command)
    return parser


_QUIET = "no progress bars (they are drawn on stderr, only on a terminal)"


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    """--quiet on every command, also after the command's own arguments (SUPPRESS keeps a
    --quiet given before the command)."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subcommands:
        for sub in subcommands[0].choices.values():
            _add_quiet(sub)
        return
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=_QUIET
    )


def _bars_on(args: argparse.Namespace) -> bool:
    """Progress bars unless --quiet or a machine-readable table goes to stdout (a bar
    never mixes with CSV or JSON on one terminal)."""
    machine = getattr(args, "format", None) in ("csv", "json") and not getattr(args, "output", None)
    return not (args.quiet or machine)


def error_line(error: BaseException) -> str:
    """One line for ``error``: an OS error as ``FILE: reason`` (no ``[Errno 2]``), a
    library error as its message, anything else prefixed by its type."""
    if isinstance(error, OSError):
        reason = error.strerror or str(error)
        if error.filename is not None:
            target = f" -> {error.filename2}" if error.filename2 is not None else ""
            return f"{error.filename}{target}: {reason}"
        return reason
    if isinstance(error, (ValueError, KeyError)):
        text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
        return _one_line(text) if "\n" in text.strip() else text
    return f"{type(error).__name__}: {error}"


def _one_line(text: str) -> str:
    """A message of several lines (e.g. one per invalid row) as one line whose parts stay
    apart: ``head: part; part; part``."""
    lines = [" ".join(line.split()) for line in text.strip().splitlines() if line.strip()]
    head, rest = lines[0], lines[1:]
    return head + (" " if head.endswith(":") else "; ") + "; ".join(rest)


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The library name behind every option of ``parser`` and of its sub-commands'
    parsers, mapped to the option: ``half_width`` to ``--half-width``, and an option's
    ``dest`` when it is the library's name for it (``n_strata`` to ``--strata``)."""
    found: dict[str, str] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        for option in longs:
            found[option[2:].replace("-", "_")] = option
        if longs and action.dest not in found:
            found[action.dest] = longs[0]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # named by the command's parser, which knows the flags a typo missed
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extras)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    options = _options(parser._subparsers._group_actions[0].choices[args.command])
    shown = warnings.formatwarning
    # warnings reach a command-line user as one line each in flag terms, not as Python
    # source locations
    warnings.formatwarning = lambda message, category, *_, **__: (
        f"er-eval {args.command}: {category.__name__}: "
        f"{flag_terms(' '.join(str(message).split()), options)}\n"
    )
    try:
        resolve_output_format(args)
        with _progress.enabled(_bars_on(args)):
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"er-eval {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if args.traceback:
            raise
        message = flag_terms(error_line(error), options)
        print(f"er-eval {args.command}: error: {message}", file=sys.stderr)
        return 1
    finally:
        warnings.formatwarning = shown


if __name__ == "__main__":
    sys.exit(main())
