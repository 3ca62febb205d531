"""The record pipeline every screen driver shares: a CLI's own record of the conversation, followed live.

Sources (the three shapes a CLI's record takes): `JsonlFile` (append-only JSONL), `JsonDocument` (a JSON file
rewritten whole), `SqliteRows` (a database polled read-only). `RecordFollower` is the follow loop (inotify
through `watch.DirWatch`, one shared sweep per loop as its safety net, else a paced stat-only poll); `Dispatch` hands the tracked events to the turn engine;
`UsageTally` counts a turn's tokens. Knows no CLI: each driver brings its record's place, and its tracker (the
mapping of entries to events) comes from the `kit.Record` plug-in picked for the CLI's version.
"""

from litbridge.drivers.records.dispatch import Dispatch
from litbridge.drivers.records.document import JsonDocument
from litbridge.drivers.records.follow import RecordFollower
from litbridge.drivers.records.jsonl import JsonlFile
from litbridge.drivers.records.sqlite import SqliteRows
from litbridge.drivers.records.usage import UsageTally, tokens

__all__ = ["Dispatch", "JsonDocument", "JsonlFile", "RecordFollower", "SqliteRows", "UsageTally", "tokens"]
