"""Every module of the package imports on its own, first, in a fresh interpreter: no circular import hides
behind the order in which the rest of the suite happens to import things."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import litbridge

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(litbridge.__path__, "litbridge.") if not m.name.endswith("__main__")
)
WINDOWS_ONLY = {"litbridge.pty.windows"}
POSIX_ONLY = {"litbridge.pty.unix"}


def test_every_module_is_found() -> None:
    assert len(MODULES) > 40 and "litbridge.daemon.server" in MODULES and "litbridge.cli.service" in MODULES


@pytest.mark.timeout(300)
def test_each_module_imports_first_in_a_fresh_interpreter() -> None:
    skip = WINDOWS_ONLY if sys.platform != "win32" else POSIX_ONLY
    todo = [m for m in MODULES if m not in skip]
    failures = {}
    for i in range(0, len(todo), 2):  # two at a time: the CI box has two cores
        procs = {
            m: subprocess.Popen(
                [sys.executable, "-c", f"import {m}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for m in todo[i : i + 2]
        }
        for m, proc in procs.items():
            _, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                failures[m] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
    assert failures == {}, failures
