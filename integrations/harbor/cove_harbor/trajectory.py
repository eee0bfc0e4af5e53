"""Cove's run events (``cove run --json``) as Harbor's ATIF trajectory and token figures."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harbor.models.trajectories import (
    Agent,
    FinalMetrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)


@dataclass
class Totals:
    """What the runs of a trial used, summed over every ``thread_run_end``."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    runs: int = 0
    last_status: str | None = None
    thread_id: str | None = None

    def add(self, event: dict[str, Any]) -> None:
        usage = event.get("usage") or {}
        self.input_tokens += int(usage.get("input_tokens", 0))
        self.cached_tokens += int(usage.get("cached_tokens", 0))
        self.output_tokens += int(usage.get("output_tokens", 0))
        if event.get("cost") is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(event["cost"])
        self.runs += 1
        self.last_status = event.get("status")


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of ``path``; a line cut by a killed process is skipped."""
    events = []
    if not path.exists():
        return events
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and "type" in event:
            events.append(event)
    return events


def totals(events: list[dict[str, Any]]) -> Totals:
    """The tokens and cost of every run in ``events``."""
    sums = Totals()
    for event in events:
        sums.thread_id = sums.thread_id or event.get("thread_id")
        if event["type"] == "thread_run_end":
            sums.add(event)
    return sums


def _timestamp(event: dict[str, Any]) -> str | None:
    ms = event.get("timestamp_ms")
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


class _Builder:
    """Folds events into steps: a user message, then one agent step per model answer with
    its tool calls and their results."""

    def __init__(self, model: str | None) -> None:
        self.model = model
        self.steps: list[Step] = []
        self.current: dict[str, Any] | None = None

    def flush(self) -> None:
        if self.current is None:
            return
        step = self.current
        self.current = None
        results = [
            ObservationResult(source_call_id=call_id, content=content)
            for call_id, content in step["results"]
        ]
        self.steps.append(
            Step(
                step_id=len(self.steps) + 1,
                timestamp=step["timestamp"],
                source="agent",
                model_name=self.model,
                message=step["text"],
                tool_calls=step["calls"] or None,
                observation=Observation(results=results) if results else None,
            )
        )

    def user(self, text: str, timestamp: str | None) -> None:
        self.flush()
        self.steps.append(
            Step(step_id=len(self.steps) + 1, timestamp=timestamp, source="user", message=text)
        )

    def agent(self, timestamp: str | None) -> dict[str, Any]:
        if self.current is None:
            self.current = {"timestamp": timestamp, "text": "", "calls": [], "results": []}
        return self.current

    def event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        when = _timestamp(event)
        if kind == "user_message":
            self.user(event.get("text", ""), when)
        elif kind == "assistant_response_start":
            self.flush()
            self.agent(when)
        elif kind == "llm_retry" and self.current is not None:
            # The attempt's partial text was discarded; the retry streams the answer anew.
            self.current["text"] = ""
        elif kind == "assistant_text":
            self.agent(when)["text"] += event.get("text", "")
        elif kind == "tool_started":
            arguments = event.get("arguments")
            self.agent(when)["calls"].append(
                ToolCall(
                    tool_call_id=event["call_id"],
                    function_name=event["tool"],
                    arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
                )
            )
        elif kind in ("tool_completed", "tool_failed"):
            step = self.agent(when)
            if not any(c.tool_call_id == event["call_id"] for c in step["calls"]):
                # A result with no call in this step (a resumed run's replay): keep the
                # call beside it so the trajectory stays whole.
                step["calls"].append(
                    ToolCall(tool_call_id=event["call_id"], function_name=event["tool"], arguments={})
                )
            text = event.get("output") if kind == "tool_completed" else f"error: {event.get('error', '')}"
            step["results"].append((event["call_id"], text))
        elif kind == "error":
            self.flush()
            self.steps.append(
                Step(
                    step_id=len(self.steps) + 1,
                    timestamp=when,
                    source="system",
                    message=f"error: {event.get('message', '')}",
                )
            )


def trajectory(
    events: list[dict[str, Any]], instruction: str, model: str | None, version: str
) -> Trajectory:
    """The ATIF trajectory of ``events``; ``instruction`` opens it when no event carries it."""
    builder = _Builder(model)
    if not any(e["type"] == "user_message" for e in events[:3]):
        builder.user(instruction, _timestamp(events[0]) if events else None)
    for event in events:
        builder.event(event)
    builder.flush()
    sums = totals(events)
    return Trajectory(
        session_id=sums.thread_id,
        agent=Agent(name="cove", version=version, model_name=model),
        steps=builder.steps,
        final_metrics=FinalMetrics(
            total_prompt_tokens=sums.input_tokens,
            total_completion_tokens=sums.output_tokens,
            total_cached_tokens=sums.cached_tokens,
            total_cost_usd=sums.cost_usd,
            total_steps=len(builder.steps),
        ),
    )
