"""The screen-driver kit: a CLI is three versioned plug-ins, `Rules` + `Record` + `Launch`, chosen by its version.

- `Rules` read one frame (screen rows, and the window title for CLIs that put state there) into the engine's
  reading: state, the dialog (`drivers/dialog.Dialog`), spinner, draft; and where a turn's text is.
- `Record` names the CLI's own record of a conversation (where it is, its shape) and maps its entries to
  turn/tool/usage events (`tracker().feed(entries)`).
- `Launch` builds the argv/env/config of a session and picks the answers to the start-up dialogs. It is typed
  against `LaunchHost` (what it reads from the driver and the launch state it sets there), never against the
  driver class: the driver module imports its plug-in tables, so a plug-in must not import the driver.

A CLI's `CliSpec` holds one table per plug-in, keyed by version prefix ("2.1", "0.169"). `CliSpec.pick` chooses
each plug-in independently (`drivers/versions.pick`: the longest matching prefix, else the newest), so a new CLI
version adds only the classes that changed: `class Rules(v2_1.Rules)` overriding one marker, one table line.
`EngineDriver` (drivers/engine_driver.py) wires the picked plug-ins into a driver. See docs/adding-a-cli.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from litbridge.drivers.versions import pick

if TYPE_CHECKING:
    from litbridge.drivers.base import DriverHost, LaunchSpec
    from litbridge.drivers.dialog import Dialog
    from litbridge.drivers.engine import Reading

__all__ = ["CliSpec", "Launch", "LaunchHost", "Plugins", "Record", "Rules"]


class Rules:
    """What one CLI version's screen means. Pure: no I/O, no timing, no driver state (one per session is cheap).
    Every marker is a class attribute and every reading a method, so a later version subclasses and overrides
    only what changed."""

    VERSION: ClassVar[str] = ""
    """The version prefix these rules were validated on."""
    STARTUP_ACCEPT: ClassVar[Mapping[str, str]] = {}
    """Start-up dialogs the driver answers by itself: dialog kind -> label (prefix) of the option it picks."""
    QUESTION_KIND: ClassVar[Mapping[str, str]] = {}
    """Dialog kind -> the wire `question.kind` (permission, trust, choice, text); unlisted kinds are `choice`."""

    def classify(self, rows: list[str]) -> Any:
        """The reading of one frame's rows (`engine.Reading` attributes: state, dialog, spinner, live_prompt,
        draft; plus `version` when the frame shows the CLI's version)."""
        raise NotImplementedError

    def read(self, rows: list[str], title: str | None = None) -> Reading:
        """The engine's reading of a frame and the window title; default: the rows alone."""
        result: Reading = self.classify(rows)
        return result

    def question_kind(self, dialog: Dialog) -> str:
        """The wire kind of the question a dialog is relayed as."""
        return dialog.question_kind or self.QUESTION_KIND.get(dialog.kind, "choice")

    def modal_excerpt(self, rows: list[str]) -> str | None:
        """A few rows of a modal these rules cannot parse (for `unknown_dialog`), or None."""
        return None


class Record:
    """The CLI's own record of a conversation: where it is, its shape, and what its entries mean."""

    VERSION: ClassVar[str] = ""
    SHAPE: ClassVar[str] = "jsonl"
    """`jsonl` (an append-only file), `json` (a whole file rewritten in place) or `sqlite` (a database)."""
    SOURCE: ClassVar[str] = ""
    """Where the CLI keeps it, in words (for `litbridge drivers`)."""

    def tracker(self) -> Any:
        """A fresh mapper of record entries to turn events (`feed(entries) -> events`): what the driver's
        follower (`records.RecordFollower`) reads the record with."""
        raise NotImplementedError


class LaunchHost(Protocol):
    """What every `Launch` reads from its driver: the `create` options as `EngineDriver` keeps them, the picked
    rules, and `resumed`, which it sets. A CLI's launch module extends it with the launch state of its own (a
    pinned session id, a resumed thread) as a Protocol of its own."""

    host: DriverHost
    options: dict[str, Any]
    cwd: str
    env: dict[str, str]
    args: list[str]
    model: str | None
    resume_token: str | None
    resumed: bool
    rules: Any

    def binary(self) -> str: ...


D = TypeVar("D", bound=LaunchHost)


class Launch(Generic[D]):
    """How one CLI version is started for a session: argv, env, config files; and which start-up dialogs the
    driver answers. Holds the driver (a `D`, some `LaunchHost`) whose options it reads and whose launch state it
    sets (session id, resumed)."""

    VERSION: ClassVar[str] = ""
    ENV_REMOVE: ClassVar[tuple[str, ...]] = ()
    """Inherited variables the child must not see (names, or prefixes ending in `*`)."""

    def __init__(self, driver: D) -> None:
        self.driver = driver

    def spec(self) -> LaunchSpec:
        """argv/env/cwd/transport for the session (may write the session's own config files)."""
        raise NotImplementedError

    def startup_answer(self, dialog: Dialog) -> str | None:
        """The option label the driver picks in a start-up dialog by itself, None to relay it as a question
        (raise `DriverError` for one nobody can answer from here, e.g. a sign-in screen)."""
        rules = getattr(self.driver, "rules", None)
        return rules.STARTUP_ACCEPT.get(dialog.kind) if rules is not None else None


@dataclass(frozen=True)
class Plugins:
    """The plug-in classes a version uses."""

    rules: type[Rules]
    record: type[Record]
    launch: type[Launch[Any]]


@dataclass
class CliSpec:
    """A CLI's plug-in tables (version prefix -> class) and how its version is known."""

    name: str
    rules: dict[str, type[Rules]]
    record: dict[str, type[Record]]
    launch: dict[str, type[Launch[Any]]]
    logo: re.Pattern[bytes]
    """The version the CLI prints in its output (what `litbridge replay` reads from a recording)."""
    version_from_binary: bool = True
    """Ask `<binary> --version` before the spawn (off for a CLI whose first frame shows it sooner)."""
    tested: tuple[str, ...] = ()
    """The exact versions the real-binary tests run against (what `tests/fetch_fixtures.py` installs)."""
    package: str = ""
    """The npm package the CLI is installed from: `cli_not_found` says `npm install -g <package>` (the package
    `tests/fetch_fixtures.py` installs too)."""

    def pick(self, version: str | None) -> Plugins:
        """The plug-ins for a version, each the longest matching prefix of its table, else the newest."""
        return Plugins(pick(self.rules, version), pick(self.record, version), pick(self.launch, version))

    def known(self) -> list[str]:
        """Version prefixes any plug-in table names, oldest first."""
        keys = set(self.rules) | set(self.record) | set(self.launch)
        return sorted(keys, key=lambda v: tuple(int(x) for x in v.split(".")))

    def knows(self, version: str | None) -> bool:
        """True when the rules table has this version's own prefix (not a fallback to the newest)."""
        return bool(version) and any(version == p or str(version).startswith(p + ".") for p in self.rules)
