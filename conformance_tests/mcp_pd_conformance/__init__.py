"""Placeholder until this package lands (see docs/STATUS.md)."""

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Not built yet."""
    print("mcp-pd: this command is not built yet; see docs/STATUS.md")
    return 4
