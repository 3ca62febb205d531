"""The opencode driver package: `OpencodeDriver` (the registry's built-in "opencode") and its versioned rules.

`driver.py` holds the behaviour (on the shared turn engine), `v1_18.py` the 1.18.x screen rules, `launch.py` the
command line and the session's own config, `store.py` the SQLite session store (where it is, what its event rows
mean), `follow.py` the following of this session's rows, `versions.py` which plug-ins read which version.
"""

from __future__ import annotations

from litbridge.drivers.opencode.driver import OpencodeDriver

__all__ = ["OpencodeDriver"]
