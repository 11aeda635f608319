"""Packages whose names load their module on first use (PEP 562 module `__getattr__`).

`python -m core reconcile` and `import-day` import only what their path uses: a package's
public names stay importable from the package, and the module behind a name is imported
the first time the name is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    package: str, namespace: dict[str, Any], home_of: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a name in `home_of` is imported from its module
    (a full dotted name) and kept in `namespace` (the package's globals), so later lookups
    do not come here; any other name raises AttributeError as a module does."""

    def __getattr__(name: str) -> Any:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
