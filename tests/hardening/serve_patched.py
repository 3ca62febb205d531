"""Run `litbridge serve` with test-only constants lowered (the daemon has no option for them).

`python serve_patched.py CLAUDE_STARTUP_TIMEOUT serve --socket ...`: sets the Claude driver's
STARTUP_TIMEOUT (seconds) then runs the normal CLI. Used by the never-ready fault test only.
"""

from __future__ import annotations

import sys

import litbridge.drivers.claude.driver as claude_driver
from litbridge.cli import main

if __name__ == "__main__":
    claude_driver.STARTUP_TIMEOUT = float(sys.argv.pop(1))
    sys.argv[0] = "litbridge"
    raise SystemExit(main())
