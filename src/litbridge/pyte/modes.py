"""pyte's `modes` constants, re-exported unchanged (pure data; the compiled core uses the same values)."""

from pyte.modes import *  # noqa: F403
from pyte.modes import __doc__ as _doc  # noqa: F401
