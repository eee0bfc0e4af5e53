"""Cove as a Harbor agent: the static ``coved`` in the task's environment, ``cove`` here.

``harbor run -p TASKS -a cove_harbor:CoveAgent -m anthropic/claude-sonnet-4-5``

``setup`` puts ``coved`` into the environment through Harbor's own upload and starts it on
the environment's loopback; ``run`` serves a relay on this machine's loopback (each request
one ``coved call`` through the environment's exec) and runs ``cove run`` against it with the
task's instruction. Cove's events, its log, coved's log, the thread as one HTML page and
the ATIF trajectory land in the trial's ``agent/`` folder; tokens and cost in its context.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import Field

from harbor.agents.base import BaseAgent
from harbor.agents.options import AgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from cove_harbor import trajectory
from cove_harbor.relay import Relay

# Where coved lives in the task's environment: a folder of root's, so that an agent that
# runs as another user cannot replace the binary every relayed request runs.
BIN_DIR = "/opt/cove-harbor"
COVED_IN_SANDBOX = f"{BIN_DIR}/coved"
# coved's state, output and spilled answers: the agent's user's own (coved runs as it).
SANDBOX_DIR = "/tmp/cove-harbor"
LISTENING = re.compile(r"coved listening on http://127\.0\.0\.1:(\d+)")
# What a question gets in an unattended trial.
NO_ONE_TO_ASK = (
    "No one can answer: this is an unattended evaluation. Decide for yourself, "
    "state the assumption you make, and finish the task."
)
# cove's exit codes (docs/running.md) that mean the thread waits for a person.
EXIT_ASKS, EXIT_PLAN, EXIT_PERMISSION, EXIT_CAP = 3, 8, 9, 4


class CoveSetupError(RuntimeError):
    """coved could not be put or started in the task's environment; the message says why."""


class CoveRunError(RuntimeError):
    """``cove`` ended the run with an error (the model's, the sandbox's); the message is cove's."""


class CoveOptions(AgentOptions):
    """What ``--ak key=value`` may set for Cove."""

    cove: str | None = Field(
        default=None, description="The cove binary (default: $COVE_BIN, then cove on PATH)."
    )
    coved: str | None = Field(
        default=None,
        description="A statically linked coved for the task's container (default: $COVE_COVED_BIN, "
        "then coved beside cove).",
    )
    max_iterations: int | None = Field(default=None, description="cove run --max-iterations.")
    max_cost: float | None = Field(default=None, description="cove run --max-cost, in USD.")
    tool_calls: Literal["native", "xml"] | None = Field(
        default=None, description="cove run --tool-calls."
    )
    context_window: int | None = Field(default=None, description="cove run --context-window.")
    answers: int = Field(
        default=3,
        description="How many of the agent's questions are answered 'decide for yourself' "
        "before the trial ends with the question open.",
    )
    start_timeout_sec: float = Field(
        default=30.0, description="How long coved may take to listen in the environment."
    )


def _binary(given: str | None, option: str, variable: str, fallback: str | None) -> str:
    path = given or os.environ.get(variable) or fallback
    if path is None or not Path(path).is_file():
        raise CoveSetupError(
            f"no {option} binary: set {variable} or --ak {option}=PATH (looked at {path!r})"
        )
    return str(Path(path).resolve())


class CoveAgent(BaseAgent):
    """Cove's controller outside the task's environment, its daemon inside."""

    options_model = CoveOptions
    SUPPORTS_ATIF = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        options: CoveOptions = self.options  # type: ignore[assignment]
        self.cove_options = options
        self._token = secrets.token_hex(24)
        self._coved_port: int | None = None
        # The sandbox's own coved, in Cove's environment: no relay.
        self._direct: str | None = None
        self._workspace: str | None = None

    @staticmethod
    def name() -> str:
        return "cove"

    def _cove(self) -> str:
        return _binary(self.cove_options.cove, "cove", "COVE_BIN", shutil.which("cove"))

    def _coved(self) -> str:
        beside = Path(self._cove()).with_name("coved")
        return _binary(self.cove_options.coved, "coved", "COVE_COVED_BIN", str(beside))

    def version(self) -> str | None:
        try:
            out = subprocess.run(
                [self._cove(), "--version"], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError, CoveSetupError):
            return None
        return out.stdout.strip().removeprefix("cove ").strip() or None

    async def setup(self, environment: BaseEnvironment) -> None:
        """Puts coved into the environment and starts it on the environment's loopback; in
        Cove's own environment, takes the sandbox's coved."""
        connection = getattr(environment, "cove_connection", None)
        if callable(connection):
            self._direct, self._token = connection()
            return
        coved = self._coved()
        probe = await environment.exec(f"mkdir -p -m 700 {SANDBOX_DIR} && pwd")
        if probe.return_code != 0:
            raise CoveSetupError(
                "the task's environment cannot run a command (Harbor's Docker environment "
                f"runs each with bash -c): exit code {probe.return_code}: "
                f"{(probe.stdout or '').strip()[-400:]}"
            )
        self._workspace = (probe.stdout or "").strip().splitlines()[-1] or "/"
        await environment.exec(f"rm -rf {BIN_DIR} && mkdir -p -m 755 {BIN_DIR}", user="root")
        await environment.upload_file(coved, COVED_IN_SANDBOX)
        check = await environment.exec(
            f"chown -R 0:0 {BIN_DIR}; chmod 755 {COVED_IN_SANDBOX} && {COVED_IN_SANDBOX} --version",
            user="root",
        )
        if check.return_code != 0:
            raise CoveSetupError(
                f"coved does not run in the task's environment (a dynamically linked build? "
                f"use the static one, see docs/harbor.md): {(check.stdout or '').strip()[-400:]}"
            )
        start = (
            f"cd / && setsid {COVED_IN_SANDBOX} --listen 127.0.0.1:0 "
            f"--workspace {shlex.quote(self._workspace)} --state-dir {SANDBOX_DIR}/state "
            f"</dev/null >{SANDBOX_DIR}/coved.out 2>{SANDBOX_DIR}/coved.log &"
        )
        started = await environment.exec(start, env={"COVE_TOKEN": self._token})
        if started.return_code != 0:
            raise CoveSetupError(f"coved did not start: {(started.stdout or '').strip()[-400:]}")
        self._coved_port = await self._wait_listening(environment)

    async def _wait_listening(self, environment: BaseEnvironment) -> int:
        deadline = asyncio.get_running_loop().time() + self.cove_options.start_timeout_sec
        while True:
            out = await environment.exec(
                f"cat {SANDBOX_DIR}/coved.out; echo; tail -c 2000 {SANDBOX_DIR}/coved.log"
            )
            found = LISTENING.search(out.stdout or "")
            if found:
                return int(found.group(1))
            if asyncio.get_running_loop().time() > deadline:
                raise CoveSetupError(
                    f"coved did not listen within {self.cove_options.start_timeout_sec:.0f} s; "
                    f"its log: {(out.stdout or '').strip()[-600:]}"
                )
            await asyncio.sleep(0.2)

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        """Runs ``cove run`` on the instruction; answers its questions as no one is there."""
        if self._coved_port is None and self._direct is None:
            raise CoveSetupError("setup() did not start coved")
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        events_path = self.logs_dir / "cove-events.jsonl"
        relay = Relay(
            environment, COVED_IN_SANDBOX, self._coved_port or 0, spill_dir=SANDBOX_DIR, token=self._token
        )
        url = self._direct or await relay.start()
        try:
            code = await self._cove_run(["run", instruction], url, events_path)
            for _ in range(self.cove_options.answers):
                thread = trajectory.totals(trajectory.read_events(events_path)).thread_id
                if thread is None:
                    break
                if code == EXIT_ASKS:
                    code = await self._cove_run(["reply", thread, NO_ONE_TO_ASK], url, events_path)
                elif code == EXIT_PLAN:
                    code = await self._cove_run(["approve", thread], url, events_path)
                else:
                    break
            self._check_exit(code)
        finally:
            await relay.close()
            context.metadata = {
                **(context.metadata or {}),
                "relay_requests": relay.requests,
                "relay_failures": relay.failures,
            }
            try:
                await self._record(instruction, events_path, context)
                if self._direct is None:
                    await self._collect_coved_log(environment)
            except Exception as e:  # noqa: BLE001 - the run's own outcome matters more
                self.logger.warning("Cove's record of the trial is incomplete: %s", e)

    def _cove_args(self, url: str) -> list[str]:
        options = self.cove_options
        args = ["--json", "--no-prompt", "--permissions", "yolo", "--sandbox", url]
        if options.max_iterations is not None:
            args += ["--max-iterations", str(options.max_iterations)]
        if options.max_cost is not None:
            args += ["--max-cost", str(options.max_cost)]
        if options.context_window is not None:
            args += ["--context-window", str(options.context_window)]
        return args

    async def _cove_run(self, command: list[str], url: str, events_path: Path) -> int:
        """Runs one cove command to its end; killed (and waited for) if the trial is cancelled."""
        verb, *rest = command
        args = [self._cove(), verb, *self._cove_args(url)]
        if verb == "run":
            if self.model_name:
                args += ["--model", self.model_name]
            if self.cove_options.tool_calls:
                args += ["--tool-calls", self.cove_options.tool_calls]
        env = {
            **os.environ,
            **self._extra_env,
            "COVE_SANDBOX_TOKEN": self._token,
            "COVE_DB": str(self.logs_dir / "cove.db"),
        }
        with events_path.open("ab") as events, (self.logs_dir / "cove.log").open("ab") as log:
            # `--`: an instruction may start with a dash.
            process = await asyncio.create_subprocess_exec(
                *args, "--", *rest, stdin=asyncio.subprocess.DEVNULL, stdout=events, stderr=log, env=env
            )
            try:
                return await process.wait()
            except asyncio.CancelledError:
                await _stop(process)
                raise

    def _check_exit(self, code: int) -> None:
        if code in (0, EXIT_CAP):
            return
        why = self._last_error()
        if code == EXIT_ASKS:
            why = f"the agent still asks after {self.cove_options.answers} answers: {why}"
        raise CoveRunError(f"cove exited with {code}: {why}")

    def _last_error(self) -> str:
        """Why cove stopped: its last fatal error event (``--json`` puts errors there), else the
        last line it wrote on stderr."""
        events = trajectory.read_events(self.logs_dir / "cove-events.jsonl")
        errors = [e.get("message", "") for e in events if e["type"] == "error" and e.get("fatal")]
        if errors:
            return errors[-1]
        log = (self.logs_dir / "cove.log").read_text(errors="replace").strip().splitlines()
        return log[-1] if log else "(cove said nothing: see agent/cove.log)"

    async def _record(self, instruction: str, events_path: Path, context: AgentContext) -> None:
        """Writes the trajectory and fills the context, whatever the run's end."""
        events = trajectory.read_events(events_path)
        sums = trajectory.totals(events)
        context.n_input_tokens = sums.input_tokens
        context.n_cache_tokens = sums.cached_tokens
        context.n_output_tokens = sums.output_tokens
        context.cost_usd = sums.cost_usd
        context.metadata = {
            **(context.metadata or {}),
            "thread": sums.thread_id,
            "runs": sums.runs,
            "status": sums.last_status,
        }
        version = await asyncio.to_thread(self.version)
        atif = trajectory.trajectory(events, instruction, self.model_name, version or "")
        (self.logs_dir / "trajectory.json").write_text(atif.model_dump_json(indent=2, exclude_none=True))
        if sums.thread_id:
            export = await asyncio.create_subprocess_exec(
                self._cove(), "export", sums.thread_id, "-o", str(self.logs_dir / "thread.html"),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env={**os.environ, "COVE_DB": str(self.logs_dir / "cove.db")},
            )
            try:
                await asyncio.wait_for(export.wait(), 60)
            except TimeoutError:
                export.kill()
                await export.wait()

    async def _collect_coved_log(self, environment: BaseEnvironment) -> None:
        try:
            out = await environment.exec(f"tail -c 1000000 {SANDBOX_DIR}/coved.log", timeout_sec=30)
        except Exception as e:  # noqa: BLE001 - the environment may be gone after a timeout
            out = None
            self.logger.debug("coved's log could not be read: %s", e)
        if out is not None and out.stdout:
            (self.logs_dir / "coved.log").write_text(out.stdout)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Interrupts cove (it pauses the run, resumable) and kills it if it does not end."""
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), timeout=15)
    except (TimeoutError, asyncio.CancelledError):
        process.kill()
        await process.wait()
