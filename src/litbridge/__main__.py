"""`python -m litbridge` is the `litbridge` command."""

from litbridge.cli import main

raise SystemExit(main())
