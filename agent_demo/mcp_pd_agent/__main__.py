"""`python -m mcp_pd_agent` is `mcp-pd demo`."""

from mcp_pd_agent import main

raise SystemExit(main())
