"""``osmosis-ci``: the CI helpers of the GitOps loop (``main`` is the console script).

``comment`` (sticky plan comment), ``drift`` (drift issue), ``commit`` (lockfile commit
message and push), ``announce`` (results of ended runs on their pull requests and as
commit statuses), over ``github`` (githubkit). Decisions are pure functions of JSON (the
plan JSON, the lockfile); the GitHub and git calls are at the edges of each module.
"""
