"""Cove's sandboxes as a Harbor environment: any agent's trial in a sandbox Cove makes.

``harbor run -p TASKS -a oracle -e cove_harbor:CoveEnvironment``

``start`` builds the task's image, adds the static ``coved`` to it as its entrypoint, and has
``cove sandbox create`` make the sandbox (a Docker container; with ``--ek kubernetes=true``
a Pod, from an image a cluster can pull: ``--ek image=…``). ``cove sandbox connect`` gives
coved's address and token (and holds a Kubernetes sandbox's port-forward open); every
command and file then goes through coved's API. ``stop`` removes the sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import itertools
import json
import os
import re
import secrets
import shlex
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

import httpx
from pydantic import Field

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.definition import (
    require_agent_environment_definition,
    should_use_prebuilt_docker_image,
)
from harbor.environments.options import EnvironmentOptions

# Where files cross: a folder of the workspace (see _send and _fetch).
STAGING = ".cove-transfer"
# coved's longest wait for one command (protocol/src/shell.rs MAX_TIMEOUT_SECS).
MAX_WAIT_SEC = 3600
COVED_IN_IMAGE = "/opt/cove/coved"


class CoveEnvironmentError(RuntimeError):
    """A sandbox could not be made, reached or used; the message says why (cove's words)."""


class CoveEnvironmentOptions(EnvironmentOptions):
    """What ``--ek key=value`` may set."""

    cove: str | None = Field(default=None, description="The cove binary (default: $COVE_BIN, then cove on PATH).")
    coved: str | None = Field(
        default=None,
        description="A statically linked coved to add to the task's image (default: $COVE_COVED_BIN, then coved beside cove).",
    )
    kubernetes: bool = Field(default=False, description="Make a Pod (cove sandbox create --kubernetes).")
    namespace: str | None = Field(default=None, description="The Pod's namespace.")
    image: str | None = Field(
        default=None,
        description="An image whose entrypoint runs coved on 0.0.0.0:7700 (needed with kubernetes: one the cluster can pull); by default built from the task's.",
    )
    db: str | None = Field(default=None, description="cove's database for these sandboxes (default: cove's own).")
    engine_capabilities: bool = Field(
        default=True,
        description="Docker: keep the engine's default capabilities, as Harbor's Docker environment does "
        "(root may apt-get install, chown, su); false keeps Cove's hardening (every capability dropped).",
    )


class CoveEnvironment(BaseEnvironment):
    """A Harbor environment whose container is a Cove sandbox."""

    options_model = CoveEnvironmentOptions

    @staticmethod
    def type() -> str:
        return "cove"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self) -> None:
        require_agent_environment_definition(
            self.environment_dir, docker_image=self.task_env_config.docker_image
        )
        if (self.environment_dir / "docker-compose.yaml").exists():
            raise ValueError(
                "this task brings a docker-compose.yaml (services beside its container): a Cove "
                "sandbox is one container; run it in Harbor's Docker environment"
            )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._name: str | None = None
        self._connection: asyncio.subprocess.Process | None = None
        self._http: httpx.AsyncClient | None = None
        self._workspace = "/"
        self._token = ""
        self._image_user = ""
        self._connect_log: tempfile._TemporaryFileWrapper | None = None
        self._sessions = itertools.count(1)

    @property
    def _options(self) -> CoveEnvironmentOptions:
        return self.options  # type: ignore[return-value]

    def _cove(self) -> str:
        path = self._options.cove or os.environ.get("COVE_BIN") or shutil.which("cove")
        if not path or not Path(path).is_file():
            raise CoveEnvironmentError("no cove binary: set COVE_BIN or --ek cove=PATH")
        return path

    def _coved(self) -> str:
        path = (
            self._options.coved
            or os.environ.get("COVE_COVED_BIN")
            or str(Path(self._cove()).with_name("coved"))
        )
        if not Path(path).is_file():
            raise CoveEnvironmentError("no coved binary: set COVE_COVED_BIN or --ek coved=PATH")
        return path

    def _cove_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self._options.db:
            env["COVE_DB"] = self._options.db
        return env

    async def _run(self, *args: str, timeout: float = 900) -> str:
        """``cove ARGS``, which must succeed: its stdout."""
        process = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._cove_env(),
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except BaseException:
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        if process.returncode != 0:
            said = (err or out).decode(errors="replace").strip()[-800:]
            raise CoveEnvironmentError(f"`{' '.join(args[:4])}` failed ({process.returncode}): {said}")
        return out.decode(errors="replace")

    async def start(self, force_build: bool) -> None:
        options = self._options
        image = options.image or await self._sandbox_image(force_build)
        name = re.sub(r"[^a-z0-9-]", "-", self.session_id.lower())[:28].strip("-")
        self._name = f"{name}-{secrets.token_hex(4)}"
        create = [self._cove(), "--json", "sandbox", "create", self._name, "--image", image]
        if self._effective_cpus:
            create += ["--cpus", str(self._effective_cpus)]
        if self._effective_memory_mb:
            create += ["--memory", f"{self._effective_memory_mb}m"]
        if options.kubernetes:
            create.append("--kubernetes")
            if options.namespace:
                create += ["--namespace", options.namespace]
        elif options.engine_capabilities:
            create.append("--engine-capabilities")
        await self._run(*create)
        await self._connect()
        await self.ensure_dirs(self._mount_targets(writable_only=True))
        await self._upload_environment_dir_after_start()

    async def _connect(self) -> None:
        """``cove sandbox connect``: coved's address and token, held open until stop."""
        # Its notes go to a file: a pipe nobody reads would stall it once full.
        self._connect_log = tempfile.NamedTemporaryFile(prefix="cove-connect-", suffix=".log")
        self._connection = await asyncio.create_subprocess_exec(
            self._cove(), "--json", "sandbox", "connect", self._name,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._connect_log,
            env=self._cove_env(),
        )
        line = await asyncio.wait_for(self._connection.stdout.readline(), 120)
        if not line:
            err = Path(self._connect_log.name).read_text(errors="replace").strip()
            raise CoveEnvironmentError(f"cannot reach sandbox {self._name}: {err[-600:]}")
        connected = json.loads(line)
        self._token = connected["token"]
        self._http = httpx.AsyncClient(
            base_url=connected["url"],
            headers={"authorization": f"Bearer {connected['token']}"},
            timeout=httpx.Timeout(60.0, read=None),
        )
        info = await self._http.get("/v1/info")
        info.raise_for_status()
        self._workspace = info.json()["workspace"]

    async def _sandbox_image(self, force_build: bool) -> str:
        """The task's image with coved as its entrypoint, working in the task's directory."""
        config = self.task_env_config
        if should_use_prebuilt_docker_image(
            self.environment_dir, docker_image=config.docker_image, force_build=force_build
        ):
            base = config.docker_image
        else:
            base = f"hb-cove__{self.environment_name.lower()}"
            fresh = ["--no-cache"] if force_build else []
            await self._docker("build", "-q", *fresh, "-t", base, str(self.environment_dir))
        seen = (await self._docker("image", "inspect", "-f", "{{.Config.WorkingDir}}|{{.Config.User}}", base)).strip()
        image_workdir, _, self._image_user = seen.partition("|")
        workdir = config.workdir or image_workdir or "/"
        # A name of its own for any base (a digest reference included).
        tag = f"hb-cove__{hashlib.sha256(base.encode()).hexdigest()[:16]}:{self.environment_name.lower()[:60]}"
        with tempfile.TemporaryDirectory() as context:
            shutil.copy(self._coved(), Path(context) / "coved")
            entrypoint = json.dumps([COVED_IN_IMAGE, "--listen", "0.0.0.0:7700", "--workspace", workdir])
            (Path(context) / "Dockerfile").write_text(
                # coved as root: it runs each command as the task's user (the image's, unless
                # Harbor names another), and as root when Harbor asks.
                f"FROM {base}\nUSER root\nCOPY coved {COVED_IN_IMAGE}\nENTRYPOINT {entrypoint}\nCMD []\n"
            )
            await self._docker("build", "-q", "-t", tag, context)
        return tag

    async def _docker(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            "docker", *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            raise CoveEnvironmentError(
                f"`docker {' '.join(args[:2])}` failed: {err.decode(errors='replace').strip()[-800:]}"
            )
        return out.decode(errors="replace")

    async def stop(self, delete: bool) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._connection is not None:
            if self._connection.stdin is not None:
                self._connection.stdin.close()
            try:
                await asyncio.wait_for(self._connection.wait(), 15)
            except TimeoutError:
                self._connection.kill()
            self._connection = None
        if self._connect_log is not None:
            self._connect_log.close()
            self._connect_log = None
        if self._name is not None:
            verb = ["rm"] if delete else ["stop"]
            await self._run(self._cove(), "--json", "sandbox", *verb, self._name)
            if delete:
                self._name = None

    def cove_connection(self) -> tuple[str, str]:
        """coved's address and token, for a Cove agent in this environment: it calls the
        sandbox's own coved instead of starting one of its own."""
        if self._http is None:
            raise CoveEnvironmentError("the sandbox is not started")
        return str(self._http.base_url).rstrip("/"), self._token

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            raise CoveEnvironmentError("the sandbox is not started")
        return self._http

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        """One command in a session of its own (nothing carries over), under bash."""
        user = self._resolve_user(user)
        if user is None and self._image_user:
            user = self._image_user
        env = self._merge_env(env) or {}
        cwd = cwd or self.task_env_config.workdir
        bad = [k for k in env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)]
        if bad:
            raise ValueError(f"not names of environment variables: {bad}")
        # Values (API keys among them) go through a file read once and removed, never on a
        # command line every process of the sandbox could read.
        preamble, env_file = "", None
        if env:
            env_file = f"/tmp/.cove-env-{secrets.token_hex(8)}"
            lines = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
            await self._send(lines.encode(), f'install -m 600 "$f" {env_file}')
            preamble = f". {env_file}; rm -f {env_file}; "
        return await self._run_in_session(preamble + command, cwd, timeout_sec, user, env_file)

    async def _run_in_session(
        self,
        text: str,
        cwd: str | None,
        timeout_sec: int | None,
        user: str | int | None,
        env_file: str | None = None,
    ) -> ExecResult:
        """``text`` under bash, as ``user``, in a session of its own that goes when it ends."""
        wrapped = f"bash -c {shlex.quote(text)}"
        name = str(user).split(":", 1)[0] if user is not None else None
        if name is not None and name not in ("root", "0"):
            who = shlex.quote(name)
            if name.isdigit():
                who = f'"$(getent passwd {int(name)} | cut -d: -f1)"'
            own = f"chown {who} {env_file}; " if env_file else ""
            wrapped = f"{own}su -s /bin/bash -c {shlex.quote(text)} -- {who}"
        wait = min(int(timeout_sec or MAX_WAIT_SEC), MAX_WAIT_SEC)
        session = f"harbor-{next(self._sessions)}"
        request = {"command": wrapped, "session": session, "blocking": True, "timeout_secs": wait}
        if cwd:
            request["cwd"] = cwd
        client = self._client()
        try:
            answer = await client.post("/v1/shell/exec", json=request)
            body = answer.json()
            if answer.status_code != 200:
                raise CoveEnvironmentError(f"coved refused the command: {body.get('error', body)}")
        finally:
            # The session goes with whatever it still runs (a command past its limit).
            await asyncio.shield(client.delete(f"/v1/shell/sessions/{session}"))
        if body.get("timed_out") or not body.get("completed", True):
            raise RuntimeError(f"Command timed out after {wait} seconds")
        return ExecResult(stdout=body.get("output"), stderr=None, return_code=body.get("exit_code") or 0)

    # Files cross through coved's file API, which reaches only the workspace: each goes
    # through a folder of root's there (0700, a fresh name each time), and is moved at once,
    # with its SHA-256 checked, to a private folder outside it. An agent that still runs
    # cannot swap what crosses: the check would fail.

    def _staging(self) -> tuple[str, str]:
        """A fresh staging file: its path for the file API, and its absolute path."""
        folder = f"{STAGING}-{secrets.token_hex(8)}"
        relative = f"{folder}/payload"
        return relative, str(PurePosixPath(self._workspace) / relative)

    async def _root(self, command: str) -> str:
        result = await self._run_in_session(f"set -e; {command}", None, None, "root")
        if result.return_code != 0:
            raise CoveEnvironmentError(f"a transfer failed: {(result.stdout or '').strip()[-600:]}")
        return result.stdout or ""

    async def _send(self, data: bytes, use: str) -> None:
        """Puts ``data`` into the sandbox and runs ``use`` (a command that reads ``"$f"``)."""
        relative, absolute = self._staging()
        answer = await self._client().put("/v1/files/content", params={"path": relative}, content=data)
        if answer.status_code != 200:
            raise CoveEnvironmentError(f"upload refused: {answer.text[-400:]}")
        digest = hashlib.sha256(data).hexdigest()
        staged = shlex.quote(absolute)
        await self._root(
            f't=$(mktemp -d); f="$t/payload"; mv {staged} "$f"; rmdir "$(dirname {staged})"; '
            f'echo "{digest}  $f" | sha256sum -c --quiet; {use}; rm -rf "$t"'
        )

    async def _fetch(self, make: str) -> bytes:
        """Runs ``make`` (a command that writes ``"$f"``) and brings the file back."""
        relative, absolute = self._staging()
        staged = shlex.quote(absolute)
        said = await self._root(
            f't=$(mktemp -d); f="$t/payload"; {make}; sha256sum "$f"; '
            f'mkdir -m 700 "$(dirname {staged})"; mv "$f" {staged}; rmdir "$t"'
        )
        digests = re.findall(r"\b([0-9a-f]{64})\b", said)
        try:
            answer = await self._client().get("/v1/files/content", params={"path": relative})
        finally:
            await self._root(f'rm -rf "$(dirname {staged})"')
        if answer.status_code != 200:
            raise CoveEnvironmentError(f"download refused: {answer.text[-400:]}")
        if not digests or hashlib.sha256(answer.content).hexdigest() != digests[-1]:
            raise CoveEnvironmentError("a file changed while it crossed: refused")
        return answer.content

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = shlex.quote(target_path)
        use = f'mkdir -p "$(dirname {target})"; mv "$f" {target}'
        await self._send(Path(source_path).read_bytes(), use)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for child in sorted(Path(source_dir).iterdir()):
                tar.add(str(child), arcname=child.name)
        target = shlex.quote(target_dir)
        use = f'mkdir -p {target}; tar xf "$f" --no-same-owner -C {target}'
        await self._send(buffer.getvalue(), use)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        data = await self._fetch(f'cp {shlex.quote(source_path)} "$f"')
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        data = await self._fetch(f'tar cf "$f" -C {shlex.quote(source_dir)} .')
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(target_dir, filter="data")
