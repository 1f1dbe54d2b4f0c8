"""The declaration's parts as models: what `targets.declaration` loads a file into.

Frozen pydantic models of the format in `declaration.schema.json` (camelCase in the file,
snake_case here), the ARN shapes the checks use, :class:`DeclarationError` (one line naming
file, tool and field), and reading a YAML or JSON document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

JSON_SCHEMA_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"
TARGET_KINDS: Final = ("lambda", "stateMachine", "http")

_PARTITION = r"aws(?:-[a-z]+)*"
REGION_PATTERN = r"[a-z]{2}(?:-[a-z]+)+-\d"
FUNCTION_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
FUNCTION_ARN: Final = re.compile(
    rf"arn:(?P<partition>{_PARTITION}):lambda:(?P<region>{REGION_PATTERN}):(?P<account>\d{{12}}):"
    r"function:(?P<name>[A-Za-z0-9_-]{1,64})(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?"
)
STATE_MACHINE_ARN: Final = re.compile(
    rf"arn:(?P<partition>{_PARTITION}):states:(?P<region>{REGION_PATTERN}):(?P<account>\d{{12}}):"
    r"stateMachine:(?P<name>[A-Za-z0-9_-]{1,80})"
)
SECRET_ARN: Final = re.compile(
    rf"arn:(?P<partition>{_PARTITION}):secretsmanager:(?P<region>{REGION_PATTERN}):"
    r"(?P<account>\d{12}):secret:(?P<name>[A-Za-z0-9/_+=.@-]{1,512})"
)
COMPLETE_SECRET_NAME: Final = re.compile(r".+-[A-Za-z0-9]{6}")
"""A complete secret ARN's name part: the secret's name, then the `-` and 6 random characters
Secrets Manager adds (IAM matches a policy's resource against that ARN; a partial one, the name
alone, matches nothing)."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.\-]+)\}")


class DeclarationError(ValueError):
    """A declaration that cannot be served; the message is one line naming file, tool, field."""

    def __init__(self, file: str, field: str, problem: str, tool: str | None = None) -> None:
        where = f"{file}: tool {tool!r}: {field}" if tool else f"{file}: {field}"
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.tool = tool
        self.field = field


# -- the models ------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


TaskPolicyName = Literal["inline", "optional", "required"]


class Auth(_Model):
    """How requests to an HTTP target are authorised."""

    type: Literal["none", "apiKey", "bearer", "sigv4"]
    secret_arn: str | None = Field(None, alias="secretArn")
    header: str | None = None
    """apiKey: the header carrying the key (default `x-api-key`)."""
    service: str | None = None
    """sigv4: the signing name (default `execute-api`; `lambda` for function URLs)."""
    region: str | None = None
    """sigv4: the signing region (default: read from the URL, else `aws.region`)."""
    function: str | None = None
    """sigv4 for a function URL (`service: lambda`): the function behind the URL (a name or
    ARN, with its `:qualifier` when the URL is an alias's), for the IAM policy."""


class LambdaTarget(_Model):
    kind: Literal["lambda"]
    function: str
    qualifier: str | None = None
    invocation: Literal["sync", "task"] = "sync"
    payload: Any = None
    """Template of the event (see `targets.templates`); None: the arguments as they are."""

    @property
    def function_name(self) -> str:
        match = FUNCTION_ARN.fullmatch(self.function)
        return match["name"] if match else self.function

    @property
    def effective_qualifier(self) -> str | None:
        match = FUNCTION_ARN.fullmatch(self.function)
        return self.qualifier or (match["qualifier"] if match else None)

    @property
    def unqualified(self) -> str:
        """The function's name or ARN without a qualifier (what `FunctionName` gets)."""
        match = FUNCTION_ARN.fullmatch(self.function)
        if match and match["qualifier"]:
            return self.function.rsplit(":", 1)[0]
        return self.function


class StateMachineTarget(_Model):
    kind: Literal["stateMachine"]
    arn: str
    type: Literal["STANDARD", "EXPRESS"] = "STANDARD"
    input: Any = None
    """Template of the execution input; None: `{"taskId": ..., "arguments": {...}}`."""
    tool_errors: tuple[str, ...] = Field((), alias="toolErrors")
    definition: Path | None = None
    """The ASL file the embedded stack creates the machine from (resolved)."""

    @property
    def name(self) -> str:
        return self.arn.rsplit(":", 1)[-1]


class HttpTarget(_Model):
    kind: Literal["http"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
    url: str
    query: tuple[str, ...] = ()
    headers: dict[str, str] = Field(default_factory=dict)
    header_arguments: dict[str, str] = Field(default_factory=dict, alias="headerArguments")
    """Header name -> the argument whose value it carries (OpenAPI `in: header`)."""
    body: Any = None
    """Template of the JSON body; None: POST/PUT/PATCH send the arguments the URL, query and
    headers did not use."""
    body_argument: str | None = Field(None, alias="bodyArgument")
    """The argument holding the whole JSON body (OpenAPI `requestBody`)."""
    auth: Auth = Field(default_factory=lambda: Auth(type="none"))
    timeout_seconds: float = Field(10.0, alias="timeoutSeconds")

    @property
    def placeholders(self) -> list[str]:
        return _PLACEHOLDER.findall(self.url)


Target = Annotated[LambdaTarget | StateMachineTarget | HttpTarget, Field(discriminator="kind")]


class ToolDeclaration(_Model):
    name: str
    title: str | None = None
    description: str
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(None, alias="outputSchema")
    annotations: dict[str, Any] | None = None
    task: TaskPolicyName | None = None
    ttl_ms: int | None = Field(None, alias="ttlMs")
    poll_interval_ms: int | None = Field(None, alias="pollIntervalMs")
    max_poll_interval_ms: int | None = Field(None, alias="maxPollIntervalMs")
    scopes: tuple[str, ...] = ()
    target: Target

    @property
    def task_policy(self) -> TaskPolicyName:
        """The declared policy, else what the target implies: a Standard machine or a
        Lambda task runs only as a task; everything else inline."""
        if self.task is not None:
            return self.task
        target = self.target
        if isinstance(target, StateMachineTarget) and target.type == "STANDARD":
            return "required"
        if isinstance(target, LambdaTarget) and target.invocation == "task":
            return "required"
        return "inline"


class OpenApiSource(_Model):
    document: Path
    base_url: str | None = Field(None, alias="baseUrl")
    operations: tuple[str, ...] | None = None
    auth: Auth = Field(default_factory=lambda: Auth(type="none"))
    timeout_seconds: float = Field(10.0, alias="timeoutSeconds")
    task: TaskPolicyName | None = None
    ttl_ms: int | None = Field(None, alias="ttlMs")
    poll_interval_ms: int | None = Field(None, alias="pollIntervalMs")
    max_poll_interval_ms: int | None = Field(None, alias="maxPollIntervalMs")
    scopes: tuple[str, ...] = ()


class AwsPlace(_Model):
    partition: str = "aws"
    region: str | None = None
    account: str | None = None


class LocalUse(_Model):
    module: str | None = None
    http_stub: str | None = Field(None, alias="httpStub")


class Declaration(_Model):
    """A checked declaration: its tools (OpenAPI operations expanded), paths resolved."""

    path: Path
    name: str | None = None
    aws: AwsPlace = Field(default_factory=AwsPlace)
    local: LocalUse = Field(default_factory=LocalUse)
    tools: tuple[ToolDeclaration, ...] = ()

    @property
    def file(self) -> str:
        return str(self.path)


# -- reading ------------------------------------------------------------------------------


def read_document(path: Path) -> Any:
    """A YAML or JSON file's data (YAML only if PyYAML is there; JSON always)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        return json.loads(text)
    import yaml  # a YAML declaration's cost only

    return yaml.safe_load(text)
