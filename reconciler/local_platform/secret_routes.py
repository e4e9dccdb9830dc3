"""S1-S3: environment secrets. A personal (``user``) record belongs to the user whose token
stored it and is seen by that user only; a workspace record by every member.

Only a keyed digest of each value is stored; values are never returned, logged or shown.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
from collections.abc import Mapping
from typing import Any

from reconciler.local_platform import rules, simulation
from reconciler.local_platform.answers import ApiError, Response, json_response
from reconciler.local_platform.core import LIST_LIMIT_MAX, PlatformCore, Workspace
from reconciler.local_platform.users import LOCAL_USER, User, make_user

SECRET_SCOPES = ("workspace", "user")


class SecretRoutes(PlatformCore):
    """The environment-secrets routes and the test helper ``set_secret``."""

    def _secret_item(self, row: sqlite3.Row) -> dict[str, Any]:
        return {
            "id": row["id"],
            "name": row["name"],
            "scope": row["scope"],
            "created_at": simulation.iso(row["created_at"]),
            "updated_at": simulation.iso(row["updated_at"]),
            "creator_name": row["creator_name"] or LOCAL_USER.name,
            "updater_name": row["updater_name"] or row["creator_name"] or LOCAL_USER.name,
        }

    def _list_secrets(self, ws: Workspace, user: User, params: Mapping[str, str]) -> Response:
        limit, offset = self._page(params, LIST_LIMIT_MAX)
        scope = params.get("scope", "all") or "all"
        if scope not in ("all", *SECRET_SCOPES):
            raise ApiError(
                400, "scope must be one of all, workspace, user", "VALIDATION", field="scope"
            )
        where = "workspace_id = ? AND (scope = 'workspace' OR user_id = ?)"
        args: list[Any] = [ws.id, user.id]
        if scope != "all":
            where += " AND scope = ?"
            args.append(scope)
        db = self.store.read()
        total = db.execute(f"SELECT COUNT(*) FROM secrets WHERE {where}", args).fetchone()[0]
        rows = db.execute(
            f"SELECT * FROM secrets WHERE {where} ORDER BY name, scope LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        return self._paged(
            "environment_secrets",
            [self._secret_item(r) for r in rows],
            total,
            offset,
            platform_url=self._ws_url(ws, "secrets"),
        )

    def _upsert_secret(self, ws: Workspace, user: User, body: Any) -> Response:
        if not isinstance(body, dict):
            raise ApiError(400, "Request body must be a JSON object", "VALIDATION")
        name, value, scope = body.get("name"), body.get("value"), body.get("scope", "user")
        if (
            not isinstance(name, str)
            or not (1 <= len(name) <= rules.SECRET_NAME_MAX)
            or not rules.SECRET_NAME_RE.match(name)
        ):
            raise ApiError(
                400,
                "Invalid secret name: use 1-255 uppercase letters, digits and underscores, "
                "starting with a letter.",
                "VALIDATION",
                field="name",
            )
        # Messages never include the value.
        if not isinstance(value, str) or not value or len(value) > rules.SECRET_VALUE_MAX:
            raise ApiError(
                400,
                "Secret value must be a non-empty string (at most 64 KiB).",
                "VALIDATION",
                field="value",
            )
        if scope not in SECRET_SCOPES:
            raise ApiError(400, "scope must be 'workspace' or 'user'", "VALIDATION", field="scope")
        row = self._store_secret(ws, user, name, value, scope)
        return json_response(
            200, {**self._secret_item(row), "platform_url": self._ws_url(ws, "secrets")}
        )

    def _store_secret(
        self, ws: Workspace, user: User, name: str, value: str, scope: str
    ) -> sqlite3.Row:
        owner = user.id if scope == "user" else ""
        # Only a keyed digest is stored: nothing in the emulator needs the value back.
        digest = hmac.new(self._presign_key, value.encode("utf-8"), "sha256").hexdigest()
        now = self.clock()
        sid = "sec_" + hashlib.sha256(f"{ws.id}:{scope}:{owner}:{name}".encode()).hexdigest()[:16]
        with self.store.write() as w:
            w.execute(
                """INSERT INTO secrets (id, workspace_id, scope, user_id, name, value_digest,
                       created_at, updated_at, creator_name, updater_name)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (workspace_id, scope, user_id, name)
                   DO UPDATE SET value_digest = excluded.value_digest,
                       updated_at = excluded.updated_at, updater_name = excluded.updater_name""",
                (sid, ws.id, scope, owner, name, digest, now, now, user.name, user.name),
            )
            row: sqlite3.Row = w.execute("SELECT * FROM secrets WHERE id = ?", (sid,)).fetchone()
        return row

    def _delete_secret(self, ws: Workspace, user: User, body: Any) -> Response:
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise ApiError(400, 'Request body must be {"name": ..., "scope": ...}', "VALIDATION")
        name, scope = body["name"], body.get("scope", "user")
        if scope not in SECRET_SCOPES:
            raise ApiError(400, "scope must be 'workspace' or 'user'", "VALIDATION", field="scope")
        owner = user.id if scope == "user" else ""
        with self.store.write() as w:
            cur = w.execute(
                "DELETE FROM secrets WHERE workspace_id = ? AND scope = ? AND user_id = ? AND name = ?",
                (ws.id, scope, owner, name),
            )
        if cur.rowcount == 0:
            raise ApiError(404, f'Secret "{name}" not found in {scope} scope.', "NOT_FOUND")
        return json_response(200, {"name": name, "scope": scope, "deleted": True})

    def set_secret(
        self,
        workspace: str,
        name: str,
        value: str,
        scope: str = "workspace",
        *,
        user: str | User | None = None,
    ) -> None:
        """Test convenience: store a secret directly, workspace scope unless told (the
        ``secret set`` command and the S2 route default to personal, as on the Platform).
        ``user`` (a name or a ``User``; default the local user) owns a personal record."""
        if scope not in SECRET_SCOPES or not rules.SECRET_NAME_RE.match(name):
            raise ValueError("invalid secret name or scope")
        who = user if isinstance(user, User) else (LOCAL_USER if user is None else make_user(user))
        self._store_secret(self._workspace_by_name(workspace), who, name, value, scope)
