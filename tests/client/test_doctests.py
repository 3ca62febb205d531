"""The runnable examples in the client's and the schema export's docstrings (network examples are +SKIP)."""

from __future__ import annotations

import doctest

import pytest

import litbridge.client
import litbridge.client.client
import litbridge.client.commands
import litbridge.client.errors
import litbridge.client.paths
import litbridge.protocol.auth
import litbridge.protocol.jsonschema


@pytest.mark.parametrize(
    "module",
    [
        litbridge.client,
        litbridge.client.client,
        litbridge.client.commands,
        litbridge.client.errors,
        litbridge.client.paths,
        litbridge.protocol.auth,
        litbridge.protocol.jsonschema,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.failed == 0
    assert result.attempted > 0
