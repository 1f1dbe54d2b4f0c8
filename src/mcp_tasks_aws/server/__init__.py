"""The MCP endpoint, both eras: the method table and everything that speaks the protocol's shapes.

- `call`: one request being served (`Call`), what it returns (`Served`) and the plug-in
  protocols the table is extended through (task backend, listener, legacy session);
- `methods`: `McpServer`, the (era, method) table and the 2026-07-28 surface;
- `inline`: inline tool and prompt runs, with multi round-trip requests (MRTR);
- `handles`: task handles for clients that do not speak tasks (an ordinary result naming the
  task, and the `task_status` / `task_answer` / `task_cancel` tools that follow it);
- `tasks`: the Tasks extension on the wire, and the one mapper from task-domain errors to
  JSON-RPC errors both eras use; `task_results`: the typed result models it serializes;
- `listen`: `subscriptions/listen` windows; `window`: the polling window every long answer
  shares;
- `legacy/`: the 2025-11-25 side (sessions, `tasks/result`, server->client questions).

Nothing here imports AWS: the domain (`mcp_tasks_aws.tasks`) is reached through its use cases.
This file imports nothing, so that a 2026-07-28 request never loads `legacy/` or the task
result models (cold start is a product figure): import the module you need.
"""
