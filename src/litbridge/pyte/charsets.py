"""pyte's `charsets` constants, re-exported unchanged (pure data; the compiled core uses the same values)."""

from pyte.charsets import *  # noqa: F403
from pyte.charsets import __doc__ as _doc  # noqa: F401
