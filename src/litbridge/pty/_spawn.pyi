"""Type stubs for the compiled spawner `litbridge.pty._spawn` (vfork + execve, Linux)."""

STEPS: tuple[str, ...]

def available() -> bool: ...
def spawn(
    path: bytes,
    argv: list[bytes],
    env: list[bytes],
    cwd: bytes | None,
    stdin_fd: int,
    stdout_fd: int,
    stderr_fd: int,
    ctty_fd: int = -1,
    pdeathsig: int = 0,
    nice: int | None = None,
    group_nice: int | None = None,
    cgroup_fd: int = -1,
) -> int: ...
def set_child_open_files(soft: int) -> None: ...
def close_listed() -> int: ...
