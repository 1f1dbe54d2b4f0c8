"""moto's CloudFormation, made to deploy and update template.yaml as CloudFormation does
(tests/infra/test_offline_deploy.py). Test-only: nothing here reaches `src/`.

moto runs `CreateStack`/`UpdateStack`, resolves the intrinsic functions and keeps the stack;
its resource models call its service backends. Three things it does not do as CloudFormation
does, and this module replaces, while `offline_cloudformation()` is active:

- **The resource types it has no model for** (or whose model cannot update or delete what
  the template changes): the providers of `support.cfn_lambda`, `support.cfn_apis` and
  `support.cfn_services` take their place, each calling the service's own API on moto.
- **Stack updates.** moto's update diffs the templates as written and re-reads a resource
  only when its JSON changed or it `Ref`s a changed parameter. It misses a parameter read
  through `Fn::Sub`, a resource whose condition turns on or off (a door switch would leave
  the old door and never build the new one), and a resource whose inputs changed because a
  resource it refers to was replaced. So a parameter-only update would never publish a
  version, template fixed or not. `update_as_cloudformation_does` follows CloudFormation:
  every active resource, in dependency order, is resolved against the stack as updated so
  far and compared with what it was deployed with; a change to a create-only property
  (the resource type's registry schema, as cfn-lint ships it) replaces it (new first, the
  old one deleted at cleanup unless `UpdateReplacePolicy: Retain`), any other change updates
  it in place; resources removed or whose condition turned false are deleted at cleanup
  (unless `DeletionPolicy: Retain`), dependents first. A model that cannot do what the
  update needs fails the update, never skips it.
- **`AWS::NoValue` in a list**: moto leaves a `None` item where CloudFormation drops it
  (the IAM statements of the managed grants).
- **A JSON template body** is read as JSON, as CloudFormation does. moto reads every body
  with PyYAML's pure-Python loader first (JSON is YAML), which for template.yaml's size is
  most of a create's or update's CPU; a body that is not JSON still goes to moto's reader.

Not modelled: rollback (a failed update raises and leaves the stack as far as it got), the
stack's event stream, and the Rules section (test_template.py checks the rules).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from unittest import mock

from moto.cloudformation import parsing
from moto.cloudformation.models import Stack
from moto.cloudformation.parsing import ResourceMap
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.common_models import CloudFormationModel

from support import cfn_apis, cfn_lambda, cfn_services
from support.cfn_model import ProvidedResource, clear_clients

PROVIDERS: tuple[type[CloudFormationModel], ...] = (
    *cfn_lambda.PROVIDERS,
    *cfn_apis.PROVIDERS,
    *cfn_services.PROVIDERS,
)
SUB_REFERENCE = re.compile(r"\$\{([^!}][^}]*)\}")


@dataclass
class Deployed:
    """What one resource was last created or updated with."""

    type_name: str
    properties: Any
    order: int


@dataclass
class Changes:
    """What the last update did, by logical id (`retained`: taken out of the stack but kept,
    by its DeletionPolicy)."""

    created: set[str] = field(default_factory=set)
    updated: set[str] = field(default_factory=set)
    replaced: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    retained: set[str] = field(default_factory=set)


@dataclass
class DeployState:
    """Per stack: each resource's deployed properties, in creation order."""

    deployed: dict[str, Deployed] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=itertools.count)
    last_update: Changes = field(default_factory=Changes)

    def record(self, logical: str, type_name: str, properties: Any) -> None:
        self.deployed[logical] = Deployed(type_name, properties, next(self.counter))


def state_of(resources: ResourceMap) -> DeployState:
    state: DeployState | None = getattr(resources, "_offline_deploy_state", None)
    if state is None:
        state = DeployState()
        resources._offline_deploy_state = state
    return state


@cache
def create_only(type_name: str) -> tuple[str, ...]:
    """The properties whose change replaces a resource of this type (registry schema)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema
    return tuple(
        pointer.removeprefix("/properties/") for pointer in schema.get("createOnlyProperties", [])
    )


def pointed(properties: Any, path: str) -> Any:
    for part in path.split("/"):
        if not isinstance(properties, dict):
            return None
        properties = properties.get(part)
    return properties


def needs_replacement(type_name: str, before: Any, after: Any) -> bool:
    return any(pointed(before, path) != pointed(after, path) for path in create_only(type_name))


def references(value: Any) -> set[str]:
    """The names a resource's JSON refers to: Ref, GetAtt, ${...} in Sub, DependsOn."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= references(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                found.add(item)
            elif key == "Fn::GetAtt":
                found.add(item[0] if isinstance(item, list) else str(item).split(".")[0])
            elif key == "Fn::Sub":
                text, variables = (item, {}) if isinstance(item, str) else item
                names = {name.split(".")[0] for name in SUB_REFERENCE.findall(text)}
                found |= (names - set(variables)) | references(variables)
            elif key == "DependsOn":
                found |= {item} if isinstance(item, str) else set(item)
            else:
                found |= references(item)
    return found


def dependency_order(resources: dict[str, Any], active: set[str]) -> list[str]:
    """The active resources, each after every active resource it refers to."""
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(logical: str) -> None:
        if logical in ordered:
            return
        if logical in visiting:
            raise ValueError(f"circular reference through {logical}")
        visiting.add(logical)
        for target in sorted(references(resources[logical]) & active):
            visit(target)
        visiting.discard(logical)
        ordered.append(logical)

    for logical in sorted(active):
        visit(logical)
    return ordered


def is_active(resources: ResourceMap, spec: dict[str, Any]) -> bool:
    condition = spec.get("Condition")
    return condition is None or bool(resources.lazy_condition_map[condition])


def resolved(resources: ResourceMap, spec: dict[str, Any]) -> Any:
    return parsing.clean_json(spec.get("Properties", {}), resources)


def cannot(model: type, operation: str) -> bool:
    method = getattr(model, f"{operation}_from_cloudformation_json", None)
    return method is None or hasattr(method, "__isabstractmethod__")


def delete_resource(resource: Any, spec: dict[str, Any], account: str, region: str) -> None:
    """Deletes one resource, or fails: moto's own `_delete_resource` skips a model without
    a delete and swallows its errors."""
    if isinstance(resource, ProvidedResource):
        resource.remove()
        return
    if callable(getattr(type(resource), "delete", None)):
        resource.delete(account, region)
        return
    model = parsing.resource_class_from_type(spec["Type"])
    if cannot(model, "delete"):
        raise NotImplementedError(f"moto cannot delete {spec['Type']}")
    model.delete_from_cloudformation_json(resource.physical_resource_id, spec, account, region)


def update_in_place(
    resources: ResourceMap, logical: str, spec: dict[str, Any], properties: Any
) -> Any:
    model = parsing.resource_class_from_type(spec["Type"])
    if cannot(model, "update"):
        raise NotImplementedError(f"moto cannot update {spec['Type']} ({logical}) in place")
    updated = model.update_from_cloudformation_json(
        original_resource=resources[logical],
        new_resource_name=getattr(resources[logical], "physical_resource_id", logical),
        cloudformation_json={**spec, "Properties": properties},
        account_id=resources._account_id,
        region_name=resources._region_name,
    )
    updated.cf_resource_type = spec["Type"]
    updated.logical_resource_id = logical
    return updated


def update_as_cloudformation_does(
    self: ResourceMap, template: dict[str, Any], parameters: dict[str, Any] | None = None
) -> None:
    """`ResourceMap.update`, as CloudFormation updates a stack (see the module docstring)."""
    state = state_of(self)
    old_specs = dict(self._resource_json_map)
    self._template = template
    if parameters:
        self.input_parameters = parameters
    self.load_mapping()
    self.load_parameters()
    self.load_conditions()
    self._resource_json_map = template["Resources"]
    specs = template["Resources"]
    active = {logical for logical, spec in specs.items() if is_active(self, spec)}

    changes = state.last_update = Changes()
    retired: list[tuple[Any, dict[str, Any], int]] = []
    for logical in dependency_order(specs, active):
        spec = specs[logical]
        before = state.deployed.get(logical)
        if before is None:
            _ = self[logical]  # created (and recorded) on first access
            changes.created.add(logical)
            continue
        properties = resolved(self, spec)
        if before.type_name == spec["Type"] and properties == before.properties:
            continue
        if before.type_name != spec["Type"] or needs_replacement(
            spec["Type"], before.properties, properties
        ):
            old = self._parsed_resources.pop(logical)
            retired.append((old, old_specs[logical], before.order))
            del state.deployed[logical]
            _ = self[logical]
            changes.replaced.add(logical)
            continue
        self._parsed_resources[logical] = update_in_place(self, logical, spec, properties)
        changes.updated.add(logical)
        state.record(logical, spec["Type"], properties)
        state.deployed[logical].order = before.order

    # Cleanup, dependents first (latest created first): what this update replaced, and
    # what the new template no longer has or no longer turns on.
    removed = [
        (self._parsed_resources.pop(logical), old_specs[logical], deployed.order, logical)
        for logical, deployed in list(state.deployed.items())
        if logical not in active
    ]
    for _, spec, _, logical in removed:
        del state.deployed[logical]
        kept = spec.get("DeletionPolicy") == "Retain"
        (changes.retained if kept else changes.deleted).add(logical)
    doomed = [(resource, spec, order, "UpdateReplacePolicy") for resource, spec, order in retired]
    doomed += [(resource, spec, order, "DeletionPolicy") for resource, spec, order, _ in removed]
    for resource, spec, _, policy in sorted(doomed, key=lambda item: -item[2]):
        if spec.get(policy) != "Retain":
            delete_resource(resource, spec, self._account_id, self._region_name)


def recording(create: Any) -> Any:
    """Wraps moto's resource creation so each resource's deployed properties are kept."""

    def create_and_record(
        logical_id: str,
        resource_json: dict[str, Any],
        resources_map: ResourceMap,
        account_id: str,
        region_name: str,
    ) -> Any:
        if logical_id in state_of(resources_map).deployed:
            raise AssertionError(f"{logical_id} created twice")
        resource = create(logical_id, resource_json, resources_map, account_id, region_name)
        if resource is None and is_active(resources_map, resource_json):
            # moto skips (with a warning) a type it has no model for: here that is an error.
            raise NotImplementedError(f"no provider for {resource_json['Type']} ({logical_id})")
        if resource is not None:
            properties = resolved(resources_map, resource_json)
            state_of(resources_map).record(logical_id, resource_json["Type"], properties)
        return resource

    return create_and_record


def without_no_value(clean: Any) -> Any:
    """moto's `clean_json`, with `AWS::NoValue` (None) dropped from lists as CloudFormation
    drops it."""

    def clean_json(value: Any, resources_map: ResourceMap) -> Any:
        result = clean(value, resources_map)
        if isinstance(value, list) and isinstance(result, list):
            return [item for item in result if item is not None]
        return result

    return clean_json


def last_update(
    stack_name: str, account: str = DEFAULT_ACCOUNT_ID, region: str = "us-east-1"
) -> Changes:
    """What the last update of this stack created, updated, replaced and deleted."""
    from moto.cloudformation.models import cloudformation_backends

    stack = cloudformation_backends[account][region].get_stack(stack_name)
    return state_of(stack.resource_map).last_update


def json_first(moto_reader: Any) -> Any:
    """A stack's template body as CloudFormation reads it: JSON if it is JSON, else YAML."""

    def parse_template(template: str) -> dict[str, Any]:
        try:
            parsed = json.loads(template)
        except ValueError:
            return moto_reader(template)  # type: ignore[no-any-return]
        return parsed if isinstance(parsed, dict) else moto_reader(template)

    return staticmethod(parse_template)


@contextlib.contextmanager
def offline_cloudformation() -> Iterator[None]:
    """moto's CloudFormation with the providers above and CloudFormation's update (use it
    inside `mock_aws`)."""
    models = {**parsing.get_model_map(), **{p.cloudformation_type(): p for p in PROVIDERS}}
    names = {type_name: model.cloudformation_name_type() for type_name, model in models.items()}
    with contextlib.ExitStack() as stack:
        for attribute, value in (
            ("get_model_map", lambda: models),
            ("get_model_list", lambda: list(models.values())),
            ("get_name_type_map", lambda: names),
            ("parse_and_create_resource", recording(parsing.parse_and_create_resource)),
            ("clean_json", without_no_value(parsing.clean_json)),
        ):
            stack.enter_context(mock.patch.object(parsing, attribute, value))
        stack.enter_context(mock.patch.object(ResourceMap, "update", update_as_cloudformation_does))
        stack.enter_context(
            mock.patch.object(Stack, "parse_template", json_first(Stack.parse_template))
        )
        for owner, name, replacement in cfn_lambda.PATCHES:
            stack.enter_context(mock.patch.object(owner, name, replacement))
        try:
            yield
        finally:
            clear_clients()
