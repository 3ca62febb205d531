"""`litbridge mcp`: the daemon's sessions as an MCP server (stdio), so another agent can drive them.

`litbridge.mcp.tracker` follows the daemon's event stream (turns, open questions, transcripts) without the MCP
SDK; `litbridge.mcp.server` maps it onto MCP tools and resources with the official `mcp` SDK (the optional
`litbridge[mcp]` extra). See docs/mcp.md.
"""
