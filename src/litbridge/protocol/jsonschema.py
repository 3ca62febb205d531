"""JSON Schema (draft 2020-12) for every command and event, generated from the table in `protocol/spec.py`.

Nothing here is written by hand per command: change the spec table and the schema (and `litbridge schema`,
and the docs tables rendered by `markdown_tables`) follow. It does not validate at run time; the daemon
uses `spec.validate_command`, and the schema is for other languages and tools.

>>> schema = protocol_schema()
>>> schema["$defs"]["command.ping"]["properties"]["cmd"]
{'const': 'ping'}
"""

from __future__ import annotations

from typing import Any

import orjson

from litbridge import __version__
from litbridge.protocol.spec import (
    COMMANDS,
    EVENTS,
    PROTOCOL_VERSION,
    Command,
    Event,
    Field,
)

try:  # COMMON_EVENT_FIELDS is the spec's list of fields the hub adds to every event.
    from litbridge.protocol.spec import COMMON_EVENT_FIELDS
except ImportError:  # pragma: no cover - older spec tables
    COMMON_EVENT_FIELDS = {}

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"https://litbridge.dev/schema/protocol-v{PROTOCOL_VERSION}.json"

_ID_FIELD = Field(
    ("string", "integer"), doc="client request id; replies and errors echo it as `re`", new=True
)


def _type_schema(types: str | tuple[str, ...]) -> dict[str, Any]:
    names = (types,) if isinstance(types, str) else tuple(types)
    if "any" in names:
        return {}
    return {"type": names[0]} if len(names) == 1 else {"type": list(names)}


def field_schema(f: Field) -> dict[str, Any]:
    """The JSON Schema of one spec field (type, items, value type, enum, default, docs, `x-new`)."""
    out = _type_schema(f.type)
    types = (f.type,) if isinstance(f.type, str) else f.type
    if f.items is not None and "array" in types:
        out["items"] = _type_schema(f.items)
    if f.values is not None and "object" in types:
        out["additionalProperties"] = _type_schema(f.values)
    if f.enum is not None:
        enum = list(f.enum)
        if "null" in types and None not in enum:
            enum.append(None)
        out["enum"] = enum
    if f.default is not None:
        out["default"] = f.default
    if f.doc:
        out["description"] = f.doc
    if f.new:
        out["x-new"] = True
    return out


def _object(
    props: dict[str, dict[str, Any]], required: list[str], doc: str, item: Command | Event
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "description": doc,
        "properties": props,
        "required": required,
        # Forward compatibility: clients ignore unknown fields, drivers read extra create options.
        "additionalProperties": True,
        "x-added-in": item.added_in,
    }
    if item.new:
        out["x-new"] = True
    return out


def command_schema(cmd: Command | str) -> dict[str, Any]:
    """The schema of one command line, e.g. `{"cmd":"send","session":"work","content":"hi","id":"7"}`."""
    c = COMMANDS[cmd] if isinstance(cmd, str) else cmd
    props: dict[str, dict[str, Any]] = {"cmd": {"const": c.name}, "id": field_schema(_ID_FIELD)}
    required = ["cmd"]
    for name, f in c.fields.items():
        props[name] = field_schema(f)
        if f.required:
            required.append(name)
    return _object(props, required, c.doc, c)


def event_schema(ev: Event | str) -> dict[str, Any]:
    """The schema of one event line, e.g. `{"event":"pong","re":"7"}`."""
    e = EVENTS[ev] if isinstance(ev, str) else ev
    props: dict[str, dict[str, Any]] = {"event": {"const": e.name}}
    required = ["event"]
    for name, f in COMMON_EVENT_FIELDS.items():
        if name == "event" or (not e.per_session and name in ("session", "channel_id", "seq")):
            continue
        props[name] = field_schema(f)
    if e.per_session:
        required.append("session")
    for name, f in e.fields.items():
        props[name] = field_schema(f)
        if f.required:
            required.append(name)
    return _object(props, required, e.doc, e)


def protocol_schema() -> dict[str, Any]:
    """The whole protocol as one draft 2020-12 document.

    `$defs` holds `command.<name>` and `event.<name>` for every table entry, plus `command` (any known
    command) and `event` (any event: a known one, or an unknown kind, which clients must ignore). The root
    accepts any line of either direction.
    """
    defs: dict[str, Any] = {}
    for name in COMMANDS:
        defs[f"command.{name}"] = command_schema(name)
    for name in EVENTS:
        defs[f"event.{name}"] = event_schema(name)
    defs["command"] = {
        "description": "Any command a client may send (one JSON object per line).",
        "oneOf": [{"$ref": f"#/$defs/command.{n}"} for n in COMMANDS],
    }
    defs["event"] = {
        "description": "Any event the daemon may send; kinds not listed here must be ignored by clients.",
        "oneOf": [
            *({"$ref": f"#/$defs/event.{n}"} for n in EVENTS),
            {
                "type": "object",
                "required": ["event"],
                "properties": {"event": {"type": "string", "not": {"enum": list(EVENTS)}}},
            },
        ],
    }
    return {
        "$schema": DRAFT,
        "$id": SCHEMA_ID,
        "title": f"litbridge wire protocol v{PROTOCOL_VERSION}",
        "description": f"Commands (client -> daemon) and events (daemon -> client); litbridge {__version__}.",
        "x-protocol-version": PROTOCOL_VERSION,
        "oneOf": [{"$ref": "#/$defs/command"}, {"$ref": "#/$defs/event"}],
        "$defs": defs,
    }


def dumps(schema: dict[str, Any] | None = None) -> str:
    """The schema as indented JSON text (what `litbridge schema` prints)."""
    return orjson.dumps(
        schema if schema is not None else protocol_schema(), option=orjson.OPT_INDENT_2
    ).decode()


# --- docs tables ------------------------------------------------------------------------------------


def _type_text(f: Field) -> str:
    types = (f.type,) if isinstance(f.type, str) else f.type
    parts = []
    for t in types:
        if t == "array" and f.items:
            parts.append(f"[{f.items}]")
        elif t == "object" and f.values:
            parts.append(f"{{str:{f.values}}}")
        else:
            parts.append(t)
    return "/".join(parts)


def _field_text(name: str, f: Field) -> str:
    bits = [f"`{name}`" + ("*" if f.required else ""), _type_text(f)]
    if f.enum:
        bits.append("(" + " ".join(f"`{v}`" for v in f.enum) + ")")
    if f.default not in (None, [], {}):
        bits.append(f"default `{orjson.dumps(f.default).decode()}`")
    if f.new:
        bits.append("**new**")
    return " ".join(bits)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _added(item: Command | Event) -> str:
    note = f"v{item.added_in}"
    return note + (" (**new**)" if item.new else "")


def markdown_tables() -> str:
    """The command and event tables of docs/protocol.md, rendered from the spec (a test keeps them equal)."""
    lines = [
        "### Commands",
        "",
        "| cmd | fields (`*` = required) | replies | added in | what it does |",
        "|---|---|---|---|---|",
    ]
    for c in COMMANDS.values():
        fields = ", ".join(_field_text(n, f) for n, f in c.fields.items()) or "—"
        replies = " ".join(f"`{r}`" for r in c.replies)
        lines.append(f"| `{c.name}` | {fields} | {replies} | {_added(c)} | {_cell(c.doc)} |")
    lines += [
        "",
        "### Events",
        "",
        "| event | fields | per session | added in | when |",
        "|---|---|---|---|---|",
    ]
    for e in EVENTS.values():
        fields = ", ".join(_field_text(n, f) for n, f in e.fields.items()) or "—"
        lines.append(
            f"| `{e.name}` | {fields} | {'yes' if e.per_session else 'no'} | {_added(e)} | {_cell(e.doc)} |"
        )
    return "\n".join(lines) + "\n"


DOCS_BEGIN = "<!-- BEGIN GENERATED: litbridge schema --markdown -->\n"
DOCS_END = "<!-- END GENERATED -->\n"


def splice_docs(text: str) -> str:
    """`text` (docs/protocol.md) with the block between the generated-table markers replaced by fresh tables."""
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise ValueError("the generated-table markers are missing")
    head, rest = text.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    return head + DOCS_BEGIN + markdown_tables() + DOCS_END + tail
