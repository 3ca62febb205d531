"""pyte's `graphics` constants, re-exported unchanged (pure data; the compiled core uses the same values)."""

from pyte.graphics import *  # noqa: F403
from pyte.graphics import __doc__ as _doc  # noqa: F401
