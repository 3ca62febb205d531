"""The web view (`litbridge serve --web`, opened with `litbridge web`): sessions, live terminal and chat."""

from litbridge.web.server import WebServer, parse_address, web_info_path

__all__ = ["WebServer", "parse_address", "web_info_path"]
