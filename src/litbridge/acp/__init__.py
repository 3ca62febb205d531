"""`litbridge acp`: the daemon's sessions as an Agent Client Protocol agent (Zed, Neovim, JetBrains...).

`mapping` holds the SDK-free translation rules; `agent` the ACP agent (needs the optional
`agent-client-protocol` SDK: `pip install 'litbridge[acp]'`). See docs/acp.md.
"""
