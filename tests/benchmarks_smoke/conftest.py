"""The smoke groups' shared fixture: one smoke-size run of the module's `FILES`, shared by its checks."""

from __future__ import annotations

import pytest
from smoke_run import run_smoke


@pytest.fixture(scope="module")
def smoke_output(request: pytest.FixtureRequest) -> str:
    """One run of the module's group (`FILES`) at smoke size, shared by its checks (each suite's rows)."""
    return run_smoke(request.module.FILES)
