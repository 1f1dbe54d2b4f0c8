"""The shape of a test-only CloudFormation provider (support.cfn_engine): a resource made,
changed and deleted through its service's own API, on moto, as CloudFormation's resource
handlers do.

A provider fills in `create` (from the resolved properties: the physical id and the
attributes `Fn::GetAtt` reads), `update` (in place: the engine has already decided that no
create-only property changed) and `remove`. What it cannot do raises, so an update that needs
it fails instead of passing unnoticed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import boto3
from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
from moto.core.common_models import CloudFormationModel

REGION = "us-east-1"
_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    """A boto3 client of `service` (answered by moto while `mock_aws` is active)."""
    if service not in _clients:
        _clients[service] = boto3.client(service, region_name=REGION)
    return _clients[service]


def clear_clients() -> None:
    _clients.clear()


def present(properties: dict[str, Any], *names: str) -> dict[str, Any]:
    """The properties among `names` that the template sets (API parameters of the same name)."""
    return {name: properties[name] for name in names if name in properties}


class ProvidedResource(CloudFormationModel):
    """One resource of `type_name`, kept by a test-only provider."""

    type_name: ClassVar[str] = ""

    def __init__(self, physical_id: str, properties: dict[str, Any], **attributes: Any) -> None:
        self.physical_id = physical_id
        self.properties = properties
        self.attributes = attributes

    # --- what moto's CloudFormation calls ---------------------------------------------------
    @property
    def physical_resource_id(self) -> str:
        return self.physical_id

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.type_name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""  # moto then names the resource "<stack>-<logical id>-<suffix>"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True  # checked where it is read (get_cfn_attribute)

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name not in self.attributes:
            raise UnformattedGetAttTemplateException()
        return self.attributes[attribute_name]

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> ProvidedResource:
        return cls.create(resource_name, cloudformation_json.get("Properties", {}))

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: ProvidedResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> ProvidedResource:
        properties = cloudformation_json.get("Properties", {})
        original_resource.update(properties)
        original_resource.properties = properties
        return original_resource

    @classmethod
    def delete_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region: str
    ) -> None:
        raise NotImplementedError("deleted through remove()")

    def is_created(self) -> bool:
        return True

    # --- what each provider fills in ------------------------------------------------------
    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        raise NotImplementedError(f"{cls.type_name}: create")

    def update(self, properties: dict[str, Any]) -> None:
        raise NotImplementedError(f"{self.type_name}: no update in place")

    def remove(self) -> None:
        raise NotImplementedError(f"{self.type_name}: no delete")
