"""The exception tree drawn in errors.py's docstring is the tree of its classes."""

from __future__ import annotations

import re

from autopoiesis import errors


def test_the_tree_drawn_in_errors_docstring_is_the_class_tree() -> None:
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.fullmatch(r"    ([│├└─ ]*)([A-Za-z]+)(?: \*)?", line)
        if m:
            depth = len(m.group(1)) // 4
            path[depth:] = [m.group(2)]
            parents[m.group(2)] = path[depth - 1] if depth else None
    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, errors.AutopoiesisError)
    }
    assert set(parents) == set(classes)
    for name, cls in classes.items():
        parent = None if cls is errors.AutopoiesisError else cls.__bases__[0].__name__
        assert parents[name] == parent, name
