"""`python -m mcp_pd_conformance`: the same as `mcp-pd check`."""

from ._cli import main

raise SystemExit(main())
