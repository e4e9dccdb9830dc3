"""E8/E9: the outputs manifest and presigned download URLs, and the presigned downloads
themselves (object storage: never faulted, never authenticated)."""

from __future__ import annotations

import base64
import hmac
import json
import sqlite3
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from reconciler.local_platform import simulation
from reconciler.local_platform.answers import ApiError, Response, json_response
from reconciler.local_platform.core import PlatformCore, Workspace

PRESIGNED_PREFIX = "/_presigned/"
NOT_DOWNLOADABLE_MESSAGE = "Outputs are not yet available for pending or queued benchmark runs."


class OutputRoutes(PlatformCore):
    """The outputs routes."""

    # ------------------------------------------------------------------ runs: outputs

    def _downloadable(self, ws: Workspace, ref: str) -> tuple[sqlite3.Row, simulation.Run, int]:
        row = self._find_run(ws, ref)
        run = self._run(row, self._run_specs(ws))
        t_ms = simulation.sim_now_ms(run, self.clock(), self.speed)
        if not simulation.status_at(run, t_ms).may_have_outputs:
            raise ApiError(409, NOT_DOWNLOADABLE_MESSAGE, "CONFLICT")
        return row, run, t_ms

    def _manifest(self, ws: Workspace, ref: str, params: Mapping[str, str]) -> Response:
        raw = params.get("types", "")
        wanted = [t.strip().lower() for t in raw.split(",") if t.strip()] or ["summary", "results"]
        unknown = [t for t in wanted if t not in simulation.TYPES]
        if unknown:
            raise ApiError(
                400,
                f"Unknown output type(s): {', '.join(unknown)}. Choose from: {', '.join(simulation.TYPES)}.",
                "VALIDATION",
                field="types",
            )
        _, run, t_ms = self._downloadable(ws, ref)
        files = simulation.output_files(run, t_ms, tuple(wanted), self.speed)
        return json_response(
            200,
            {
                "files": files,
                "totals": {"files": len(files), "bytes": sum(f["size"] for f in files)},
            },
        )

    def _download_urls(self, ws: Workspace, ref: str, body: Any) -> Response:
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list) or not 1 <= len(items) <= 500:
            raise ApiError(
                400,
                "items must be a list of 1 to 500 {path, token} objects",
                "VALIDATION",
                field="items",
            )
        row, run, now_ms = self._downloadable(ws, ref)
        expires = int(self.clock()) + int(self.faults.presign_ttl_s)
        out = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise ApiError(400, "each item needs a string path", "VALIDATION", field="items")
            path, token = item["path"], item.get("token")
            t_ms = now_ms
            if isinstance(token, str) and token.startswith("snap-"):
                try:
                    t_ms = min(now_ms, int(token[5:]))
                except ValueError:
                    raise ApiError(400, f"Unknown output token for {path}", "VALIDATION") from None
            if not simulation.path_exists(run, path, t_ms):
                raise ApiError(404, f"Output file not found: {path}", "NOT_FOUND")
            entry = {"path": path, "url": self._presign(row["id"], path, t_ms, expires)}
            if token is not None:
                entry["token"] = token
            out.append(entry)
        return json_response(200, {"items": out, "expires_in": int(self.faults.presign_ttl_s)})

    def _presign(self, run_id: str, path: str, t_ms: int, expires: int) -> str:
        payload = (
            base64.urlsafe_b64encode(
                json.dumps([run_id, path, t_ms, expires], separators=(",", ":")).encode()
            )
            .decode()
            .rstrip("=")
        )
        sig = hmac.new(self._presign_key, payload.encode(), "sha256").hexdigest()[:32]
        return (
            f"{self.public_url}{PRESIGNED_PREFIX}{payload}.{sig}/{quote(path.rsplit('/', 1)[-1])}"
        )

    def _presigned(self, method: str, path: str) -> Response:
        if method not in ("GET", "HEAD"):
            raise ApiError(405, "Method not allowed", "METHOD_NOT_ALLOWED")
        token = path[len(PRESIGNED_PREFIX) :].split("/", 1)[0]
        payload, _, sig = token.partition(".")
        expected = hmac.new(self._presign_key, payload.encode(), "sha256").hexdigest()[:32]
        if not sig or not hmac.compare_digest(sig, expected):
            raise ApiError(
                403, "SignatureDoesNotMatch: the request signature is invalid.", "SIGNATURE_INVALID"
            )
        run_id, file_path, t_ms, expires = json.loads(
            base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        )
        if self.clock() > expires:
            raise ApiError(403, "AccessDenied: Request has expired.", "URL_EXPIRED")
        row = self.store.read().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise ApiError(404, "NoSuchKey: the object does not exist.", "NOT_FOUND")
        ws = self._workspace_by_id(row["workspace_id"])
        run = self._run(row, None if ws is None else self._run_specs(ws))
        content = simulation.file_content(run, file_path, t_ms, self.speed)
        if content is None:
            raise ApiError(404, "NoSuchKey: the object does not exist.", "NOT_FOUND")
        kind = {"csv": "text/csv", "json": "application/json"}.get(
            file_path.rsplit(".", 1)[-1], "text/plain"
        )
        headers = {"Content-Type": kind, "Content-Length": str(len(content))}
        return Response(200, headers, b"" if method == "HEAD" else content)
