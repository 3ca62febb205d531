"""The driver registry has one style: a lazy "module:Class" table of built-ins, and `register` for drivers that
live elsewhere. Importing a driver package registers nothing by side effect."""

from __future__ import annotations

import subprocess
import sys

import pytest

from litbridge import drivers
from litbridge.drivers.base import Driver
from litbridge.drivers.generic import GenericDriver


@pytest.mark.parametrize("cli", sorted(drivers.BUILTIN))
def test_every_builtin_names_a_driver_class(cli: str) -> None:
    cls = drivers.get_driver(cli)
    module, _, name = drivers.BUILTIN[cli].partition(":")
    assert cls.__module__ == module and cls.__name__ == name and issubclass(cls, Driver)
    assert drivers.get_driver(f"/opt/bin/{cli}") is cls


def test_register_is_the_extension_point(monkeypatch: pytest.MonkeyPatch) -> None:
    class Acme(GenericDriver):
        name = "acme"

    monkeypatch.setattr(drivers, "_REGISTRY", dict(drivers._REGISTRY))
    assert drivers.get_driver("acme") is GenericDriver
    drivers.register("acme", Acme)
    assert drivers.get_driver("acme") is Acme and "acme" in drivers.clis()
    with pytest.raises(TypeError):
        drivers.register("bad", object)  # type: ignore[arg-type]


def test_importing_a_driver_package_registers_nothing() -> None:
    code = (
        "import litbridge.drivers as d, litbridge.drivers.codex, litbridge.drivers.gemini, litbridge.drivers.rift;"
        "print(sorted(d._REGISTRY))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("cli", sorted(drivers.BUILTIN))
def test_every_builtin_ai_cli_answers_in_markdown(cli: str) -> None:
    """`ready.markdown` / the `list` item's: every built-in driver drives an AI CLI, which answers in markdown (the
    web view renders it so); a shell or REPL under the generic driver writes plain text."""
    assert drivers.get_driver(cli).markdown is True
    assert GenericDriver.markdown is False and drivers.get_driver("python3").markdown is False


def test_every_npm_cli_says_how_to_install_it() -> None:
    """`cli_not_found` names `npm install -g <package>` for every CLI with a spec, and the package is the one
    tests/fetch_fixtures.py installs (one place knows it: `CliSpec.package`); rift and generic know none."""
    import fetch_fixtures

    fixtures = {f.package for f in vars(fetch_fixtures).values() if isinstance(f, fetch_fixtures.NpmFixture)}
    packages = set()
    for cli in sorted(set(drivers.BUILTIN) - {"rift"}):
        cls = drivers.get_driver(cli)
        assert cls.CLI.package, cli
        assert cls.install_hint() == f"npm install -g {cls.CLI.package}"
        packages.add(cls.CLI.package)
    assert packages == fixtures and len(packages) == len(drivers.BUILTIN) - 1
    assert drivers.get_driver("rift").install_hint() is None and GenericDriver.install_hint() is None
