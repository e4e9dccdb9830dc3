"""``osmosis-ci``: the GitHub side of the GitOps loop, installed with the package.

::

    osmosis-ci comment         --pr N --body-file plan.md [--exit-code N | --validation-failed]
    osmosis-ci drift-issue     --plan-json drift.json [--label osmosis-drift]
    osmosis-ci commit-message  --title osmosis-apply --plan plan.json --before-rev HEAD
                               [--exit-code N] [--sha SHA]
    osmosis-ci commit-lockfile --message-file MSG --branch main [--results-dir results]
    osmosis-ci announce        [--max-age-days 14]

Every subcommand reads JSON (the plan JSON of ``osmosis-plan --format json``, the
lockfile), never another command's human output. GitHub settings come from the workflow's
environment: ``GITHUB_TOKEN``, ``GITHUB_REPOSITORY`` (or ``--repo``), ``GITHUB_API_URL``;
``--run-url`` defaults to the current workflow run. Limits (docs/limits.md): every GitHub
call of one command shares an overall deadline of 120 s (``OSMOSIS_CI_DEADLINE``) and no
answer is read past ``OSMOSIS_MAX_RESPONSE_BYTES`` (32 MiB). Exit codes: 0 done, 1 error (a message
and a hint on stderr, as ``::error::`` on GitHub Actions).

``--format json`` (before or after the subcommand) prints one JSON document on stdout instead
of the lines for people, errors included: the envelope of every command's document
(``reconciler/schema/output.schema.json``) with type ``ci_<subcommand>``; ``commit-message``
puts the message in ``message``. Text for people goes to stderr in that mode.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler import __version__, numbers
from reconciler.cli.output import Diagnostic, Output, error_diagnostic, requested_format
from reconciler.errors import GitHubError, ReconcilerError, UsageError, file_error
from reconciler.exit_codes import Ending, exit_code
from reconciler.paths import read_named
from reconciler.redact import redact as redact_text
from reconciler.redact import register_environment_secrets
from reconciler.state.locking import ci_run_url

if TYPE_CHECKING:
    from reconciler.model import GeneratorProduct

CI_FORMATS = ("text", "json")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", f"see `{self.prog} --help`")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-ci",
        description="GitHub helpers of the osmosis workflows (sticky plan comment, drift "
        "issue, lockfile commit, results announcements).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--dir", default=".", help="repository root (default: .)")
    parser.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    parser.add_argument("--run-url", help="link to this workflow run (default: from GITHUB_*)")
    parser.add_argument(
        "--format", choices=CI_FORMATS, default="text", help="text for people, or one JSON document"
    )
    # ``--format`` is also accepted after the subcommand (SUPPRESS: without it there, the
    # top-level value stays).
    common = _Parser(add_help=False)
    common.add_argument(
        "--format", choices=CI_FORMATS, default=argparse.SUPPRESS, help="text, or one JSON document"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    comment = sub.add_parser(
        "comment", parents=[common], help="post or update the sticky plan comment"
    )
    comment.add_argument(
        "--pr",
        type=numbers.bounded_int(1, 2**31 - 1),
        help="the pull request (needed unless --print)",
    )
    comment.add_argument("--body-file", required=True, type=Path)
    comment.add_argument(
        "--print",
        action="store_true",
        help="write the body GitHub would get to stdout; no token, no GitHub call",
    )
    comment.add_argument("--exit-code", type=numbers.bounded_int(0, 255))
    comment.add_argument("--validation-failed", action="store_true")
    comment.add_argument(
        "--plan-json",
        type=Path,
        help="the saved plan (osmosis-plan --out): adds a collapsed status of every address "
        "(the lockfile's runs, what is pending, what is blocked)",
    )
    comment.add_argument("--state", default="state/osmosis.lock")
    comment.add_argument(
        "--project",
        metavar="ID",
        help="the project whose plan this is (default: the id in --dir's settings file): "
        "each project of a root of many keeps a sticky comment of its own",
    )

    drift = sub.add_parser(
        "drift-issue", parents=[common], help="open, update or close the drift issue"
    )
    drift.add_argument("--plan-json", required=True, type=Path)
    drift.add_argument("--label", default="osmosis-drift")
    drift.add_argument(
        "--print",
        action="store_true",
        help="write the issue's title and body to stdout; no token, no GitHub call",
    )

    message = sub.add_parser(
        "commit-message", parents=[common], help="print the lockfile commit message"
    )
    message.add_argument("--title", default="osmosis-apply")
    message.add_argument("--plan", type=Path, help="the plan JSON (osmosis-plan --format json)")
    message.add_argument("--state", default="state/osmosis.lock")
    before = message.add_mutually_exclusive_group()
    before.add_argument("--before", type=Path, help="the lockfile before the job")
    before.add_argument("--before-rev", default="HEAD", help="or the commit holding it")
    message.add_argument("--exit-code", type=numbers.bounded_int(0, 255), default=0)
    message.add_argument("--sha", help="the commit that was applied")

    push = sub.add_parser(
        "commit-lockfile", parents=[common], help="commit the lockfile as the bot and push"
    )
    push.add_argument("--message-file", required=True, type=Path)
    push.add_argument("--branch", required=True)
    push.add_argument("--state", default="state/osmosis.lock")
    push.add_argument(
        "--results-dir",
        help="also copy each ended run's summary/results files here, write the HTML report "
        "there (report.html) and commit them",
    )

    ann = sub.add_parser(
        "announce", parents=[common], help="post results of ended runs on their pull requests"
    )
    ann.add_argument("--state", default="state/osmosis.lock")
    ann.add_argument("--max-age-days", type=numbers.days, default=14.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # First: a token GitHub quotes back in an error is redacted like any other secret.
    register_environment_secrets()
    output = Output("osmosis-ci", requested_format(argv), out=sys.stdout, err=sys.stderr)
    try:
        args = _parser().parse_args(argv)
        output.configure(fmt=args.format, quiet=False, color=False)
        try:
            ending = _dispatch(args, output)
        except OSError as exc:
            raise file_error(exc) or exc from None
    except SystemExit as exc:  # --help, --version: argparse printed them
        return exc.code if isinstance(exc.code, int) else 0
    except ReconcilerError as exc:
        github = os.environ.get("GITHUB_ACTIONS") == "true"
        text = redact_text(exc.message)
        output.err.write(f"::error::{text}\n" if github else f"Error: {text}\n")
        if exc.hint:
            output.err.write(f"  {redact_text(exc.hint)}\n")
        output.diagnose(error_diagnostic(exc))
        ending = Ending.FAILED
    except KeyboardInterrupt:
        output.failure("Interrupted", "interrupted")
        ending = Ending.INTERRUPTED
    except Exception:
        # A bug: the traceback for the job log, and still one document in JSON mode.
        output.err.write(redact_text(traceback.format_exc()))
        output.failure("InternalError", "internal error (a bug); the traceback is above")
        ending = Ending.FAILED
    return output.finish(exit_code(ending))


def _read_text(path: Path, what: str) -> str:
    """A text file a subcommand was given: regular, bounded (``reconciler.paths``), UTF-8."""
    data = read_named(path, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text ({exc.reason})") from None


def _generators(
    root: Path,
) -> tuple[tuple[GeneratorProduct, ...], dict[str, dict[str, str]]]:
    """The repository's run generators and each expanded address's cell, for the results
    grids (a config with errors is left out: the plan job reports it)."""
    from reconciler.config.load import load_configs
    from reconciler.engine.context import resolve_settings

    settings = resolve_settings(root, {})
    loaded = load_configs(root, settings.benchmarks, ignore=settings.ignore, policy=settings.policy)
    cells = {
        run.address: dict(run.source.cell)
        for run in loaded.runs
        if run.source is not None and run.source.kind == "generator"
    }
    return loaded.generators, cells


def _dispatch(args: argparse.Namespace, output: Output) -> Ending:
    root = Path(args.dir).resolve()
    run_url = args.run_url or ci_run_url()
    if args.command == "commit-message":
        from reconciler.ci.commit import (
            commit_message,
            lockfile_at,
            read_plan_json,
            read_state,
            state_text,
        )

        after_text = state_text(root / args.state, root)
        before_text = (
            state_text(args.before)
            if args.before and args.before.exists()
            else (None if args.before else lockfile_at(root, args.before_rev, args.state))
        )
        message = commit_message(
            title=args.title,
            before=read_state(before_text, f"{args.before_rev}:{args.state}"),
            after=read_state(after_text, args.state),  # type: ignore[arg-type]
            plan=read_plan_json(args.plan),
            exit_code=args.exit_code,
            sha=args.sha,
            run_url=run_url,
        )
        output.show(message)
        output.result("ci_commit_message", {"message": message})
        return Ending.DONE
    if args.command == "commit-lockfile":
        from reconciler.ci.commit import commit_lockfile, copy_results, read_state, state_text

        paths = [args.state]
        written: list[str] = []
        if args.results_dir:
            state = read_state(state_text(root / args.state, root), args.state)
            assert state is not None
            written = copy_results(root, state, args.results_dir)
            from reconciler.ci.report import write_report

            generators, cells = _generators(root)
            report = write_report(
                root, state, args.results_dir.rstrip("/"), generators=generators, cells=cells
            )
            if report is not None:
                written.append(report)
            output.err.write(f"results: {len(written)} file(s) updated under {args.results_dir}/\n")
            paths.append(args.results_dir)
        message = _read_text(args.message_file, "--message-file")
        pushed = commit_lockfile(root, paths, message, branch=args.branch)
        if pushed.sha is None:
            output.progress("The lockfile did not change; nothing to commit.", essential=True)
        else:
            output.progress(
                f"Pushed {pushed.sha[:12]} to {args.branch}: {pushed.subject}", essential=True
            )
        output.result(
            "ci_commit_lockfile",
            {
                "branch": args.branch,
                "sha": pushed.sha,
                "subject": pushed.subject if pushed.sha else None,
                "attempts": pushed.attempts,
                "results_written": written,
            },
        )
        return Ending.DONE

    if getattr(args, "print", False):
        return _print_offline(args, run_url, root, output)
    if args.command == "comment" and args.pr is None:
        raise UsageError(
            "osmosis-ci comment: --pr is required (or --print to see the body offline)"
        )

    from reconciler import deadlines
    from reconciler.ci.github import DEADLINE_ENV, DEFAULT_DEADLINE_S, GitHubAPI

    seconds = deadlines.seconds_from_env(DEADLINE_ENV, DEFAULT_DEADLINE_S)
    with deadlines.budget(seconds), GitHubAPI.from_env(args.repo) as api:
        return _github_command(api, args, run_url, root, output)


def _read_plan_json(path: Path) -> dict[str, Any]:
    import json

    from reconciler.ci.drift import PlanJsonError

    try:
        payload = json.loads(read_named(path, what="--plan-json"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: cannot read the plan JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise PlanJsonError(f"{path}: the plan JSON is not an object")
    return payload


def _comment_body(args: argparse.Namespace, run_url: str | None, root: Path) -> str:
    """``comment``'s body: the plan markdown of ``--body-file`` made a sticky comment."""
    from reconciler.ci.comment import prepare_comment_body

    try:
        markdown = _read_text(args.body_file, "--body-file")
    except FileNotFoundError:
        markdown = ""
    return prepare_comment_body(
        markdown,
        exit_code=args.exit_code,
        validation_failed=args.validation_failed,
        run_url=run_url,
        **_status_sections(args),
        project=_project_id(args, root),
    )


def _project_id(args: argparse.Namespace, root: Path) -> str | None:
    """``--project``, else the ``id`` of the project at ``root`` (None: not a project)."""
    if args.project:
        return str(args.project)
    from reconciler.config.project import load_project_settings

    found = load_project_settings(root).get("id")
    return found if isinstance(found, str) else None


def _status_sections(args: argparse.Namespace) -> dict[str, Any]:
    """The comment's ``status`` (the status table of every address, ``engine.status``,
    from the saved plan and the lockfile in the checkout, shown collapsed) and
    ``decisions`` (a line per decision, shown open); neither without a plan."""
    if args.plan_json is None or not args.plan_json.is_file():
        return {}
    from reconciler.engine.context import resolve_settings
    from reconciler.engine.saved_plan import read_saved_plan
    from reconciler.engine.status import address_statuses, baseline_verdicts
    from reconciler.render.status import render_decision_lines, render_status_markdown
    from reconciler.state.lockfile import read_lockfile

    # Resolved: a project's settings inherit the root's, a directory above ``.``.
    root = Path(args.dir).resolve()
    plan = read_saved_plan(args.plan_json)
    state = read_lockfile(root / args.state, platform=None, workspace=None)
    margin = resolve_settings(root, {}).regression_margin_pp / 100
    rows = address_statuses(state, plan, baseline_verdicts(state, root, margin))
    return {
        "status": render_status_markdown(rows) if rows else None,
        "decisions": render_decision_lines(rows),
    }


def _print_offline(
    args: argparse.Namespace, run_url: str | None, root: Path, output: Output
) -> Ending:
    """``comment --print`` / ``drift-issue --print``: what GitHub would get, offline."""
    if args.command == "comment":
        body = _comment_body(args, run_url, root)
        output.show(body if body.endswith("\n") else body + "\n")
        output.result(
            "ci_comment", {"pr": args.pr, "action": "printed", "comment_id": None, "body": body}
        )
        return Ending.DONE
    from reconciler.ci.drift import issue_title, read_drift, read_standing, render_issue_body

    payload = _read_plan_json(args.plan_json)
    drift = read_drift(payload)
    if not drift:
        output.show("No drift: the drift issue would be closed (or not opened).\n")
        body = ""
        title = None
    else:
        title = issue_title(drift)
        body = render_issue_body(drift, run_url=run_url, standing=read_standing(payload))
        output.show(f"{title}\n\n{body}" + ("" if body.endswith("\n") else "\n"))
    output.result(
        "ci_drift_issue",
        {
            "action": "printed",
            "issue": None,
            "drift_items": len(drift),
            "new": len(drift),
            "resolved": 0,
            "title": title,
            "body": body,
        },
    )
    return Ending.DONE


def _github_command(
    api: Any, args: argparse.Namespace, run_url: str | None, root: Path, output: Output
) -> Ending:
    say = partial(output.progress, essential=True)
    if args.command == "comment":
        from reconciler.ci.comment import sync_comment

        body = _comment_body(args, run_url, root)
        try:
            action = sync_comment(api, args.pr, body, project=_project_id(args, root))
        except GitHubError as exc:
            if exc.status != 403:
                raise
            # Pull requests from forks get a read-only token: the plan is still in the job
            # summary, so a missing comment must not turn the check red.
            warning = (
                f"could not write the plan comment ({exc.message}); the token is read-only "
                "here (a pull request from a fork?). The plan is in the job summary."
            )
            say(f"::warning::{warning}")
            output.diagnose(Diagnostic("warning", "GitHubError", redact_text(warning)))
            output.result("ci_comment", {"pr": args.pr, "action": "skipped", "comment_id": None})
            return Ending.DONE
        where = f" {action.comment_id}" if action.comment_id is not None else ""
        say(f"plan comment: {action.kind}{where} on #{args.pr}")
        output.result(
            "ci_comment", {"pr": args.pr, "action": action.kind, "comment_id": action.comment_id}
        )
        return Ending.DONE
    if args.command == "drift-issue":
        from reconciler.ci.drift import read_drift, read_standing, sync_drift_issue

        payload = _read_plan_json(args.plan_json)
        drift = read_drift(payload)
        decision, number = sync_drift_issue(
            api, drift, label=args.label, run_url=run_url, standing=read_standing(payload)
        )
        where = f" #{number}" if number is not None else ""
        say(
            f"drift issue: {decision.kind}{where}; {len(drift)} drift item(s), "
            f"{len(decision.new)} new, {len(decision.resolved)} resolved"
        )
        output.result(
            "ci_drift_issue",
            {
                "action": decision.kind,
                "issue": number,
                "drift_items": len(drift),
                "new": len(decision.new),
                "resolved": len(decision.resolved),
            },
        )
        return Ending.DONE
    if args.command == "announce":
        from reconciler.ci.announce import announce
        from reconciler.engine.context import resolve_settings

        settings = resolve_settings(root, {})
        generators, cells = _generators(root)
        report = announce(
            api,
            root / args.state,
            context_prefix=f"osmosis/{settings.id}" if settings.id else "osmosis",
            run_url=run_url,
            max_age=timedelta(days=args.max_age_days),
            repo_root=root,
            margin=settings.regression_margin_pp / 100,
            generators=generators,
            cells=cells,
            settings=settings,
            say=output.progress,
        )
        for line in report.posted:
            say(f"results comment: {line}")
        for line in report.statuses:
            say(f"commit status: {line}")
        for line in report.skipped:
            say(f"marked as announced without posting: {line}")
        for line in report.failed:
            output.err.write(f"not announced (retried next time): {line}\n")
            output.diagnose(Diagnostic("error", "GitHubError", f"not announced: {line}"))
        if not (report.posted or report.statuses or report.skipped or report.failed):
            say("Nothing to announce.")
        output.result(
            "ci_announce",
            {
                "posted": report.posted,
                "statuses": report.statuses,
                "skipped": report.skipped,
                "failed": report.failed,
            },
        )
        return Ending.FAILED if report.failed else Ending.DONE
    raise UsageError(f"unknown command {args.command}")  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
