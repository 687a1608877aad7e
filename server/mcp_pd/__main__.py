"""`python -m mcp_pd` is `mcp-pd`."""

from ._cli import main

raise SystemExit(main())
