"""`litbridge completion bash|zsh|fish`: print the shell code that completes litbridge's commands and options.

Completion is argcomplete's: the printed code calls `litbridge` back with `_ARGCOMPLETE` set, and `main()` answers
from the same argparse parser the command uses, so completions never drift from the real options.
"""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "fish")
HOW = {
    "bash": 'eval "$(litbridge completion bash)"   # in ~/.bashrc',
    "zsh": 'eval "$(litbridge completion zsh)"    # in ~/.zshrc (after compinit)',
    "fish": "litbridge completion fish > ~/.config/fish/completions/litbridge.fish",
}


def _main(args: argparse.Namespace) -> int:
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["litbridge"], shell=args.shell))
    sys.stdout.flush()
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "completion",
        help="print shell completion code (bash, zsh, fish)",
        description="Print the completion code for SHELL. Install it with:\n  " + "\n  ".join(HOW.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(func=_main)
