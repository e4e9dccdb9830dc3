"""gitinfo against real temporary git repositories (the real ``git`` binary)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reconciler.errors import GitError
from reconciler.gitinfo import CommitRef, GitRepo, Trailer, redact_url
from tests.support.git import git

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="git is required",
)


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def write(repo: Path, rel: str, text: str) -> None:
    target = repo / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def commit(repo: Path, message: str, *paths: str) -> str:
    git(repo, "add", "-A", *paths)
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


def test_discover_finds_root_from_subdirectory(repo: Path) -> None:
    write(repo, "benchmarks/a.toml", "x")
    found = GitRepo.discover(repo / "benchmarks")
    assert found is not None
    assert found.root.resolve() == repo.resolve()


def test_discover_outside_a_work_tree_is_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert GitRepo.discover(plain) is None


def test_discover_on_a_missing_path_is_none(tmp_path: Path) -> None:
    assert GitRepo.discover(tmp_path / "nowhere" / "deeper") is None


def test_git_error_on_a_vanished_root(tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        GitRepo(tmp_path / "gone").head()
    assert info.value.message == f"{tmp_path / 'gone'} is not a directory"


def test_empty_repository_has_no_head_and_no_history(repo: Path) -> None:
    write(repo, "benchmarks/a.toml", "x")
    git_repo = GitRepo(repo)
    assert git_repo.head() is None
    assert git_repo.is_shallow() is False
    assert git_repo.last_commits(["benchmarks/a.toml"]) == {}
    assert git_repo.trailers_since(None) == []
    assert git_repo.commit_exists("HEAD") is False
    assert git_repo.subject("HEAD") is None


def test_head_subject_and_commit_exists(repo: Path) -> None:
    first = commit(repo, "first commit")
    second = commit(repo, "second commit")
    git_repo = GitRepo(repo)
    assert git_repo.head() == second
    assert git_repo.subject(first) == "first commit"
    assert git_repo.subject("HEAD~1") == "first commit"
    assert git_repo.commit_exists(first[:10])
    assert not git_repo.commit_exists("0" * 40)
    assert not git_repo.commit_exists("--output=/tmp/x")
    assert git_repo.subject("no-such-branch") is None


def test_last_commits_provenance_per_path(repo: Path) -> None:
    write(repo, "benchmarks/a.toml", "1")
    write(repo, "benchmarks/tb/b.toml", "1")
    write(repo, "README.md", "r")
    first = commit(repo, "add configs")
    write(repo, "benchmarks/a.toml", "2")
    second = commit(repo, "tune a")
    write(repo, "README.md", "r2")
    commit(repo, "docs only")
    write(repo, "benchmarks/untracked.toml", "u")

    result = GitRepo(repo).last_commits(
        ["benchmarks/a.toml", "benchmarks/tb/b.toml", "benchmarks/untracked.toml"]
    )
    assert result == {
        "benchmarks/a.toml": CommitRef(second, "tune a"),
        "benchmarks/tb/b.toml": CommitRef(first, "add configs"),
    }
    assert result["benchmarks/a.toml"].short == second[:12]


def test_last_commits_credits_the_rename_commit(repo: Path) -> None:
    write(repo, "benchmarks/old.toml", "same content")
    commit(repo, "add old")
    git(repo, "mv", "benchmarks/old.toml", "benchmarks/new.toml")
    renamed = commit(repo, "rename old to new")
    result = GitRepo(repo).last_commits(["benchmarks/new.toml", "benchmarks/old.toml"])
    # The old path's last change is its deletion in the rename commit.
    assert result == {
        "benchmarks/new.toml": CommitRef(renamed, "rename old to new"),
        "benchmarks/old.toml": CommitRef(renamed, "rename old to new"),
    }


def test_last_commits_handles_odd_file_names_and_many_paths(repo: Path) -> None:
    names = [f"benchmarks/suite-{i % 7}/cfg {i}.toml" for i in range(300)]
    names.append('benchmarks/qu"ote é.toml')
    for name in names:
        write(repo, name, name)
    sha = commit(repo, "bulk add")
    write(repo, names[5], "changed")
    later = commit(repo, "change one")
    result = GitRepo(repo).last_commits(names)
    assert len(result) == len(names)
    assert result[names[5]].sha == later
    assert result[names[6]].sha == sha
    assert result['benchmarks/qu"ote é.toml'].subject == "bulk add"


def test_trailers_since_oldest_first_and_case_insensitive(repo: Path) -> None:
    base = commit(repo, "base\n\nOsmosis-Rerun: before/base")
    c1 = commit(repo, "rerun smoke\n\nOsmosis-Rerun: terminal-bench/smoke")
    commit(repo, "unrelated\n\nSigned-off-by: A <a@example.com>")
    c3 = commit(repo, "hold back\n\nosmosis-skip: hle/*\nOsmosis-Rerun: gdpval/x")
    commit(repo, "body mentions Osmosis-Rerun: not/a/trailer\n\nsome body text")
    git_repo = GitRepo(repo)
    assert git_repo.trailers_since(base) == [
        Trailer("Osmosis-Rerun", "terminal-bench/smoke", c1, "rerun smoke"),
        Trailer("Osmosis-Skip", "hle/*", c3, "hold back"),
        Trailer("Osmosis-Rerun", "gdpval/x", c3, "hold back"),
    ]
    everything = git_repo.trailers_since(None)
    assert [t.value for t in everything] == [
        "before/base",
        "terminal-bench/smoke",
        "hle/*",
        "gdpval/x",
    ]
    assert git_repo.trailers_since("HEAD") == []
    assert git_repo.trailers_since(base, keys=("Signed-off-by",))[0].value == "A <a@example.com>"


def test_trailers_since_unknown_revision_is_an_error_not_all_history(repo: Path) -> None:
    commit(repo, "one\n\nOsmosis-Rerun: a")
    with pytest.raises(GitError) as info:
        GitRepo(repo).trailers_since("deadbeef" * 5)
    assert info.value.message == f"unknown revision {'deadbeef' * 5!r}"
    assert "git fetch" in (info.value.hint or "")


def test_changed_since_committed_staged_unstaged_untracked_deleted(repo: Path) -> None:
    write(repo, "benchmarks/a.toml", "1")
    write(repo, "benchmarks/b.toml", "1")
    write(repo, "benchmarks/c.toml", "1")
    write(repo, "benchmarks/d.toml", "1")
    write(repo, ".gitignore", "*.log\n")
    base = commit(repo, "base")
    write(repo, "benchmarks/a.toml", "committed change")
    commit(repo, "change a")
    write(repo, "benchmarks/b.toml", "staged change")
    git(repo, "add", "benchmarks/b.toml")
    write(repo, "benchmarks/c.toml", "unstaged change")
    (repo / "benchmarks/d.toml").unlink()
    write(repo, "benchmarks/new.toml", "untracked")
    write(repo, "benchmarks/ignored.log", "ignored")
    assert GitRepo(repo).changed_since(base) == {
        "benchmarks/a.toml",
        "benchmarks/b.toml",
        "benchmarks/c.toml",
        "benchmarks/d.toml",
        "benchmarks/new.toml",
    }
    assert GitRepo(repo).changed_since("HEAD") == {
        "benchmarks/b.toml",
        "benchmarks/c.toml",
        "benchmarks/d.toml",
        "benchmarks/new.toml",
    }


def test_changed_since_uses_the_merge_base_for_branches(repo: Path) -> None:
    write(repo, "benchmarks/a.toml", "1")
    commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "benchmarks/feature.toml", "f")
    commit(repo, "feature work")
    git(repo, "checkout", "-q", "main")
    write(repo, "benchmarks/main-only.toml", "m")
    commit(repo, "main moved on")
    git(repo, "checkout", "-q", "feature")
    # main gained main-only.toml after the branch was cut: not something this branch touched.
    assert GitRepo(repo).changed_since("main") == {"benchmarks/feature.toml"}


def test_changed_since_unknown_revision(repo: Path) -> None:
    commit(repo, "one")
    with pytest.raises(GitError) as info:
        GitRepo(repo).changed_since("origin/main")
    assert info.value.message == "unknown revision 'origin/main'"
    with pytest.raises(GitError):
        GitRepo(repo).changed_since("--all")


def test_origin_url_strips_credentials(repo: Path) -> None:
    assert GitRepo(repo).origin_url() is None
    git(
        repo,
        "remote",
        "add",
        "origin",
        "https://x-access-token:ghs_SECRET123@github.com/acme/evals.git",
    )
    url = GitRepo(repo).origin_url()
    assert url == "https://github.com/acme/evals.git"
    assert "SECRET" not in url


def test_redact_url_leaves_ssh_and_plain_urls() -> None:
    assert redact_url("git@github.com:acme/evals.git") == "git@github.com:acme/evals.git"
    assert redact_url("https://github.com/acme/evals") == "https://github.com/acme/evals"
    assert redact_url("ssh://git@host/x.git") == "ssh://host/x.git"


def test_git_dir_of_a_calling_hook_does_not_redirect_commands(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = init_repo(tmp_path / "other")
    commit(other, "other repo commit")
    mine = commit(repo, "my commit")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert GitRepo(repo).head() == mine


@pytest.fixture
def shallow_clone(repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    write(repo, "benchmarks/old.toml", "1")
    write(repo, "benchmarks/recent.toml", "1")
    shas = {"old": commit(repo, "add both\n\nOsmosis-Rerun: old/trailer")}
    for i in range(3):
        write(repo, "README.md", str(i))
        shas[f"doc{i}"] = commit(repo, f"docs {i}")
    write(repo, "benchmarks/recent.toml", "2")
    shas["recent"] = commit(repo, "tune recent\n\nOsmosis-Rerun: recent")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(clone))
    return clone, shas


def test_shallow_clone_omits_history_beyond_the_boundary(shallow_clone) -> None:
    clone, shas = shallow_clone
    git_repo = GitRepo(clone)
    assert git_repo.is_shallow()
    assert git_repo.head() == shas["recent"]
    # recent.toml changed inside the visible history; old.toml's last change is hidden
    # behind the boundary commit (which merely *appears* to add every file).
    assert git_repo.last_commits(["benchmarks/old.toml", "benchmarks/recent.toml"]) == {
        "benchmarks/recent.toml": CommitRef(shas["recent"], "tune recent"),
    }
    assert git_repo.trailers_since(None) == [
        Trailer("Osmosis-Rerun", "recent", shas["recent"], "tune recent")
    ]
    assert git_repo.commit_exists(shas["old"]) is False


def test_shallow_clone_unknown_revision_says_how_to_fetch(shallow_clone) -> None:
    clone, shas = shallow_clone
    with pytest.raises(GitError) as info:
        GitRepo(clone).trailers_since(shas["old"])
    assert info.value.message == f"unknown revision {shas['old']!r} (this is a shallow clone)"
    assert "fetch-depth: 0" in (info.value.hint or "")


def test_depth_one_clone_never_crashes(repo: Path, tmp_path: Path) -> None:
    write(repo, "benchmarks/a.toml", "1")
    head = commit(repo, "only visible commit")
    clone = tmp_path / "depth1"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    git_repo = GitRepo(clone)
    assert git_repo.is_shallow()
    assert git_repo.head() == head
    assert git_repo.last_commits(["benchmarks/a.toml"]) == {}
    assert git_repo.changed_since("HEAD") == set()
    assert git_repo.subject("HEAD") == "only visible commit"
