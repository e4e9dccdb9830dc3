"""Every pin a document shows resolves, and installs what it says (issue 37, finding 1).

The README, the docs/ pages and action.yml pin a ref of this repository in two ways: a
``git+https://github.com/osmosis-ai/osmosis-reconciler@REF`` install (pipx, pip) and a
``uses: osmosis-ai/osmosis-reconciler@REF`` action. This checkout is published as a bare
repository (``main`` = ``HEAD``) that git reaches under the GitHub URL (``insteadOf``), so
each pin is checked offline as a consumer would meet it: it names a commit that exists
(an action pin a full sha or a tag, as GitHub requires), and, with the package index,
the documented command installs exactly that commit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import docs
from tests.support.published import FULL_SHA, Pin, Published, pins, publish

PIPX_SHIM = """\
# pipx, as far as these pages use it: `pipx install SPEC` into its own virtualenv, whose
# commands are on PATH (pipx's ~/.local/bin).
pipx() {
  [ "$1" = install ] || { echo "pipx shim: only install" >&2; return 2; }
  "$PYTHON" -m venv "$PIPX_VENV" && "$PIPX_VENV/bin/pip" install -q --disable-pip-version-check "$2"
}
"""


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Published:
    return publish(tmp_path_factory.mktemp("published"))


def unresolved(published: Published, found: list[Pin]) -> list[str]:
    """What is wrong with each pin that does not resolve, one line each."""
    problems = []
    for pin in found:
        ref = published.evaluate(pin)
        commit = published.resolve(ref)
        if commit is None:
            problems.append(f"{pin.where}: {pin.ref} ({ref!r}) names no commit: {pin.text}")
        elif pin.kind == "action" and not (
            FULL_SHA.match(ref) or published.resolve(f"refs/tags/{ref}")
        ):
            problems.append(f"{pin.where}: an action pins a tag or a full sha, not {ref!r}")
    return problems


def test_every_documented_pin_resolves_in_a_published_clone(published: Published) -> None:
    found = pins()
    kinds = {pin.kind for pin in found}
    assert kinds == {"install", "action"}, [p.where for p in found]
    pages = {pin.page.name for pin in found}
    assert {"README.md", "authoring.md", "ci.md"} <= pages
    assert unresolved(published, found) == []
    # The README's pin is the published main, resolved as the reader resolves it.
    (readme,) = [pin for pin in found if pin.page == docs.README]
    assert published.evaluate(readme) == published.head


def test_a_tag_that_was_never_made_is_reported(published: Published) -> None:
    page = docs.README
    tag = Pin(page, 1, "install", "v0.2.0", "pipx install ...@v0.2.0", "")
    short = Pin(page, 2, "action", published.head[:9], "uses: ...", "")
    assert unresolved(published, [tag, short]) == [
        "README.md:1: v0.2.0 ('v0.2.0') names no commit: pipx install ...@v0.2.0",
        f"README.md:2: an action pins a tag or a full sha, not {published.head[:9]!r}",
    ]


def test_the_ci_pages_workflows_pin_one_commit(published: Published) -> None:
    refs = {ref for ref in map(docs_action_ref, docs.workflow_files().values())}
    assert len(refs) == 1
    (ref,) = refs
    assert FULL_SHA.match(ref) and published.resolve(ref) == ref


def docs_action_ref(workflow: str) -> str:
    (ref,) = re.findall(r"uses: osmosis-ai/osmosis-reconciler@(\S+)", workflow)
    return str(ref)


# --------------------------------------------------------------------------- installs


def _shell(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
    return done


def _fresh_env(published: Published, venv: Path) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PIP_"))
    }
    path = [
        p for p in base.get("PATH", "").split(os.pathsep) if p != str(Path(sys.executable).parent)
    ]
    base["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    base["PYTHON"] = sys.executable
    base["PIPX_VENV"] = str(venv)
    return published.env(base)


def _installed_commit(venv: Path) -> str:
    code = (
        "import json, importlib.metadata as m; "
        "print(json.loads(m.distribution('osmosis-reconciler').read_text('direct_url.json'))"
        "['vcs_info']['commit_id'])"
    )
    # Not from this checkout's directory: its egg-info would answer for the package.
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        cwd=venv,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


_RUN_STEP = re.compile(r"^(?:-\s+)?run:\s+")


def shell_command(pin: Pin) -> str:
    """The command a pin's line runs: the line itself, or a workflow step's ``run:`` value
    (``- run: pip install ...`` runs ``pip install ...`` on the runner)."""
    return _RUN_STEP.sub("", pin.text, count=1)


def test_a_workflow_run_step_is_run_as_its_command() -> None:
    page = docs.README
    step = Pin(page, 1, "install", "v1", '- run: pip install "x @ git+u@v1"', "")
    plain = Pin(page, 2, "install", "v1", 'pip install "x @ git+u@v1"', "")
    assert shell_command(step) == shell_command(plain) == 'pip install "x @ git+u@v1"'


@pytest.mark.needs_index
@pytest.mark.slow
def test_each_documented_install_installs_the_pinned_commit(
    published: Published, tmp_path: Path
) -> None:
    commands: dict[str, list[Pin]] = {}
    for pin in pins():
        if pin.kind == "install":
            commands.setdefault(shell_command(pin), []).append(pin)
    assert any(text.startswith("pipx ") for text in commands)
    assert any(text.startswith("pip ") for text in commands)
    for number, (line, where) in enumerate(commands.items()):
        pin = where[0]
        venv = tmp_path / f"venv-{number}"
        assignments = [x for x in pin.block.splitlines() if re.match(r"^\w+=\$\(", x)]
        script = PIPX_SHIM + "\n".join(assignments) + "\n"
        if line.startswith("pip "):
            script += '"$PYTHON" -m venv "$PIPX_VENV"\n'
        script += line + "\nosmosis-reconciler --version\n"
        done = _shell(script, tmp_path, _fresh_env(published, venv))
        commit = published.resolve(published.evaluate(pin))
        assert commit is not None
        assert _installed_commit(venv) == commit, [p.where for p in where]
        version = done.stdout.splitlines()[-1]  # after whatever pip printed
        assert re.fullmatch(
            rf"osmosis-reconciler \d+\.\d+\.\d+(\.dev\d+\+g{commit[:7]}\w*)?", version
        ), done.stdout
        if "[ci]" in line:  # the extra the action installs: osmosis-ci's GitHub client
            _shell('python -c "import githubkit"', tmp_path, _fresh_env(published, venv))


@pytest.mark.needs_index
@pytest.mark.slow
def test_the_action_installs_its_pinned_commit_and_its_version_input(
    published: Published, tmp_path: Path
) -> None:
    """GitHub checks the action out at the pinned ref (a tree, no .git) and runs its install
    step; ``version:`` installs that ref from the git URL instead."""
    (pinned,) = {docs_action_ref(w) for w in docs.workflow_files().values()}
    head = published.head
    for name, ref, version in (("pinned", pinned, ""), ("version-input", head, head)):
        action_path = tmp_path / f"action-{name}"
        action_path.mkdir()
        archive = subprocess.run(
            ["git", "archive", ref], cwd=published.remote, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(action_path)], input=archive, check=True)
        venv = tmp_path / f"venv-{name}"
        env = _fresh_env(published, venv)
        env.update(
            VERSION=version,
            ACTION_PATH=str(action_path),
            ACTION_REPOSITORY="osmosis-ai/osmosis-reconciler",
        )
        _shell('"$PYTHON" -m venv "$PIPX_VENV"\n' + _install_step(action_path), tmp_path, env)
        shown = (action_path / "reconciler" / "cli" / "front.py").read_bytes()
        installed = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import reconciler.cli.front as f; print(f.__file__)",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert Path(installed).read_bytes() == shown, name
        if version:
            assert _installed_commit(venv) == published.head


def _install_step(action_path: Path) -> str:
    """The action's own install step, as the action at that ref has it."""
    action = yaml.safe_load((action_path / "action.yml").read_text(encoding="utf-8"))
    (step,) = [s for s in action["runs"]["steps"] if s.get("name") == "Install osmosis-reconciler"]
    return str(step["run"])
