"""Tests of the shim's translation (no model needed): python3 -m pytest adapters/local_model"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import shim  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_balance",
            "description": "Balance.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def test_telemetry_is_off_before_the_package_can_be_imported():
    assert os.environ["NEEDLE_TELEMETRY"] == "0"
    assert os.environ["DO_NOT_TRACK"] == "1"


def test_a_first_turn_asks_the_model_with_the_tools_and_the_last_user_message():
    body = {
        "messages": [{"role": "system", "content": "You bank."}, {"role": "user", "content": "What is my balance?"}],
        "tools": TOOLS,
    }
    kind, system, query, tools = shim.plan(body)
    assert (kind, system, query) == ("ask", "You bank.", "What is my balance?")
    assert tools == [
        {"name": "get_balance", "description": "Balance.", "parameters": {"type": "object", "properties": {}}}
    ]


def test_after_a_tool_result_the_reply_is_a_final_answer():
    body = {
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "1810.0"},
        ]
    }
    kind, text = shim.plan(body)
    assert kind == "final" and "1810.0" in text


def test_function_calls_become_native_tool_calls_with_usage():
    calls = shim.tool_calls([{"name": "send_money", "arguments": {"amount": 10}}])
    reply = shim.completion({"model": "m"}, None, calls, "prompt text here", "out")
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "send_money"
    assert json.loads(call["function"]["arguments"]) == {"amount": 10}
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert reply["usage"]["prompt_tokens"] == 4 and reply["usage"]["completion_tokens"] == 1


def test_the_server_answers_on_loopback_without_the_model_for_a_final_turn():
    import threading
    import urllib.request
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), shim.handler(shim.Engine(32)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": "ok"}]}
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        reply = json.loads(urllib.request.urlopen(req, timeout=10).read())
        assert reply["choices"][0]["finish_reason"] == "stop"
        bad = urllib.request.Request(url, data=b"[1]", headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(bad, timeout=10)
            raise AssertionError("a body that is not an object was accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 400
    finally:
        server.shutdown()
