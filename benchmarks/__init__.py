"""Benchmarks of mcp_pd (GitHub issue 5): context saved, overhead, scale, hot reload, HTTP under load.

`python -m benchmarks` runs them all (`--quick` for a reduced run); `python -m benchmarks.<name>` runs one.
See benchmarks/README.md for what each measures and the committed results.
"""
