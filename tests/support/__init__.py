"""Shared test support: the built package in a simulated editor (`editor`) and
an MCP client that plays the qwen CLI against its servers (`mcp_client`)."""
