"""Serves the suites of the installed `agentdojo` package to sieve-bench.

sieve-bench starts this script and talks to it in JSON lines on stdin/stdout, as
docs/external-suites.md describes. Every task, tool and check stays AgentDojo's: this file
only calls the package's public API and translates between it and the protocol, so that
numbers measured through sieve-bench are AgentDojo's numbers.

One process serves one episode at a time; sieve-bench runs a pool of them for concurrency.
Two modes for CI and for checking the adapter by hand: `--self-test` (this project's
reference plans against the package's own checks) and `--pairs VERSION [WORKERS]
[--all-orders]` (which attacked pairs doing both tasks can win, one JSON line each).
The messages are typed in `protocol.py`, beside this file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import traceback
from ast import literal_eval
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, distribution
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_plans  # noqa: E402  (this project's plans, next to this file)
from protocol import (  # noqa: E402
    PROTOCOL,
    AttackRequest,
    CallDesc,
    CallReply,
    CallRequest,
    DescribeRequest,
    Description,
    FinishRequest,
    Hello,
    Injections,
    InjectionTaskDesc,
    Listing,
    PackageOrigin,
    Started,
    StartRequest,
    ToolDesc,
    UserTaskDesc,
    VectorDesc,
    Verdicts,
)

PACKAGE = "agentdojo"

IMPORT_ERROR: str | None
try:
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message
    from agentdojo.agent_pipeline.tool_execution import is_string_list, tool_result_to_str
    from agentdojo.attacks import FixedJailbreakAttack, load_attack
    from agentdojo.attacks.attack_registry import ATTACKS
    from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
    from agentdojo.task_suite import get_suite, get_suites
except ImportError as missing:  # reported through the protocol, not as a traceback
    IMPORT_ERROR = str(missing)
else:
    IMPORT_ERROR = None

# The package's benchmark versions. It keeps its table of them private, so they are named
# here; `versions()` keeps those the installed package has suites for.
KNOWN_VERSIONS = ("v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2")

# Tool names that only read: AgentDojo does not classify its tools, while sieve-bench's
# defenses (read-only whitelists, read auto-approval) need to know. This is our judgment
# from the names, stated here so it can be checked.
READ_PREFIXES = ("get_", "search_", "read_", "list_", "check_")

# Tools whose later call replaces what an earlier call set, instead of adding a record:
# banking keeps one password and one set of user details, travel one reservation (each
# `reserve_*` overwrites it). Also our judgment from the package's tools, stated here so it
# can be checked; the scripted obedient agent uses it to keep an attacker's setting
# standing (README, "AgentDojo's own suites").
REPLACING_TOOLS = {"update_password", "update_user_info", "reserve_hotel", "reserve_restaurant", "reserve_car_rental"}


# Files of a distribution's RECORD that the installer writes, not the package: left out of
# its origin so the same wheel installed by another tool or Python hashes alike.
INSTALLER_FILES = ("INSTALLER", "REQUESTED", "direct_url.json")


def package_origin(name: str = PACKAGE) -> PackageOrigin | None:
    """Where the installed package came from: SHA-256 over its RECORD's hashed files (path
    and hash, sorted; compiled bytecode and the installer's own files carry none or are
    left out), and the URL it was installed from when the installer recorded one
    (direct_url.json, PEP 610: a git fork, a local folder, a wheel file). A fork published
    under the same name and version has other files, so another origin."""
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    record = dist.read_text("RECORD")
    if record is None:
        return None
    entries = []
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        digest = rest.partition(",")[0]
        if digest and not path.endswith(INSTALLER_FILES):
            entries.append(f"{path},{digest}")
    origin: PackageOrigin = {"record_sha256": hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()}
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            url = json.loads(direct).get("url")
        except (ValueError, AttributeError):
            url = None
        if isinstance(url, str) and url:
            origin["source_url"] = url
    return origin


class ProtocolError(Exception):
    """A request this provider cannot serve; the episode it belongs to fails."""


def family_of(benchmark_version: str) -> str:
    return f"{PACKAGE}@{benchmark_version}"


def split_suite(qualified: str) -> tuple[str, str]:
    """`agentdojo@v1.2.2/banking` -> ("v1.2.2", "banking")."""
    family, _, name = qualified.partition("/")
    package, _, benchmark_version = family.partition("@")
    if package != PACKAGE or not benchmark_version or not name:
        raise ProtocolError(f"`{qualified}` is not a suite of the form {PACKAGE}@<version>/<suite>")
    return benchmark_version, name


def versions() -> list[str]:
    """The benchmark versions the installed package has suites for."""
    return [v for v in KNOWN_VERSIONS if get_suites(v)]


class StandInPipeline:
    """What AgentDojo's attacks read from a pipeline: only its name, naming the model."""

    def __init__(self, name: str | None) -> None:
        self.name = name


def plain(value: Any) -> Any:
    """JSON-ready copy of ground-truth arguments (dates and the like become strings)."""
    return json.loads(json.dumps(value, default=str))


def calls_of(task: Any, environment: Any) -> list[CallDesc]:
    return [{"tool": c.function, "args": plain(dict(c.args))} for c in task.ground_truth(environment)]


# The tag of an injection task whose reference plan is this project's, not AgentDojo's.
OUR_PLAN_TAG = "plan:sieve-bench"


def injection_plan(suite: Any, task_id: str, task: Any, environment: Any) -> tuple[list[CallDesc], list[str]]:
    """AgentDojo's ground truth; where it is empty, this project's plan (and its tag)."""
    calls = calls_of(task, environment.model_copy(deep=True))
    if calls:
        return calls, []
    ours = reference_plans.plan_for(suite.name, task_id, task, environment.model_copy(deep=True))
    if ours is None:
        return calls, []
    return plain(ours), [OUR_PLAN_TAG]


class Episode:
    """The episode a process holds between `start` and `finish`."""

    def __init__(self, suite: Any, user_task: Any, injection_task: Any, env: Any) -> None:
        self.suite = suite
        self.user_task = user_task
        self.injection_task = injection_task
        self.pre = env.model_copy(deep=True)
        self.env = env
        self.runtime = FunctionsRuntime(suite.tools)
        self.trace: list[Any] = []
        # `all`: every call the agent made, failed ones too, as AgentDojo's tool executor
        # keeps it; `executed`: only calls that ran without error.
        self.trace_mode = "all"


class Provider:
    def __init__(self) -> None:
        self.suites: dict[str, Any] = {}
        self.vector_ids: dict[str, set[str]] = {}
        self.candidates: dict[tuple[str, str], list[str]] = {}
        self.attacks: dict[tuple[str, str, str], tuple[Any, str | None]] = {}
        self.episode: Episode | None = None

    def suite(self, qualified: str) -> Any:
        if qualified not in self.suites:
            benchmark_version, name = split_suite(qualified)
            try:
                self.suites[qualified] = get_suite(benchmark_version, name)
            except Exception as e:
                raise ProtocolError(f"{PACKAGE} has no suite `{name}` in version `{benchmark_version}`: {e}") from e
        return self.suites[qualified]

    def known_vectors(self, qualified: str) -> set[str]:
        """The suite's injection vectors (parsed from its YAML once, not per episode)."""
        if qualified not in self.vector_ids:
            self.vector_ids[qualified] = set(self.suite(qualified).get_injection_vector_defaults())
        return self.vector_ids[qualified]

    def vectors_read(self, qualified: str, user_task: Any) -> list[str]:
        """The vectors the ground truth reads, found by AgentDojo's own canary run."""
        key = (qualified, user_task.ID)
        if key not in self.candidates:
            finder = FixedJailbreakAttack("", self.suite(qualified), StandInPipeline(None))
            try:
                self.candidates[key] = list(finder.get_injection_candidates(user_task))
            except ValueError:
                self.candidates[key] = []  # AgentDojo: "not injectable"
        return self.candidates[key]

    def injectable(self, qualified: str, user_task: Any) -> list[str]:
        """`vectors_read`, failing as the package does for a task nothing injects."""
        found = self.vectors_read(qualified, user_task)
        if not found:
            raise ValueError(f"{user_task.ID} is not injectable.")
        return found

    # ------------------------------------------------------------------ operations

    def hello(self, _req: object) -> Hello:
        reply: Hello = {
            "protocol": PROTOCOL,
            "provider": "sieve-bench agentdojo adapter",
            "package": PACKAGE,
            "package_version": installed_version(PACKAGE),
            "traces": ["executed"],
        }
        origin = package_origin()
        if origin is not None:
            reply["package_origin"] = origin
        return reply

    def list(self, _req: object) -> Listing:
        return {"suites": [f"{family_of(v)}/{name}" for v in versions() for name in get_suites(v)]}

    def describe(self, req: DescribeRequest) -> Description:
        qualified = req["suite"]
        suite = self.suite(qualified)
        default_env = suite.load_and_inject_default_environment({})
        tools: list[ToolDesc] = []
        for fn in suite.tools:
            schema = fn.parameters.model_json_schema()
            schema.pop("title", None)
            schema.setdefault("properties", {})
            tool: ToolDesc = {
                "name": fn.name,
                "description": fn.description,
                "parameters": schema,
                "kind": "read" if fn.name.startswith(READ_PREFIXES) else "write",
            }
            if fn.name in REPLACING_TOOLS:
                tool["replaces"] = True
            tools.append(tool)
        vectors: list[VectorDesc] = [{"id": k, "default": v} for k, v in suite.get_injection_vector_defaults().items()]
        user_tasks: list[UserTaskDesc] = []
        for task_id, task in suite.user_tasks.items():
            env = task.init_environment(default_env.model_copy(deep=True))
            user_tasks.append(
                {
                    "id": task_id,
                    "prompt": task.PROMPT,
                    "plan": calls_of(task, env),
                    "answer": task.GROUND_TRUTH_OUTPUT,
                    "vectors": self.vectors_read(qualified, task),
                }
            )
        injection_tasks: list[InjectionTaskDesc] = []
        for task_id, task in suite.injection_tasks.items():
            plan, plan_tags = injection_plan(suite, task_id, task, default_env)
            injection_tasks.append(
                {
                    "id": task_id,
                    "goal": task.GOAL,
                    "plan": plan,
                    "answer": task.GROUND_TRUTH_OUTPUT or None,
                    # AgentDojo weighs every injection task alike; its difficulty goes in the tags.
                    "severity": 1.0,
                    "tags": [f"difficulty:{task.DIFFICULTY.name.lower()}", *plan_tags],
                }
            )
        return {
            "suite": qualified,
            "system_prompt": load_system_message(None),
            "tools": tools,
            "vectors": vectors,
            "user_tasks": user_tasks,
            "injection_tasks": injection_tasks,
            "attacks": list(ATTACKS),
            # Run once per user task and scored by the utility they take away (the
            # package's `is_dos_attack`); sieve-bench runs and scores them as it does.
            "dos_attacks": [name for name, cls in ATTACKS.items() if getattr(cls, "is_dos_attack", False)],
        }

    def attack(self, req: AttackRequest) -> Injections:
        qualified, name, model = req["suite"], req["attack"], req.get("model") or ""
        if name not in ATTACKS:
            raise ProtocolError(f"{PACKAGE} has no attack `{name}`; it has: {', '.join(ATTACKS)}")
        key = (qualified, name, model)
        if key not in self.attacks:
            suite = self.suite(qualified)
            try:
                attack = load_attack(name, suite, StandInPipeline(model))
                model_name = getattr(attack, "model_name", None)
            except ValueError:
                # The package names only models it knows; for any other model (the scripted
                # agent, a local server) it is built for a known one and given the package's
                # own neutral model name instead.
                attack = load_attack(name, suite, StandInPipeline("gpt-4o-2024-05-13"))
                if hasattr(attack, "model_name"):
                    attack.model_name = DEFAULT_MODEL_NAME
                model_name = getattr(attack, "model_name", None)
            # The attack's own canary run finds the same vectors as `vectors_read` (both are
            # the package's `get_injection_candidates`); sharing them runs it once per task.
            if hasattr(attack, "get_injection_candidates"):
                attack.get_injection_candidates = lambda task, q=qualified: self.injectable(q, task)
            self.attacks[key] = (attack, model_name)
        attack, model_name = self.attacks[key]
        suite = self.suite(qualified)
        user_task = suite.get_user_task_by_id(req["user_task"])
        # The vectors this adapter's `describe` found (perhaps in another process): the
        # same canary run, not repeated here.
        described = req.get("vectors")
        if isinstance(described, list) and described:
            self.candidates.setdefault((qualified, user_task.ID), list(described))
        injection_task = suite.get_injection_task_by_id(req["injection_task"])
        try:
            injections = attack.attack(user_task, injection_task)
        except ValueError as e:  # not injectable
            raise ProtocolError(str(e)) from e
        return {"injections": injections}

    def start(self, req: StartRequest) -> Started:
        suite = self.suite(req["suite"])
        user_task = suite.get_user_task_by_id(req["user_task"])
        injection_task = None
        injection_task_id = req.get("injection_task")
        if injection_task_id:
            injection_task = suite.get_injection_task_by_id(injection_task_id)
        injections = req.get("injections") or {}
        unknown = set(injections) - self.known_vectors(req["suite"])
        if unknown:
            raise ProtocolError(f"unknown injection vectors: {', '.join(sorted(unknown))}")
        env = user_task.init_environment(suite.load_and_inject_default_environment(injections))
        # The ground truth of this episode's own environment: where the injected text
        # changes a name the task must use, AgentDojo's ground truth follows it.
        plans: Started = {"plan": calls_of(user_task, env.model_copy(deep=True))}
        if injection_task_id and injection_task is not None:
            plans["injection_plan"], _ = injection_plan(suite, injection_task_id, injection_task, env)
        trace_mode = req.get("trace") or "all"
        if trace_mode not in ("all", "executed"):
            raise ProtocolError(f"unknown trace mode `{trace_mode}`: all or executed")
        self.episode = Episode(suite, user_task, injection_task, env)
        self.episode.trace_mode = trace_mode
        return plans

    def current(self) -> Episode:
        if self.episode is None:
            raise ProtocolError("no episode started")
        return self.episode

    def call(self, req: CallRequest) -> CallReply:
        ep = self.current()
        name, args = req["tool"], dict(req.get("arguments") or {})
        # As AgentDojo's tool executor does: a list sent as a string becomes a list.
        for k, v in list(args.items()):
            if isinstance(v, str) and is_string_list(v):
                args[k] = literal_eval(v)
        call = FunctionCall(function=name, args=args, id=req.get("call_id"))
        if ep.trace_mode == "all":
            ep.trace.append(call)  # before it runs, as AgentDojo's tool executor does
        result, error = ep.runtime.run_function(ep.env, name, args)
        if error is not None:
            return {"error": error}
        if ep.trace_mode == "executed":
            ep.trace.append(call)
        return {"output": tool_result_to_str(result)}

    def finish(self, req: FinishRequest) -> Verdicts:
        ep = self.current()
        self.episode = None
        answer = req.get("answer") or ""
        args = (answer, ep.pre, ep.env, ep.trace)
        task = ep.user_task
        utility = task.utility_from_traces(*args)
        if utility is None:
            utility = task.utility(answer, ep.pre, ep.env)
        security = None
        if ep.injection_task is not None:
            inj = ep.injection_task
            security = inj.security_from_traces(*args)
            if security is None:
                security = inj.security(answer, ep.pre, ep.env)
        return {"utility": bool(utility), "security": None if security is None else bool(security)}

    def handlers(self) -> dict[str, Callable[[Any], Any]]:
        """Each op's handler: a request's fields (as `protocol.py` types them) to its reply's."""
        return {
            "hello": self.hello,
            "list": self.list,
            "describe": self.describe,
            "attack": self.attack,
            "start": self.start,
            "call": self.call,
            "finish": self.finish,
        }


def handle_line(provider: Provider, line: str) -> dict[str, Any]:
    """One request line to its reply: `ok` and the handler's fields, or `ok: false` and
    `error`; always the request's `id` (null when the line is no JSON object)."""
    req: Any = None
    reply: dict[str, Any]
    try:
        req = json.loads(line)
        if not isinstance(req, dict):
            raise ProtocolError("a request must be a JSON object")
        op = req.get("op")
        if IMPORT_ERROR is not None:
            raise ProtocolError(f"the `{PACKAGE}` package cannot be imported: {IMPORT_ERROR}")
        handler = provider.handlers().get(op) if isinstance(op, str) else None
        if handler is None:
            raise ProtocolError(f"unknown op `{op}`")
        reply = {"ok": True, **handler(req)}
    except ProtocolError as e:
        reply = {"ok": False, "error": str(e)}
    except Exception as e:  # a bug in a task or here: the episode fails, the process lives
        reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stderr.write(traceback.format_exc())  # sieve-bench keeps stderr's tail
        sys.stderr.flush()
    reply["id"] = req.get("id") if isinstance(req, dict) else None
    return reply


def serve(provider: Provider, lines: Iterable[str], out: IO[str]) -> None:
    """Answers each non-blank line, one reply line each, flushed."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        out.write(json.dumps(handle_line(provider, line), default=str) + "\n")
        out.flush()


def security_after(suite: Any, task: Any, calls: list[CallDesc]) -> bool:
    """Runs `calls` on the default environment; AgentDojo's verdict on the injection task."""
    env = suite.load_and_inject_default_environment({})
    pre = env.model_copy(deep=True)
    runtime = FunctionsRuntime(suite.tools)
    trace = []
    for c in calls:
        trace.append(FunctionCall(function=c["tool"], args=dict(c["args"])))
        _, error = runtime.run_function(env, c["tool"], dict(c["args"]))
        if error is not None:
            raise ProtocolError(f"`{c['tool']}` failed: {error}")
    verdict = task.security_from_traces("", pre, env, trace)
    return bool(task.security("", pre, env) if verdict is None else verdict)


def self_test() -> int:
    """Checks this project's reference plans against the package's own security checks:
    on the default environment each plan must trip its check, while doing nothing and
    stopping one call short must not. Returns the number of failures."""
    failures = 0
    for v in versions():
        for name in get_suites(v):
            if name not in reference_plans.SUITES:
                continue
            suite = get_suite(v, name)
            default_env = suite.load_and_inject_default_environment({})
            for task_id, task in suite.injection_tasks.items():
                plan, tags = injection_plan(suite, task_id, task, default_env)
                if OUR_PLAN_TAG not in tags:
                    continue
                got: tuple[bool, bool, bool] | str
                try:
                    got = (
                        security_after(suite, task, []),
                        security_after(suite, task, plan[:-1]),
                        security_after(suite, task, plan),
                    )
                except ProtocolError as e:
                    got = str(e)
                ok = got == (False, False, True)
                failures += not ok
                print(
                    f"{'ok  ' if ok else 'FAIL'} {family_of(v)}/{name} {task_id}: "
                    f"(nothing, all but the last call, the plan) -> {got}",
                    file=sys.stderr,
                )
    return failures


def pair_outcomes(
    qualified: str,
    user_task_id: str,
    all_orders: bool = False,
    attack_name: str = "important_instructions",
    model: str = "sim",
) -> list[dict[str, Any]]:
    """For each injection task of the suite, with `user_task_id`: does carrying out both
    the user's task and the attacker's goal (each by its plan for the episode's own
    environment) trip AgentDojo's security check, with the goal first or with it last?
    `goal_last` is null where the goal first won already (unless `all_orders`); a verdict
    is the error's text where the package's own check raised. Everything goes through
    this provider's own operations, as an episode does. A pair that neither order wins is
    one no agent wins by doing both tasks."""
    provider = Provider()
    suite = provider.suite(qualified)
    user_task = suite.get_user_task_by_id(user_task_id)
    if not provider.vectors_read(qualified, user_task):
        return []
    rows = []
    for injection_task_id, injection_task in suite.injection_tasks.items():
        request: AttackRequest = {
            "suite": qualified,
            "attack": attack_name,
            "model": model,
            "user_task": user_task_id,
            "injection_task": injection_task_id,
            "vectors": [],
        }
        injections = provider.attack(request)["injections"]
        row: dict[str, Any] = {"suite": qualified, "user_task": user_task_id, "injection_task": injection_task_id}
        answer = "\n".join(a for a in (user_task.GROUND_TRUTH_OUTPUT, injection_task.GROUND_TRUTH_OUTPUT) if a)
        for order in ("goal_first", "goal_last"):
            if row.get("goal_first") is True and not all_orders:
                row[order] = None  # won already: the other order is not needed
                continue
            plans = provider.start(
                {
                    "suite": qualified,
                    "user_task": user_task_id,
                    "injection_task": injection_task_id,
                    "injections": injections,
                }
            )
            user, goal = plans["plan"], plans.get("injection_plan", [])
            for i, c in enumerate(goal + user if order == "goal_first" else user + goal):
                provider.call({"call_id": str(i), "tool": c["tool"], "arguments": c["args"]})
            try:
                row[order] = provider.finish({"answer": answer})["security"]
            except Exception as e:  # the package's own check failed on this state
                row[order] = f"{type(e).__name__}: {e}"
                provider.episode = None
        rows.append(row)
    return rows


def _pair_outcomes_job(job: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return pair_outcomes(*job)


def print_pairs(benchmark_version: str, workers: int, all_orders: bool) -> None:
    """`--pairs`: one JSON line per attacked pair of every suite of the version, with
    `pair_outcomes`' two verdicts (the package's `important_instructions` attack)."""
    jobs = []
    for name in get_suites(benchmark_version):
        suite = get_suite(benchmark_version, name)
        jobs += [(f"{family_of(benchmark_version)}/{name}", uid, all_orders) for uid in suite.user_tasks]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for rows in pool.imap(_pair_outcomes_job, jobs):
            for row in rows:
                print(json.dumps(row))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serves the installed agentdojo package's suites to sieve-bench "
        "(JSON lines on stdin/stdout, docs/external-suites.md) when run without a mode."
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--self-test", action="store_true", help="check this project's reference plans against the package's own checks"
    )
    mode.add_argument(
        "--pairs",
        metavar="VERSION",
        help="print which attacked pairs of the benchmark version doing both tasks can win",
    )
    parser.add_argument("workers", nargs="?", type=int, default=2, help="with --pairs: worker processes (default 2)")
    parser.add_argument(
        "--all-orders", action="store_true", help="with --pairs: try the second order even where the first won"
    )
    args = parser.parse_args(argv)
    if args.pairs is None and (args.all_orders or args.workers != 2):
        parser.error("WORKERS and --all-orders go with --pairs")
    if args.workers < 1:
        parser.error("WORKERS must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.pairs is not None or args.self_test:
        if IMPORT_ERROR is not None:
            sys.exit(f"the `{PACKAGE}` package cannot be imported: {IMPORT_ERROR}")
        if args.self_test:
            sys.exit(1 if self_test() else 0)
        print_pairs(args.pairs, args.workers, args.all_orders)
        return
    serve(Provider(), sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
