"""The litbridge daemon: sockets, auth, clients, broadcast with seq/replay, attach, command dispatch.

`Daemon` (server.py) is the process; `Hub` (hub.py) delivers events; `paths` guards the socket place;
`attach` serves raw terminal views; `front.DaemonFront` is the face every front end (attach, the web view,
the fleet link) uses. `cli/serve.py` wires them. CLI specifics stay in drivers, turn bookkeeping in `session.py`.
"""

from litbridge.daemon.paths import AlreadyRunning, default_socket_path, token_path
from litbridge.daemon.server import Daemon

__all__ = ["AlreadyRunning", "Daemon", "default_socket_path", "token_path"]
