"""Read-only MCP server over stdio."""
