"""Client side of the Tasks extension, for the official `mcp` SDK client (extra `[client]`).

Never imported by the Lambda functions. See `extension` (transparent `call_tool`), `handle`
(the handle API by task id), `waiter` (the wait loop, listening or polling), `listen_wait`
(waiting by listening), `listening` (the `subscriptions/listen` windows), `polling` (the
cadence), `errors`, `diagnose` (a failed call in one line: `explain_failure`), and `cli` (the
`mcp-tasks` terminal client, with `terminal` and `forms`).
"""

from mcp_tasks_aws.client.connect import TOKEN_ENV, connect
from mcp_tasks_aws.client.diagnose import explain_failure
from mcp_tasks_aws.client.errors import (
    TaskCancelledError,
    TaskError,
    TaskFailedError,
    TaskInputError,
    TaskNotFoundError,
)
from mcp_tasks_aws.client.extension import TasksExtension
from mcp_tasks_aws.client.handle import TaskHandle, Tasks
from mcp_tasks_aws.client.listen_stream import TaskListener, TaskNotificationParams
from mcp_tasks_aws.client.polling import Backoff, PollPolicy
from mcp_tasks_aws.client.waiter import TaskProgress, WaitMode, WaitOptions
from mcp_tasks_aws.client.wire import TASKS_EXTENSION, CreateTaskResult, TaskSnapshot

__all__ = [
    "TASKS_EXTENSION",
    "TOKEN_ENV",
    "Backoff",
    "CreateTaskResult",
    "PollPolicy",
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskHandle",
    "TaskInputError",
    "TaskListener",
    "TaskNotFoundError",
    "TaskNotificationParams",
    "TaskProgress",
    "TaskSnapshot",
    "Tasks",
    "TasksExtension",
    "WaitMode",
    "WaitOptions",
    "connect",
    "explain_failure",
]
