"""The small HTML pages behind every ``platform_url`` the local Platform hands out, so each
link the tool prints (a plan, a PR comment, the lockfile) opens on loopback:

* ``/{workspace}/benchmarks/{run id or name}``: a run: status, progress, agents, pass@1
  with its interval, creator;
* ``/{workspace}/benchmarks/catalog/{benchmark id}``: a benchmark as the workspace has it:
  sync status (a retry button when the sync failed), tasks, the leaderboard, recent runs;
* ``/{workspace}/benchmarks/catalog/{benchmark id}/leaderboard``: the leaderboard alone;
* ``/{workspace}/benchmarks``: the workspace's latest runs and its catalog;
* ``/{workspace}/secrets``: the workspace's secret names and scopes (never a value).

Pages are for people on this machine: they need no token (the API does), are never
faulted, and show nothing the API keeps from a member of the workspace (personal secrets
are not listed). The retry button posts a form carrying a token keyed with the data dir's
secret, so another site cannot make the browser press it.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from reconciler.local_platform import simulation
from reconciler.local_platform.answers import ApiError, Response, html_response
from reconciler.local_platform.benchmarks import BenchmarkRoutes
from reconciler.local_platform.core import Workspace
from reconciler.model.status import RunStatus

RECENT_RUNS = 50
STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem;color:#1d2330}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccd;padding:.3rem .6rem;
text-align:left}th{background:#eef}.status{font-weight:bold}.failed{color:#b00}
.finished,.ready{color:#070}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}
dt{font-weight:bold}nav a{margin-right:1rem}"""


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def interval(metric: Mapping[str, Any] | None) -> str:
    """``52.0% (95% CI 48.1–55.9%)`` for a pass@k metric with its Wilson interval."""
    if not metric or metric.get("value") is None:
        return "–"
    shown = percent(metric["value"])
    if metric.get("ci_low") is None or metric.get("ci_high") is None:
        return shown
    return f"{shown} (95% CI {percent(metric['ci_low'])}–{percent(metric['ci_high'])})"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], table_id: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not rows:
        body = f'<tr><td colspan="{len(headers)}">none</td></tr>'
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _fields(items: Sequence[tuple[str, str, str]]) -> str:
    """A definition list of (id, label, html value)."""
    rows = "".join(
        f'<dt>{escape(label)}</dt><dd id="{fid}">{value}</dd>' for fid, label, value in items
    )
    return f"<dl>{rows}</dl>"


def _document(title: str, ws: Workspace, body: str) -> str:
    home = f"/{quote(ws.name, safe='')}"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)} · {escape(ws.name)} · Osmosis (local)</title>"
        f"<style>{STYLE}</style></head><body>"
        f'<nav><a href="{home}/benchmarks">Runs and benchmarks</a>'
        f'<a href="{home}/secrets">Secrets</a></nav>'
        f"<h1>{escape(title)}</h1>{body}"
        "<p><small>The local Osmosis Platform (osmosis-platform-emulator).</small></p>"
        "</body></html>"
    )


class PageRoutes(BenchmarkRoutes):
    """The HTML pages (see the module docstring)."""

    def _page_answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        if path == "/favicon.ico":  # browsers ask for it on every page
            return Response(204, {"Content-Length": "0"})
        seg = [unquote(s) for s in path.strip("/").split("/")]
        try:
            if method not in ("GET", "HEAD", "POST"):
                raise ApiError(405, "Method not allowed")
            ws = self._existing_workspace(seg[0]) if seg[0] else None
            if ws is None:
                raise ApiError(404, f"No workspace {seg[0]!r} on this Platform.")
            rest = seg[1:]
            if method == "POST":
                if (
                    len(rest) == 4
                    and rest[:2] == ["benchmarks", "catalog"]
                    and rest[3] == ("retry-sync")
                ):
                    return self._retry_sync(ws, rest[2], body)
                raise ApiError(405, "Method not allowed")
            if rest == ["secrets"]:
                page = self._secrets_page(ws)
            elif rest == ["benchmarks"]:
                page = self._workspace_page(ws)
            elif len(rest) == 2 and rest[0] == "benchmarks":
                page = self._run_page(ws, rest[1])
            elif len(rest) == 3 and rest[:2] == ["benchmarks", "catalog"]:
                page = self._benchmark_page(ws, rest[2])
            elif (
                len(rest) == 4
                and rest[:2] == ["benchmarks", "catalog"]
                and rest[3] == ("leaderboard")
            ):
                page = self._leaderboard_page(ws, rest[2])
            else:
                raise ApiError(404, f"No page at {path}.")
        except ApiError as exc:
            title = "Not found" if exc.status == 404 else f"HTTP {exc.status}"
            text = f"<p id=error>{escape(str(exc.body.get('error')))}</p>"
            return html_response(
                exc.status,
                "<!doctype html><html lang=en><head><meta charset=utf-8>"
                f"<title>{title}</title></head><body><h1>{title}</h1>{text}</body></html>",
            )
        return html_response(200, page)

    # ------------------------------------------------------------------ runs

    def _run_page(self, ws: Workspace, ref: str) -> str:
        row = self._find_run(ws, ref)
        run = self._run(row, self._run_specs(ws))
        t_ms = simulation.sim_now_ms(run, self.clock(), self.speed)
        status = simulation.status_at(run, t_ms)
        m = simulation.metrics(run, t_ms)
        by_agent = {a["benchmark_run_agent_id"]: a for a in m["agent_metrics"]}
        rows = []
        for i, agent in enumerate(run.agents):
            model = simulation.model_string(agent.get("model") or {})
            metric = by_agent.get(simulation.agent_id(run, i))
            agg = m["aggregates"][i]
            rows.append(
                [
                    str(i + 1),
                    escape(model),
                    escape(agent.get("harness") or "official scaffold"),
                    str(metric["rank"]) if metric else "–",
                    escape(interval(metric["pass_at_1"] if metric else None)),
                    f"{agg['passed']} / {agg['failed']} / {agg['errored']}",
                ]
            )
        bench = run.benchmark
        bench_link = (
            f'<a href="{escape(self.benchmark_url(ws, bench))}">{escape(str(bench["name"]))}</a>'
        )
        expected = int(row["expected"])
        ingested = int(m["ingested"])
        progress = (
            f'<progress max="{expected}" value="{ingested}"></progress> '
            f"{ingested:,} of {expected:,} results"
        )
        failure = (
            [
                (
                    "error",
                    "Error",
                    f'<span class="failed">{escape(simulation.failure_message(run))}</span>',
                )
            ]
            if status is RunStatus.FAILED
            else []
        )
        fields = _fields(
            [
                ("run-name", "Name", escape(row["name"])),
                ("run-id", "ID", escape(row["id"])),
                ("status", "Status", f'<span class="status {status}">{status}</span>'),
                *failure,
                ("benchmark", "Benchmark", bench_link),
                ("progress", "Progress", progress),
                ("pass-at-1", "Best pass@1", escape(percent(m["best_pass_at_1"]))),
                ("creator", "Created by", escape(str(row["creator_name"] or "–"))),
                (
                    "created",
                    "Created",
                    escape(str(simulation.iso(row["submitted_at"] or row["created_at"]))),
                ),
            ]
        )
        agents = _table(
            ("#", "Model", "Harness", "Rank", "pass@1", "Passed / failed / errored"),
            rows,
            "agents",
        )
        return _document(row["name"], ws, fields + "<h2>Agents</h2>" + agents)

    def _workspace_page(self, ws: Workspace) -> str:
        db = self.store.read()
        now, speed = self.clock(), self.speed
        total = db.execute("SELECT COUNT(*) FROM runs WHERE workspace_id = ?", (ws.id,))
        count = int(total.fetchone()[0])
        rows = db.execute(
            "SELECT * FROM runs WHERE workspace_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?",
            (ws.id, RECENT_RUNS),
        ).fetchall()
        names = {s["id"]: s["name"] for s in self._benchmarks()}
        base = f"/{quote(ws.name, safe='')}/benchmarks"
        runs = _table(
            ("Run", "Benchmark", "Status", "Created by", "Created"),
            [
                [
                    f'<a href="{base}/{quote(r["id"])}">{escape(r["name"])}</a>',
                    escape(str(names.get(r["benchmark_id"], r["benchmark_id"]))),
                    self._row_status(r, now, speed),
                    escape(str(r["creator_name"] or "–")),
                    escape(str(simulation.iso(r["submitted_at"] or r["created_at"]))),
                ]
                for r in rows
            ],
            "runs",
        )
        catalog = _table(
            ("Benchmark", "Key", "Sync"),
            [
                [
                    f'<a href="{base}/catalog/{quote(s["id"])}">{escape(s["name"])}</a>',
                    escape(s["source_ref"]),
                    escape(s["sync_status"]),
                ]
                for s in self._catalog(ws)
            ],
            "catalog",
        )
        shown = f"<p id=run-count>{count:,} runs (the latest {min(count, RECENT_RUNS)} shown)</p>"
        return _document(
            f"Workspace {ws.name}",
            ws,
            "<h2>Runs</h2>" + shown + runs + "<h2>Catalog</h2>" + catalog,
        )

    # ------------------------------------------------------------------ benchmarks

    def _page_benchmark(self, ws: Workspace, ref: str) -> dict[str, Any]:
        spec = self._resolve_in(ws, ref)
        if spec is None:
            raise ApiError(404, f"Benchmark {ref!r} is not in workspace {ws.name}.")
        return spec

    def _leaderboard_table(self, spec: Mapping[str, Any]) -> str:
        rows = [
            [
                str(entry.get("rank")),
                escape(str(entry.get("model"))),
                escape(entry.get("harness") or "official scaffold"),
                escape(str(entry.get("task_set"))),
                escape(interval(entry.get("pass_at_1"))),
            ]
            for entry in spec.get("_leaderboard") or []
        ]
        return _table(("Rank", "Model", "Harness", "Task set", "pass@1"), rows, "leaderboard")

    def _retry_token(self, ws: Workspace, bid: str) -> str:
        return hmac.new(self._presign_key, f"retry:{ws.id}:{bid}".encode(), "sha256").hexdigest()

    def _benchmark_page(self, ws: Workspace, ref: str) -> str:
        spec = self._page_benchmark(ws, ref)
        sync = str(spec["sync_status"])
        total = int(spec.get("task_count") or 0)
        state = f'<span class="status {sync}">{sync}</span>'
        if sync == "syncing":
            state += f" ({int(spec.get('synced_task_count') or 0):,} of {total:,} tasks)"
        retry = ""
        if sync == "failed":
            state += f" — {escape(str(spec.get('sync_error') or 'the sync failed'))}"
            action = f"{self.benchmark_url(ws, spec)}/retry-sync"
            retry = (
                f'<form method="post" action="{escape(action)}">'
                f'<input type="hidden" name="token" value="{self._retry_token(ws, spec["id"])}">'
                '<button id="retry-sync" type="submit">Retry sync</button></form>'
            )
        source = spec.get("source_url")
        sets = ", ".join(
            f"{s['name']} ({s['task_count']}{', recommended' if s.get('recommended') else ''})"
            for s in spec.get("task_sets") or []
        )
        fields = _fields(
            [
                ("benchmark-name", "Name", escape(spec["name"])),
                ("key", "Key", escape(spec["source_ref"])),
                ("sync-status", "Sync", state + retry),
                ("task-count", "Tasks", f"{total:,}"),
                ("task-sets", "Task sets", escape(sets or "–")),
                (
                    "source",
                    "Source",
                    f'<a href="{escape(source)}">{escape(source)}</a>' if source else "–",
                ),
                ("description", "Description", escape(spec.get("description") or "–")),
            ]
        )
        db = self.store.read()
        recent = db.execute(
            """SELECT * FROM runs WHERE workspace_id = ? AND benchmark_id = ?
               ORDER BY created_at DESC, seq DESC LIMIT 10""",
            (ws.id, spec["id"]),
        ).fetchall()
        now, speed = self.clock(), self.speed
        base = f"/{quote(ws.name, safe='')}/benchmarks"
        runs = _table(
            ("Run", "Status", "Created by"),
            [
                [
                    f'<a href="{base}/{quote(r["id"])}">{escape(r["name"])}</a>',
                    self._row_status(r, now, speed),
                    escape(str(r["creator_name"] or "–")),
                ]
                for r in recent
            ],
            "recent-runs",
        )
        board_link = f'<p><a href="{escape(self.benchmark_url(ws, spec))}/leaderboard">Leaderboard page</a></p>'
        return _document(
            spec["name"],
            ws,
            fields
            + "<h2>Leaderboard</h2>"
            + self._leaderboard_table(spec)
            + board_link
            + "<h2>Recent runs in this workspace</h2>"
            + runs,
        )

    def _leaderboard_page(self, ws: Workspace, ref: str) -> str:
        spec = self._page_benchmark(ws, ref)
        back = f'<p><a href="{escape(self.benchmark_url(ws, spec))}">{escape(spec["name"])}</a></p>'
        return _document(f"{spec['name']} leaderboard", ws, back + self._leaderboard_table(spec))

    def _retry_sync(self, ws: Workspace, ref: str, body: bytes) -> Response:
        spec = self._page_benchmark(ws, ref)
        form = parse_qs(body.decode("utf-8", "replace"))
        token = (form.get("token") or [""])[-1]
        if not hmac.compare_digest(token, self._retry_token(ws, spec["id"])):
            raise ApiError(403, "This retry form is not from this Platform; reload the page.")
        if spec["sync_status"] != "failed":
            raise ApiError(409, f"{spec['name']} is {spec['sync_status']}, not failed.")
        # The local registry's retried sync succeeds: the stand-in for a fixed upstream.
        self.set_benchmark_sync(spec["id"], "ready", workspace=ws.name)
        return Response(303, {"Location": self.benchmark_url(ws, spec), "Content-Length": "0"})

    # ------------------------------------------------------------------ secrets

    def _secrets_page(self, ws: Workspace) -> str:
        rows = (
            self.store.read()
            .execute(
                "SELECT name, scope, creator_name, updated_at FROM secrets "
                "WHERE workspace_id = ? AND scope = 'workspace' ORDER BY name",
                (ws.id,),
            )
            .fetchall()
        )
        table = _table(
            ("Name", "Scope", "Created by", "Updated"),
            [
                [
                    escape(r["name"]),
                    "workspace",
                    escape(str(r["creator_name"] or "–")),
                    escape(str(simulation.iso(r["updated_at"]))),
                ]
                for r in rows
            ],
            "secrets",
        )
        note = (
            "<p>Workspace secrets; each member's personal secrets are theirs alone "
            "(see them with <code>osmosis-platform-emulator secret list</code> and "
            "your token). Values are never shown.</p>"
        )
        return _document(f"Secrets of {ws.name}", ws, note + table)
