"""Reference agent for MCP Progressive Disclosure (spec v2.1): one agent loop, three back-ends, a token ledger.

`mcp-pd demo` (or `python -m mcp_pd_agent`) runs the scripted task set against the reference server with the
offline planner and prints each step and the ledger; `--backend anthropic|openai` puts a model in the loop, and
`--host tools-only` (or `both`) runs it as a host whose model can only call tools, and `--mode catalog` (or
`both`) starts the server in catalog mode, where the model searches, describes, then calls.
The package is a plain MCP client: it never imports the server library.
For an agent builder's own loop (docs/agents.md): `connect(ServerSpec...)` opens a session
(`ProgressiveServer`), `Toolset` offers its tools in the Anthropic or OpenAI form (strict once described; deferred
for Anthropic's tool search) and carries out the model's calls, describing a tool before its first call;
`strict_schema` / `loose_arguments` convert schemas and arguments.
"""

from __future__ import annotations

from ._backends import BACKENDS, PlannerBackend, create_backend, resolve_backend_name
from ._catalog import MergedCatalog, merge_catalogs
from ._cli import TaskResult, eager_definitions, main, run_tasks
from ._connection import (
    ProgressiveServer,
    Reply,
    ServerMode,
    ServerSpec,
    ServerUnreachable,
    connect,
    find_describe_tool,
    find_mode,
)
from ._hosts import ANTHROPIC_TOOL_SEARCH, Toolset, anthropic_tool, loose_arguments, openai_function, strict_schema
from ._ledger import (
    ENCODINGS,
    HostCost,
    Ledger,
    LedgerRow,
    TokenCounter,
    build_ledger,
    render_markdown,
    render_summary_markdown,
    render_svg,
    render_table,
    side_label,
    update_markdown,
)
from ._loop import (
    AssistantTurn,
    Backend,
    ContextRecord,
    FunctionSpec,
    ModelRequest,
    Run,
    Step,
    ToolCall,
    ToolOutput,
    ToolOutputs,
    UserMessage,
    build_functions,
    run_agent,
)
from ._prompt import BASE_PROMPT, HOSTS, READ_FUNCTION, Host, system_prompt, system_prompt_guidance
from ._tasks import CATALOG_TASKS, TASKS, Task, check_run

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "BACKENDS",
    "BASE_PROMPT",
    "CATALOG_TASKS",
    "ENCODINGS",
    "HOSTS",
    "READ_FUNCTION",
    "TASKS",
    "AssistantTurn",
    "Backend",
    "ContextRecord",
    "FunctionSpec",
    "Host",
    "HostCost",
    "Ledger",
    "LedgerRow",
    "MergedCatalog",
    "ModelRequest",
    "PlannerBackend",
    "ProgressiveServer",
    "Reply",
    "Run",
    "ServerMode",
    "ServerSpec",
    "ServerUnreachable",
    "Step",
    "Task",
    "TaskResult",
    "TokenCounter",
    "ToolCall",
    "ToolOutput",
    "ToolOutputs",
    "Toolset",
    "UserMessage",
    "anthropic_tool",
    "build_functions",
    "build_ledger",
    "check_run",
    "connect",
    "create_backend",
    "eager_definitions",
    "find_describe_tool",
    "find_mode",
    "loose_arguments",
    "main",
    "merge_catalogs",
    "openai_function",
    "render_markdown",
    "render_summary_markdown",
    "render_svg",
    "render_table",
    "resolve_backend_name",
    "run_agent",
    "run_tasks",
    "side_label",
    "strict_schema",
    "system_prompt",
    "system_prompt_guidance",
    "update_markdown",
]
