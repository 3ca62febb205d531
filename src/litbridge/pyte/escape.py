"""pyte's `escape` constants, re-exported unchanged (pure data; the compiled core uses the same values)."""

from pyte.escape import *  # noqa: F403
from pyte.escape import __doc__ as _doc  # noqa: F401
