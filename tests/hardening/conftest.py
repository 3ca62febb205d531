"""Fixtures of the hardening suite (defined in hardening_helpers.py, which the test modules import by name)."""

from hardening_helpers import daemon, module_tmp_short, tmp_short

__all__ = ["daemon", "module_tmp_short", "tmp_short"]
