"""litbridge: run interactive AI coding CLIs under a PTY and stream structured events to applications.

The package follows the data path: pty -> term (_core, pyte facade) -> drivers -> session -> protocol
-> daemon -> client / cli.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
