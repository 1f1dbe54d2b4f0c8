"""SnapStart: the API function primes before the snapshot without capturing anything secret, and
two copies restored from one snapshot mint different ids, nonces and random numbers.

A child interpreter stands in for Lambda: a fake `snapshot_restore_py` (the runtime's hook
library, present only on Lambda) records the hooks; the child imports handlers/api.py with
the deployed environment, reads `handler` (init), runs the before-snapshot hooks (Lambda's
order: the reverse of registration), and is then forked twice: each fork is a restored copy.
A memory snapshot keeps the `random` module's state, while CPython re-seeds it in a fork
child, so each fork first sets back the state the parent had: what a restore would see. Each
copy then runs the after-restore hooks (in registration order) and mints.
"""

from __future__ import annotations

from typing import Any

from support.lambdas import API_CHILD_PRELUDE, api_job, deployed_environment, run_child

FAKE_RUNTIME = """
import sys, types

hooks = {"before": [], "after": []}
fake = types.ModuleType("snapshot_restore_py")
fake.register_before_snapshot = lambda f, *a, **k: hooks["before"].append(f)
fake.register_after_restore = lambda f, *a, **k: hooks["after"].append(f)
sys.modules["snapshot_restore_py"] = fake
"""

SNAPSHOT_TWICE = (
    FAKE_RUNTIME
    + API_CHILD_PRELUDE
    + """
import os, random

api.handler  # init, as the runtime reads it
for hook in reversed(hooks["before"]):
    hook()

app = api.app
primed = {
    "before_hooks": len(hooks["before"]),
    "after_hooks": len(hooks["after"]),
    "clients_kept": sorted(app.clients._clients),
    "credentials_loaded": app.clients._session._credentials is not None,
    "secret_read": bool(app.state_secrets._cached) or app.state_secrets.client is not None,
    "task_models_loaded": "mcp_tasks_aws.server.task_results" in sys.modules,
}
snapshot_random = random.getstate()


def restored_copy():
    random.setstate(snapshot_random)  # the memory as the snapshot holds it
    for hook in hooks["after"]:
        hook()
    from mcp_tasks_aws.protocol.legacy import LegacySession
    from mcp_tasks_aws.protocol.request_state import _encrypt
    from mcp_tasks_aws.tasks.model import new_task_id
    import secrets

    return {
        "task_id": new_task_id(),
        "nonce": _encrypt(b"k" * 32, b"", {})[:16],
        "session_id": secrets.token_urlsafe(16),
        "random": random.random(),
        "clients_after_restore": sorted(app.clients._clients),
    }


copies = []
for _ in range(2):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        with os.fdopen(write_end, "w") as out:
            out.write(json.dumps(restored_copy()))
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as source:
        copies.append(json.loads(source.read()))
    os.waitpid(pid, 0)
print(json.dumps({"primed": primed, "copies": copies}))
"""
)


def snapshot_twice() -> dict[str, Any]:
    result: dict[str, Any] = run_child(SNAPSHOT_TWICE, api_job(), env=deployed_api_environment())
    return result


def deployed_api_environment() -> dict[str, str]:
    """As deployed: the secret's ARN (never read here), first legs run directly."""
    env = deployed_environment(
        MCP_TASKS_STATE_SECRET_ARN="arn:aws:secretsmanager:us-east-1:123456789012:secret:s-AbCd",
        MCP_TASKS_WORKER_FUNCTION="arn:aws:lambda:us-east-1:123456789012:function:w:live",
    )
    env.pop("MCP_TASKS_STATE_SECRET")
    return env


def test_two_restored_copies_mint_different_ids_nonces_and_random_numbers() -> None:
    first, second = snapshot_twice()["copies"]
    for minted in ("task_id", "nonce", "session_id", "random"):
        assert first[minted] != second[minted], minted


def test_priming_captures_no_credentials_secret_or_client() -> None:
    primed = snapshot_twice()["primed"]
    assert primed["before_hooks"] == 1  # the API handler's priming
    assert primed["after_hooks"] == 2  # the re-seeding, then the handler's refresh
    assert primed["clients_kept"] == []  # priming clients are thrown away
    assert primed["credentials_loaded"] is False
    assert primed["secret_read"] is False
    assert primed["task_models_loaded"] is True  # what the first task request would import


def test_a_restored_copy_starts_without_clients() -> None:
    for copy in snapshot_twice()["copies"]:
        assert copy["clients_after_restore"] == []
