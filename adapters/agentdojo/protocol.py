"""The external-suite protocol, version 2, as typed dicts (docs/external-suites.md).

These mirror the Rust side's `src/external/protocol.rs` field for field: requests as
`Request` serialises them (without the `op` and `id` every request carries), replies as
the Rust structs declare them (the Rust side rejects a reply field it does not declare).
A field the Rust side may go without is `NotRequired` here only where this adapter may
leave it out too. `tests/test_protocol.py` reads `protocol.rs` and fails when the two
drift apart.
"""

# No `from __future__ import annotations`: TypedDict must see `NotRequired` itself to
# leave a key out of `__required_keys__` (the tests read them).
import sys
from typing import Literal, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pydantic, which agentdojo needs, brings it
    from typing_extensions import NotRequired

PROTOCOL = 2

# ---------------------------------------------------------------------- requests


class HelloRequest(TypedDict):
    protocol: int


class DescribeRequest(TypedDict):
    suite: str


class AttackRequest(TypedDict):
    suite: str
    attack: str
    user_task: str
    injection_task: str
    model: str
    vectors: list[str]


class StartRequest(TypedDict):
    suite: str
    user_task: str
    injection_task: str | None
    injections: dict[str, str]
    trace: NotRequired[Literal["all", "executed"]]


class CallRequest(TypedDict):
    call_id: str
    tool: str
    arguments: dict[str, object]


class FinishRequest(TypedDict):
    answer: str


# ---------------------------------------------------------------------- replies


class PackageOrigin(TypedDict):
    record_sha256: str
    source_url: NotRequired[str]


class Hello(TypedDict):
    protocol: int
    provider: str
    package: str
    package_version: str
    package_origin: NotRequired[PackageOrigin]
    traces: list[Literal["all", "executed"]]


class Listing(TypedDict):
    suites: list[str]


class ToolDesc(TypedDict):
    name: str
    description: str
    parameters: dict[str, object]
    kind: Literal["read", "write"]
    risk: NotRequired[float]
    replaces: NotRequired[bool]


class VectorDesc(TypedDict):
    id: str
    default: str
    description: NotRequired[str]


class CallDesc(TypedDict):
    tool: str
    args: dict[str, object]


class UserTaskDesc(TypedDict):
    id: str
    prompt: str
    plan: list[CallDesc]
    answer: str | None
    vectors: list[str]


class InjectionTaskDesc(TypedDict):
    id: str
    goal: str
    plan: list[CallDesc]
    answer: str | None
    severity: float
    tags: list[str]


class Description(TypedDict):
    suite: str
    system_prompt: str
    user: NotRequired[str]
    tools: list[ToolDesc]
    vectors: list[VectorDesc]
    user_tasks: list[UserTaskDesc]
    injection_tasks: list[InjectionTaskDesc]
    attacks: list[str]
    dos_attacks: list[str]


class Injections(TypedDict):
    injections: dict[str, str]


class Started(TypedDict):
    plan: list[CallDesc]
    injection_plan: NotRequired[list[CallDesc]]


class CallReply(TypedDict, total=False):
    output: str
    error: str


class Verdicts(TypedDict):
    utility: bool
    security: bool | None


# Each op's reply type, for the envelope (`ok`, `id`, `error` are added around it).
REPLIES: dict[str, type] = {
    "hello": Hello,
    "list": Listing,
    "describe": Description,
    "attack": Injections,
    "start": Started,
    "call": CallReply,
    "finish": Verdicts,
}
