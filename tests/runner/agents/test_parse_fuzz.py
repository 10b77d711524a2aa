"""The parsers never raise: any text, any bytes, random JSON, plausible shapes and mutated
fixture lines all become transcript items. For plausible JSON the parser's own logic (under the
catch-all) must not raise either, so the catch-all stays a safety net, not the mechanism."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.agents.claude_code import ClaudeCodeAdapter
from runner.agents.codex import CodexAdapter
from runner.agents.item import TranscriptItem
from runner.agents.opencode import OpenCodeAdapter
from tests.helpers import REPO

FIXTURES = REPO / ".." / "shared" / "fixtures" / "transcripts"
ADAPTERS = {"claude": ClaudeCodeAdapter, "codex": CodexAdapter, "opencode": OpenCodeAdapter}
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_SHAPES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # bigger examples

# Field names and type tags the three CLIs use, so random objects reach the real branches.
TYPES = {
    "claude": ["system", "assistant", "user", "result", "stream_event"],
    "codex": [
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "error",
    ],
    "opencode": ["step_start", "step_finish", "text", "reasoning", "tool_use", "error"],
}
INNER_TYPES = [
    "text", "thinking", "redacted_thinking", "tool_use", "tool_result", "message_start", "message_delta", "content_block_delta",
    "command_execution", "agent_message", "reasoning", "error", "todo_list", "file_change", "mcp_tool_call", "web_search",
    "tool", "step-finish", "init", "api_retry", "status",
]  # fmt: skip
KEYS = [
    "type", "subtype", "message", "content", "usage", "event", "item", "part", "error", "id", "name", "input", "text",
    "tool_use_id", "is_error", "result", "total_cost_usd", "input_tokens", "output_tokens", "cache_read_input_tokens",
    "cached_input_tokens", "command", "aggregated_output", "exit_code", "status", "items", "changes", "tokens", "cost",
    "cache", "state", "metadata", "exit", "output", "callID", "tool", "data", "statusCode", "isRetryable", "reason",
    "model", "attempt", "errors", "api_error_status", "arguments", "server", "query", "completed", "thinking", "delta",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(INNER_TYPES)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=12,
)


def tagged(types: list[str], values, max_size: int):
    """A dict with a ``type`` from ``types`` and a few known keys holding ``values``."""
    fields = st.dictionaries(st.sampled_from([k for k in KEYS if k != "type"]), values, max_size=max_size)
    return st.builds(lambda tag, rest: {**rest, "type": tag}, st.sampled_from(types), fields)


def plausible(agent: str):
    """Objects shaped like the agent's lines: a known type tag and known keys holding anything."""
    blocks = st.lists(tagged(INNER_TYPES, json_values, 4), max_size=3)
    inner = tagged(INNER_TYPES, json_values | blocks, 4)
    return tagged(TYPES[agent], json_values | inner | blocks, 5)


def fixture_objects(agent: str) -> list[dict]:
    if not FIXTURES.is_dir():
        return [{"type": TYPES[agent][0]}]
    return [
        json.loads(line) for path in sorted(FIXTURES.glob(f"{agent}-*.jsonl")) for line in path.read_text().splitlines()
    ]


def mutate(obj, data, depth=0):
    """Replace some leaves or sub-trees of a real line with random JSON."""
    if data.draw(st.integers(0, 5)) == 0 or depth > 6:
        return data.draw(json_values)
    if isinstance(obj, dict):
        return {k: mutate(v, data, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [mutate(v, data, depth + 1) for v in obj]
    return obj


def check(items):
    assert isinstance(items, list)
    for item in items:
        assert isinstance(item, TranscriptItem)
        item.bounded()


def check_strict(adapter, obj):
    """The parser's own logic handles the object without falling back on the catch-all."""
    line = json.dumps(obj)
    decoded = json.loads(line)
    result = adapter._parse(decoded)
    assert result is None or isinstance(result, list)
    check(adapter.parse(line))


@pytest.mark.parametrize("agent", ADAPTERS)
@FUZZ
@given(text=st.text())
def test_any_text(agent, text):
    adapter = ADAPTERS[agent]()
    for line in [text, text + "\n", *text.splitlines()]:
        check(adapter.parse(line))


@pytest.mark.parametrize("agent", ADAPTERS)
@FUZZ
@given(blob=st.binary())
def test_any_bytes_decoded_with_replacement(agent, blob):
    check(ADAPTERS[agent]().parse(blob.decode("utf-8", errors="replace")))


@pytest.mark.parametrize("agent", ADAPTERS)
@FUZZ
@given(value=json_values)
def test_any_json(agent, value):
    adapter = ADAPTERS[agent]()
    check(adapter.parse(json.dumps(value)))
    if isinstance(value, dict):
        check_strict(adapter, value)


@pytest.mark.parametrize("agent", ADAPTERS)
@FUZZ_SHAPES
@given(data=st.data())
def test_plausible_shapes_in_sequence(agent, data):
    adapter = ADAPTERS[agent]("gpt-5")
    for obj in data.draw(st.lists(plausible(agent), min_size=1, max_size=6)):
        check_strict(adapter, obj)
    totals = adapter.usage_totals()
    assert set(totals) == {"tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd", "cost_known"}
    assert totals["tokens_in"] >= 0 and totals["tokens_out"] >= 0 and isinstance(totals["cost_known"], bool)
    check(adapter.finish())


@pytest.mark.parametrize("agent", ADAPTERS)
@FUZZ_SHAPES
@given(data=st.data())
def test_mutated_fixture_lines(agent, data):
    adapter = ADAPTERS[agent]()
    originals = fixture_objects(agent)
    for obj in data.draw(st.lists(st.sampled_from(originals), min_size=1, max_size=8)):
        mutated = mutate(obj, data)
        if isinstance(mutated, dict):
            check_strict(adapter, mutated)
        else:
            check(adapter.parse(json.dumps(mutated)))
    check(adapter.finish())
