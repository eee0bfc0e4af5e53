"""A loopback HTTP server that carries each request to coved through the environment's exec.

Harbor's environments publish no ports and their ``exec`` has no stdin, but every one of
them runs commands. coved runs in the task's container on its own loopback; each request
``cove`` sends to this relay becomes one ``coved call`` there, with the request and the
answer as base64 JSON (see ``coved call --help``). Nothing crosses a bridge address, and the
same relay works on Docker, Daytona, Modal or any other environment Harbor has.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11

RESPONSE_MARK = "cove-relay-response "
# A command line's one argument may hold 128 KiB (Linux's MAX_ARG_STRLEN); larger requests
# go up as a file instead.
INLINE_REQUEST_MAX = 64 * 1024
# What a request head may be; cove's are a few hundred bytes.
MAX_HEAD = 64 * 1024

logger = logging.getLogger(__name__)


class RelayError(Exception):
    """coved could not be reached through the environment: the message says why."""


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Relay:
    """Serves on 127.0.0.1 and relays each request to the coved at ``port`` in ``environment``."""

    environment: Any
    coved: str
    port: int
    spill_dir: str = "/tmp"
    # coved's token: given to `coved call` in its environment, never on its command line
    # (which every process in the container may read).
    token: str = ""
    requests: int = 0
    failures: int = 0
    _server: asyncio.base_events.Server | None = field(default=None, repr=False)
    _handlers: set[asyncio.Task] = field(default_factory=set, repr=False)

    async def start(self) -> str:
        """Starts listening; returns the relay's URL (``http://127.0.0.1:PORT``)."""
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        address = self._server.sockets[0].getsockname()
        return f"http://127.0.0.1:{address[1]}"

    async def close(self) -> None:
        """Stops listening and abandons requests in flight (a command still running when the
        trial timed out): closing waits for no exec."""
        if self._server is None:
            return
        self._server.close()
        handlers = list(self._handlers)
        for handler in handlers:
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def _connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
        try:
            while True:
                request = await self._read_request(conn, reader)
                if request is None:
                    break
                method, target, headers, body = request
                try:
                    answer = await self.call(method, target, headers, body)
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - any failure is the request's answer
                    self.failures += 1
                    logger.debug("relay request failed", exc_info=True)
                    answer = relay_failure(str(e) or type(e).__name__)
                writer.write(respond(conn, answer))
                await writer.drain()
                if conn.our_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
        except (h11.ProtocolError, ConnectionError) as e:
            logger.debug("relay connection ended: %s", e)
        finally:
            self._handlers.discard(handler)
            writer.close()

    async def _read_request(
        self, conn: h11.Connection, reader: asyncio.StreamReader
    ) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in head.headers]
                return head.method.decode(), head.target.decode(), headers, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None

    async def call(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """One request to coved: one ``coved call`` in the environment."""
        self.requests += 1
        token = self.token
        kept = []
        for name, value in headers:
            if name.lower() == "authorization":
                token = value.removeprefix("Bearer ").strip() or token
            else:
                kept.append((name, value))
        envelope = json.dumps(
            {
                "method": method,
                "path": target,
                "headers": kept,
                "body": base64.b64encode(body).decode(),
            }
        ).encode()
        command = [self.coved, "call", "--port", str(self.port), "--spill-dir", self.spill_dir]
        if len(envelope) <= INLINE_REQUEST_MAX:
            command += ["--request", base64.b64encode(envelope).decode()]
        else:
            remote = f"{self.spill_dir}/cove-relay-{secrets.token_hex(8)}.json"
            with tempfile.NamedTemporaryFile(suffix=".json") as local:
                local.write(envelope)
                local.flush()
                await self.environment.upload_file(local.name, remote)
            command += ["--request-file", remote]
        # The daemon's own deadlines bound every request; the exec waits for them.
        result = await self.environment.exec(shlex.join(command), env={"COVE_TOKEN": token} if token else None)
        answer = parse_answer(result.stdout or "", result.return_code)
        if "body_file" in answer:
            body = await self._fetch_spilled(answer["body_file"])
        else:
            body = base64.b64decode(answer.get("body", ""))
        return Answer(answer["status"], [tuple(h) for h in answer.get("headers", [])], body)

    async def _fetch_spilled(self, remote: str) -> bytes:
        with tempfile.TemporaryDirectory() as folder:
            local = Path(folder) / "body"
            await self.environment.download_file(remote, local)
            await self.environment.exec(shlex.join(["rm", "-f", remote]))
            return local.read_bytes()


def parse_answer(output: str, return_code: int) -> dict[str, Any]:
    """The answer line of ``coved call``'s output (stderr may be mixed in)."""
    lines = [line for line in output.splitlines() if line.startswith(RESPONSE_MARK)]
    if not lines:
        tail = output.strip()[-600:] or "(no output)"
        raise RelayError(
            f"`coved call` gave no answer (exit code {return_code}): {tail}"
        )
    answer = json.loads(lines[-1][len(RESPONSE_MARK) :])
    if "error" in answer:
        raise RelayError(answer["error"])
    return answer


def relay_failure(why: str) -> Answer:
    """A 502 in coved's error shape, so cove shows the reason as it shows coved's errors."""
    message = f"the relay to coved in the task's environment failed: {why}"
    body = json.dumps({"error": {"code": "internal", "message": message}}).encode()
    return Answer(502, [("content-type", "application/json")], body)


def respond(conn: h11.Connection, answer: Answer) -> bytes:
    headers = [
        (n, v)
        for n, v in answer.headers
        if n.lower() not in ("content-length", "transfer-encoding", "connection")
    ]
    headers.append(("content-length", str(len(answer.body))))
    return (
        conn.send(h11.Response(status_code=answer.status, headers=headers))
        + conn.send(h11.Data(data=answer.body))
        + conn.send(h11.EndOfMessage())
    )
