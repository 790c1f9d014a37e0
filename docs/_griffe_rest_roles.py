"""A griffe extension for the API reference: the package's docstrings cite other objects
with reStructuredText roles (:func:`estimate`, :class:`~er_evaluation.sampling.Sample`);
Markdown has no roles, so each becomes a code span of the object's name (the last dotted
part when the target starts with ``~``, as in Sphinx)."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|exc|obj):`(~?)([^`]+)`")


def _code_span(match: re.Match) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class RestRoles(griffe.Extension):
    """Rewrite the roles of every docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code_span, obj.docstring.value)
