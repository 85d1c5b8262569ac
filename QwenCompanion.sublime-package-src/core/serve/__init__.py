"""The chat's second transport: a `qwen serve` daemon (HTTP + SSE) per window's folders."""
