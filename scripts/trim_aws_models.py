"""Write the trimmed service models of our clients into src/mcp_tasks_aws/aws/models/.

For each service in `aws.loader.TRIMMED_OPERATIONS`: botocore's newest `service-2` model of
that service (from the botocore installed here), cut to the listed operations (and any
endpoint-discovery operation), the shapes they reach, and no documentation. See
`mcp_tasks_aws/aws/loader.py` for why. `--check` writes nothing and exits 1 if a file differs
from what it would write.

Usage: `python scripts/trim_aws_models.py [--check]`
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mcp_tasks_aws.aws.loader import MODELS, TRIMMED_OPERATIONS

_DOCUMENTATION = ("documentation", "documentationUrl")


def _undocumented(definition: dict[str, Any]) -> dict[str, Any]:
    """A shape, member or operation definition without its documentation keys (member
    *names* are keys of a `members` map, never touched)."""
    kept = {k: v for k, v in definition.items() if k not in _DOCUMENTATION}
    if "members" in kept:
        kept["members"] = {name: _undocumented(m) for name, m in kept["members"].items()}
    for ref in ("member", "key", "value", "input", "output"):
        if isinstance(kept.get(ref), dict):
            kept[ref] = _undocumented(kept[ref])
    if "errors" in kept:
        kept["errors"] = [_undocumented(e) for e in kept["errors"]]
    return kept


def _reached(model: dict[str, Any], operations: list[str]) -> set[str]:
    shapes = model["shapes"]
    pending: list[str] = []
    for name in operations:
        operation = model["operations"][name]
        pending += [operation[k]["shape"] for k in ("input", "output") if k in operation]
        pending += [error["shape"] for error in operation.get("errors", [])]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        shape = shapes[name]
        pending += [shape[k]["shape"] for k in ("member", "key", "value") if k in shape]
        pending += [member["shape"] for member in shape.get("members", {}).values()]
    return seen


def trimmed(model: dict[str, Any], wanted: tuple[str, ...]) -> dict[str, Any]:
    """`model` cut to `wanted` operations (plus its endpoint-discovery operation, if any)."""
    missing = [name for name in wanted if name not in model["operations"]]
    if missing:
        raise SystemExit(f"botocore's model has no operation {', '.join(missing)}")
    discovery = [n for n, op in model["operations"].items() if op.get("endpointoperation")]
    operations = sorted({*wanted, *discovery})
    result = {k: v for k, v in model.items() if k not in (*_DOCUMENTATION, "operations", "shapes")}
    result["operations"] = {n: _undocumented(model["operations"][n]) for n in operations}
    result["shapes"] = {
        n: _undocumented(model["shapes"][n]) for n in sorted(_reached(model, operations))
    }
    return result


def expected_files() -> dict[Path, str]:
    """Every file the models folder should hold, and its text, from the installed botocore."""
    import botocore.session

    loader = botocore.session.get_session().get_component("data_loader")
    files = {}
    for service, wanted in TRIMMED_OPERATIONS.items():
        version = loader.determine_latest_version(service, "service-2")
        model, where = loader.load_data_with_path(f"{service}/{version}/service-2")
        if not loader.is_builtin_path(where):
            raise SystemExit(f"{service}: the model should come from botocore, not {where}")
        text = json.dumps(trimmed(model, wanted), indent=None, separators=(",", ":"))
        files[MODELS / service / version / "service-2.json"] = text + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    files = expected_files()
    present = set(MODELS.rglob("*.json")) if MODELS.is_dir() else set()
    stale = sorted(present - set(files))
    changed = sorted(p for p, text in files.items() if not p.exists() or p.read_text() != text)
    if args.check:
        for path in stale + changed:
            print(f"out of date: {path.relative_to(MODELS.parent)}")
        return 1 if stale or changed else 0
    for path in stale:
        path.unlink()
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
        print(f"wrote {path.relative_to(MODELS.parent)} ({len(files[path]) // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
