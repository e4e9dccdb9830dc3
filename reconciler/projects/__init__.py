"""Many projects in one repository (issue 38).

A project is a directory with its own settings file carrying an ``id`` (never its path):
its own ``benchmarks/``, lockfile, workspace, budget, policy and smoke rules. The root
settings file lists them (``projects = ["teams/*", "shared/evals"]``, globs of directories)
and holds the defaults they inherit (``config.project``). At such a root, ``osmosis-plan``
and ``osmosis-apply`` select projects (``select``), run one command per project side by
side (``run``: plans all at once, applies in a bounded pool in ``after`` order) and print one
result for them all (``render``). Inside a project directory every command behaves as in a
repository of one project. A repository without ``projects`` works exactly as before.

``discover``: the projects of a root, their ids and order. ``select``: which projects a
command runs, each with its reason. ``run``: the pool. ``render``: JSON, matrix, comment.
"""
