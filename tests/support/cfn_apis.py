"""Test-only CloudFormation providers for the two front doors (support.cfn_engine), through
API Gateway's APIs on moto.

- STREAMING, a REST API (`AWS::ApiGateway::*`): moto's models of the REST API, its resources,
  methods and deployments can be neither updated nor deleted (a door switch would leave the
  REST API behind), its method model reads only an integration's type, method and URI (a mock
  integration has no URI: it fails), and it has no stage model. These replace them.
  moto stores no `responseTransferMode` (test_door_switch.py checks it on the template).
- BUFFERED, an HTTP API (`AWS::ApiGatewayV2::*`): moto has a backend but no models. moto's
  backend cannot update an HTTP API stage (an update that needs it fails).
"""

from __future__ import annotations

from typing import Any, ClassVar

from support.cfn_model import ProvidedResource, client, present


def replace(path: str, value: Any) -> dict[str, str]:
    return {"op": "replace", "path": path, "value": str(value)}


# --- STREAMING: the REST API -------------------------------------------------------------------
class RestApi(ProvidedResource):
    type_name = "AWS::ApiGateway::RestApi"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        endpoint = properties.get("EndpointConfiguration", {})
        api = client("apigateway").create_rest_api(
            name=properties["Name"],
            description=properties.get("Description", ""),
            endpointConfiguration={"types": endpoint.get("Types", ["EDGE"])},
        )
        resources = client("apigateway").get_resources(restApiId=api["id"])["items"]
        (root,) = [resource["id"] for resource in resources if resource["path"] == "/"]
        return cls(api["id"], properties, RestApiId=api["id"], RootResourceId=root)

    def update(self, properties: dict[str, Any]) -> None:
        client("apigateway").update_rest_api(
            restApiId=self.physical_id,
            patchOperations=[
                replace("/name", properties["Name"]),
                replace("/description", properties.get("Description", "")),
            ],
        )

    def remove(self) -> None:
        client("apigateway").delete_rest_api(restApiId=self.physical_id)


class Resource(ProvidedResource):
    type_name = "AWS::ApiGateway::Resource"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        resource = client("apigateway").create_resource(
            restApiId=properties["RestApiId"],
            parentId=properties["ParentId"],
            pathPart=properties["PathPart"],
        )
        return cls(resource["id"], properties, ResourceId=resource["id"])

    def remove(self) -> None:
        client("apigateway").delete_resource(
            restApiId=self.properties["RestApiId"], resourceId=self.physical_id
        )


class Method(ProvidedResource):
    """A method with its integration and responses; an update puts them again."""

    type_name = "AWS::ApiGateway::Method"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        cls.put(properties)
        key = (properties["RestApiId"], properties["ResourceId"], properties["HttpMethod"])
        return cls("-".join(key), properties)

    @staticmethod
    def put(properties: dict[str, Any]) -> None:
        apigateway = client("apigateway")
        where = {
            "restApiId": properties["RestApiId"],
            "resourceId": properties["ResourceId"],
            "httpMethod": properties["HttpMethod"],
        }
        apigateway.put_method(
            **where,
            authorizationType=properties["AuthorizationType"],
            **(
                {"authorizerId": properties["AuthorizerId"]} if "AuthorizerId" in properties else {}
            ),
        )
        integration = properties.get("Integration")
        if integration is not None:
            apigateway.put_integration(
                **where,
                type=integration["Type"],
                **{
                    key[0].lower() + key[1:]: integration[key]
                    for key in (
                        "IntegrationHttpMethod",
                        "Uri",
                        "RequestTemplates",
                        "ResponseTransferMode",
                    )
                    if key in integration
                },
            )
            for response in integration.get("IntegrationResponses", []):
                apigateway.put_integration_response(
                    **where,
                    statusCode=response["StatusCode"],
                    responseParameters=response.get("ResponseParameters", {}),
                )
        for response in properties.get("MethodResponses", []):
            apigateway.put_method_response(
                **where,
                statusCode=response["StatusCode"],
                responseParameters=response.get("ResponseParameters", {}),
            )

    def update(self, properties: dict[str, Any]) -> None:
        self.remove()
        self.put(properties)

    def remove(self) -> None:
        client("apigateway").delete_method(
            restApiId=self.properties["RestApiId"],
            resourceId=self.properties["ResourceId"],
            httpMethod=self.properties["HttpMethod"],
        )


class Deployment(ProvidedResource):
    type_name = "AWS::ApiGateway::Deployment"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        deployment = client("apigateway").create_deployment(
            restApiId=properties["RestApiId"], description=properties.get("Description", "")
        )
        return cls(deployment["id"], properties, DeploymentId=deployment["id"])

    def remove(self) -> None:
        client("apigateway").delete_deployment(
            restApiId=self.properties["RestApiId"], deploymentId=self.physical_id
        )


class Stage(ProvidedResource):
    type_name = "AWS::ApiGateway::Stage"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("apigateway").create_stage(
            restApiId=properties["RestApiId"],
            stageName=properties["StageName"],
            deploymentId=properties["DeploymentId"],
        )
        stage = cls(properties["StageName"], properties)
        stage.update(properties)
        return stage

    def update(self, properties: dict[str, Any]) -> None:
        operations = [replace("/deploymentId", properties["DeploymentId"])]
        for setting in properties.get("MethodSettings", []):
            path = "/" + setting["ResourcePath"].replace("/", "~1") + "/" + setting["HttpMethod"]
            path = "/*/*" if path == "/~1*/*" else path
            operations += [
                replace(f"{path}/throttling/rateLimit", setting["ThrottlingRateLimit"]),
                replace(f"{path}/throttling/burstLimit", setting["ThrottlingBurstLimit"]),
            ]
        log = properties.get("AccessLogSetting", {})
        operations += [
            replace(f"/accessLogSettings/{key[0].lower()}{key[1:]}", value)
            for key, value in log.items()
        ]
        client("apigateway").update_stage(
            restApiId=properties["RestApiId"],
            stageName=properties["StageName"],
            patchOperations=operations,
        )

    def remove(self) -> None:
        client("apigateway").delete_stage(
            restApiId=self.properties["RestApiId"], stageName=self.physical_id
        )


# --- BUFFERED: the HTTP API --------------------------------------------------------------------
class HttpApi(ProvidedResource):
    type_name = "AWS::ApiGatewayV2::Api"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        api = client("apigatewayv2").create_api(
            **present(properties, "Name", "ProtocolType", "Description")
        )
        return cls(api["ApiId"], properties, ApiId=api["ApiId"], ApiEndpoint=api["ApiEndpoint"])

    def update(self, properties: dict[str, Any]) -> None:
        client("apigatewayv2").update_api(
            ApiId=self.physical_id, **present(properties, "Name", "Description")
        )

    def remove(self) -> None:
        client("apigatewayv2").delete_api(ApiId=self.physical_id)


class HttpStage(ProvidedResource):
    type_name = "AWS::ApiGatewayV2::Stage"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("apigatewayv2").create_stage(
            **present(
                properties,
                "ApiId",
                "StageName",
                "AutoDeploy",
                "DefaultRouteSettings",
                "AccessLogSettings",
            )
        )
        return cls(properties["StageName"], properties)

    def remove(self) -> None:
        client("apigatewayv2").delete_stage(
            ApiId=self.properties["ApiId"], StageName=self.physical_id
        )


class HttpApiPart(ProvidedResource):
    """An HTTP API's integration, authorizer or route: made, changed and deleted by its id
    (the `<Part>Id` its create answers), its properties those of the API call."""

    part: ClassVar[str] = ""
    SETTINGS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def id_key(cls) -> str:
        return f"{cls.part.title()}Id"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        create = getattr(client("apigatewayv2"), f"create_{cls.part}")
        made = create(**present(properties, "ApiId", *cls.SETTINGS))
        return cls(made[cls.id_key()], properties, **{cls.id_key(): made[cls.id_key()]})

    def update(self, properties: dict[str, Any]) -> None:
        update = getattr(client("apigatewayv2"), f"update_{self.part}")
        update(**{self.id_key(): self.physical_id}, **present(properties, "ApiId", *self.SETTINGS))

    def remove(self) -> None:
        delete = getattr(client("apigatewayv2"), f"delete_{self.part}")
        delete(ApiId=self.properties["ApiId"], **{self.id_key(): self.physical_id})


class HttpIntegration(HttpApiPart):
    type_name = "AWS::ApiGatewayV2::Integration"
    part = "integration"
    SETTINGS = ("IntegrationType", "IntegrationUri", "PayloadFormatVersion")


class HttpAuthorizer(HttpApiPart):
    type_name = "AWS::ApiGatewayV2::Authorizer"
    part = "authorizer"
    SETTINGS = ("Name", "AuthorizerType", "IdentitySource", "JwtConfiguration")


class HttpRoute(HttpApiPart):
    type_name = "AWS::ApiGatewayV2::Route"
    part = "route"
    SETTINGS = ("RouteKey", "Target", "AuthorizationType", "AuthorizerId")


PROVIDERS: tuple[type[ProvidedResource], ...] = (
    RestApi,
    Resource,
    Method,
    Deployment,
    Stage,
    HttpApi,
    HttpStage,
    HttpIntegration,
    HttpAuthorizer,
    HttpRoute,
)
