"""The agent and device side: the JSON API, MCP, client tokens, rate limits, hook injections."""
