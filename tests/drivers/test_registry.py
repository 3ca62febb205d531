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
