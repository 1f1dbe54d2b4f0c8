"""The MCP protocol: JSON-RPC framing, the 2026-07-28 envelope, errors, HTTP transport.

Nothing in this package imports AWS code.
"""
