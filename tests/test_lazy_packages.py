"""core.lazy: a package's public names load their module on first use (PEP 562)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.lazy import lazy_getattr


def test_a_lazy_name_is_imported_from_its_home_and_kept_in_the_package() -> None:
    namespace: dict[str, object] = {}
    getattr_ = lazy_getattr("somepackage", namespace, {"dumps": "json"})
    assert getattr_("dumps") is json.dumps
    assert namespace == {"dumps": json.dumps}


def test_a_name_without_a_home_raises_attribute_error_naming_the_package() -> None:
    getattr_ = lazy_getattr("somepackage", {}, {"dumps": "json"})
    with pytest.raises(AttributeError, match="'somepackage' has no attribute 'loads'"):
        getattr_("loads")


@pytest.mark.parametrize(
    ("package", "name", "module"),
    [
        ("core.review", "act", "core.review.actions"),
        ("core.ingest", "import_dataset", "core.ingest.load"),
        ("core.investigate", "investigate", "core.investigate.service"),
    ],
)
def test_importing_a_package_loads_a_names_module_only_when_the_name_is_used(
    package: str, name: str, module: str
) -> None:
    code = (
        f"import sys, {package} as p\n"
        f"before = {module!r} in sys.modules\n"
        f"getattr(p, {name!r})\n"
        f"print(before, {module!r} in sys.modules, {name!r} in vars(p))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]
