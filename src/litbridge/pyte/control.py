"""pyte's `control` constants, re-exported unchanged (pure data; the compiled core uses the same values)."""

from pyte.control import *  # noqa: F403
from pyte.control import __doc__ as _doc  # noqa: F401
