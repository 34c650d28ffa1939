"""The adapter's side of the provider protocol: its typed messages against the Rust
side's, and request/response exchanges through its handlers (no model involved: the
requests are what sieve-bench sends, the plans AgentDojo's own ground truth). Tests that
need the agentdojo package skip without it; CI installs it."""

from __future__ import annotations

import functools
import io
import json
import re
import sys
from pathlib import Path
from typing import Any, get_type_hints

import pytest

HERE = Path(__file__).resolve().parent
ADAPTER = HERE.parent
ROOT = ADAPTER.parent.parent
sys.path.insert(0, str(ADAPTER))

import protocol  # noqa: E402
import provider  # noqa: E402

needs_agentdojo = pytest.mark.skipif(
    provider.IMPORT_ERROR is not None, reason=f"agentdojo is not installed: {provider.IMPORT_ERROR}"
)

BANKING = "agentdojo@v1.2.2/banking"


# ------------------------------------------------------------------ the Rust side's types


def rust_source() -> str:
    return (ROOT / "src" / "external" / "protocol.rs").read_text()


def rust_fields(body: str) -> dict[str, bool]:
    """Field name -> required (no `#[serde(default...)]` before it), in a struct's or a
    request variant's body."""
    fields: dict[str, bool] = {}
    optional_next = False
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("///") or not line:
            continue
        if line.startswith("#[serde(") and "default" in line:
            optional_next = True
            continue
        m = re.match(r"(?:pub\s+)?(\w+)\s*:(?!:)", line)
        if m:
            fields[m.group(1)] = not optional_next
        optional_next = False
    return fields


def rust_structs() -> dict[str, dict[str, bool]]:
    return {
        name: rust_fields(body) for name, body in re.findall(r"pub struct (\w+) \{\n(.*?)\n\}", rust_source(), re.S)
    }


def rust_requests() -> dict[str, dict[str, bool]]:
    enum = re.search(r"pub enum Request<'a> \{\n(.*?)\n\}", rust_source(), re.S)
    assert enum, "protocol.rs has no Request enum"
    variants: dict[str, dict[str, bool]] = {}
    for name, one_line, block in re.findall(
        r"^    (\w+)(?: \{ ([^}\n]*) \}| \{\n(.*?)\n    \})?,", enum.group(1), re.S | re.M
    ):
        variants[name] = rust_fields((one_line or block).replace(", ", "\n"))
    return variants


def python_fields(typed: Any) -> dict[str, bool]:
    keys = get_type_hints(typed, include_extras=True)
    return {k: k in typed.__required_keys__ for k in keys}


def test_every_reply_type_mirrors_the_rust_struct():
    structs = rust_structs()
    for op, typed in protocol.REPLIES.items():
        rust = structs[typed.__name__]
        ours = python_fields(typed)
        assert set(ours) == set(rust), f"{op}: {typed.__name__} fields differ: ours {sorted(ours)}, Rust {sorted(rust)}"
        # What the Rust side needs, the adapter always sends.
        missing = [k for k, required in rust.items() if required and not ours[k]]
        assert not missing, f"{typed.__name__}: Rust requires {missing}"


def test_every_nested_type_mirrors_the_rust_struct():
    structs = rust_structs()
    for typed in (
        protocol.ToolDesc,
        protocol.VectorDesc,
        protocol.CallDesc,
        protocol.UserTaskDesc,
        protocol.InjectionTaskDesc,
    ):
        rust, ours = structs[typed.__name__], python_fields(typed)
        assert set(ours) == set(rust), f"{typed.__name__}: ours {sorted(ours)}, Rust {sorted(rust)}"


def test_every_request_type_mirrors_the_rust_request():
    requests = rust_requests()
    assert set(requests) == {"Hello", "List", "Describe", "Attack", "Start", "Call", "Finish"}, requests
    assert set(protocol.REPLIES) == {name.lower() for name in requests}
    for name, rust in requests.items():
        typed = getattr(protocol, f"{name}Request", None)
        if typed is None:
            assert not rust, f"{name} carries fields but protocol.py has no {name}Request"
            continue
        assert set(python_fields(typed)) == set(rust), (
            f"{name}: ours {sorted(python_fields(typed))}, Rust {sorted(rust)}"
        )


def test_the_protocol_version_is_the_rust_sides():
    m = re.search(r"pub const PROTOCOL: u32 = (\d+);", rust_source())
    assert m and int(m.group(1)) == protocol.PROTOCOL


# ------------------------------------------------------------------ the envelope


def test_a_line_that_is_no_request_fails_alone_with_a_null_id():
    p = provider.Provider()
    for line in ("not json", "[1, 2]", "42"):
        reply = provider.handle_line(p, line)
        assert reply["ok"] is False and reply["id"] is None, reply
        assert reply["error"]


def test_an_unknown_op_is_an_error_that_echoes_the_id():
    reply = provider.handle_line(provider.Provider(), json.dumps({"op": "dance", "id": 7}))
    assert reply == {"ok": False, "error": reply["error"], "id": 7}
    if provider.IMPORT_ERROR is None:
        assert reply["error"] == "unknown op `dance`"
    else:
        assert "cannot be imported" in reply["error"]


def test_serve_answers_each_line_once_and_skips_blank_ones():
    out = io.StringIO()
    provider.serve(provider.Provider(), ["\n", '{"op": "nope", "id": 1}\n', "  \n", '{"op": "nope", "id": 2}\n'], out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in replies] == [1, 2]


# ------------------------------------------------------------------ the command line


def test_the_command_line_modes():
    args = provider.parse_args(["--pairs", "v1.2.2", "3", "--all-orders"])
    assert (args.pairs, args.workers, args.all_orders, args.self_test) == ("v1.2.2", 3, True, False)
    assert provider.parse_args(["--self-test"]).self_test
    served = provider.parse_args([])
    assert served.pairs is None and not served.self_test
    for bad in (["--all-orders"], ["--self-test", "--pairs", "v1"], ["--pairs", "v1", "0"], ["3"]):
        with pytest.raises(SystemExit):
            provider.parse_args(bad)


# ------------------------------------------------------------------ exchanges with the package


def exchange(p: provider.Provider, op: str, **fields: Any) -> dict[str, Any]:
    """One request as sieve-bench sends it; the reply checked against its typed dict."""
    request = {"op": op, "id": exchange.next_id, **fields}  # type: ignore[attr-defined]
    exchange.next_id += 1  # type: ignore[attr-defined]
    reply = provider.handle_line(p, json.dumps(request))
    assert reply.pop("id") == request["id"]
    assert reply.pop("ok") is True, reply
    shape = python_fields(protocol.REPLIES[op])
    assert set(reply) <= set(shape), f"{op} sends fields the Rust side does not declare: {set(reply) - set(shape)}"
    assert {k for k, required in shape.items() if required} <= set(reply), op
    return reply


exchange.next_id = 1  # type: ignore[attr-defined]


@functools.cache
def banking() -> tuple[provider.Provider, dict[str, Any]]:
    """One provider and its description of banking (describing runs the package's canary
    search for every user task: slow, so done once)."""
    p = provider.Provider()
    return p, exchange(p, "describe", suite=BANKING)


def run_plan(p: provider.Provider, plan: list[dict[str, Any]]) -> None:
    for i, call in enumerate(plan):
        reply = exchange(p, "call", call_id=str(i), tool=call["tool"], arguments=call["args"])
        assert "error" not in reply, (call, reply)


@needs_agentdojo
def test_handshake_listing_and_description():
    p = provider.Provider()
    hello = exchange(p, "hello", protocol=protocol.PROTOCOL)
    assert hello["protocol"] == protocol.PROTOCOL and hello["package"] == "agentdojo"
    assert BANKING in exchange(p, "list")["suites"]
    _, described = banking()
    assert described["suite"] == BANKING
    assert described["user_tasks"] and described["injection_tasks"] and described["tools"]
    for tool in described["tools"]:
        assert set(tool) <= set(python_fields(protocol.ToolDesc)), tool
    assert "important_instructions" in described["attacks"]


@needs_agentdojo
def test_a_clean_episode_solved_by_the_ground_truth():
    p, described = banking()
    task = described["user_tasks"][0]
    started = exchange(p, "start", suite=BANKING, user_task=task["id"], injection_task=None, injections={})
    assert "injection_plan" not in started
    run_plan(p, started["plan"])
    assert exchange(p, "finish", answer=task["answer"] or "") == {"utility": True, "security": None}


@needs_agentdojo
def test_an_attacked_episode_where_the_agent_obeys_the_injection():
    p, described = banking()
    task = next(t for t in described["user_tasks"] if t["vectors"])
    goal = described["injection_tasks"][0]
    injections = exchange(
        p,
        "attack",
        suite=BANKING,
        attack="important_instructions",
        user_task=task["id"],
        injection_task=goal["id"],
        model="sim",
        vectors=task["vectors"],
    )["injections"]
    assert set(injections) <= set(task["vectors"])
    started = exchange(
        p, "start", suite=BANKING, user_task=task["id"], injection_task=goal["id"], injections=injections
    )
    run_plan(p, started["injection_plan"] + started["plan"])
    assert exchange(p, "finish", answer="")["security"] is True


@needs_agentdojo
def test_a_call_outside_an_episode_and_an_unknown_vector_are_errors():
    p = provider.Provider()
    reply = provider.handle_line(p, json.dumps({"op": "call", "id": 1, "call_id": "0", "tool": "x", "arguments": {}}))
    assert reply["ok"] is False and reply["error"] == "no episode started"
    reply = provider.handle_line(
        p,
        json.dumps(
            {
                "op": "start",
                "id": 2,
                "suite": BANKING,
                "user_task": "user_task_0",
                "injection_task": None,
                "injections": {"nowhere": "x"},
            }
        ),
    )
    assert reply["ok"] is False and "unknown injection vectors: nowhere" in reply["error"]
