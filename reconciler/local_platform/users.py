"""Who calls the local Platform: the users a token stands for.

Without users (the embedded Platform, ``serve`` without ``--user``) every token is the one
``LOCAL_USER``. ``serve --user TOKEN=NAME[:EMAIL]`` (repeatable) makes each token a person
(or a service account): runs record their creator, personal secrets belong to their user,
and an unknown token is refused. A user's id is derived from the name, so the same name is
the same user in every process that opens the data directory.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    """One Platform user: ``id`` (derived from ``name``), ``name``, ``email``."""

    id: str
    name: str
    email: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "email": self.email, "name": self.name}


LOCAL_USER = User("usr_local", "Local User", "local-user@osmosis.local")
"""The only user of a Platform started without users (and of the embedded Platform)."""


def make_user(name: str, email: str | None = None) -> User:
    """The user called ``name``; the email defaults to ``<slug>@osmosis.local``."""
    name = name.strip()
    if not name:
        raise ValueError("a user needs a name")
    if name == LOCAL_USER.name:
        return LOCAL_USER if email in (None, LOCAL_USER.email) else User(LOCAL_USER.id, name, email)
    slug = re.sub(r"[^a-z0-9]+", ".", name.lower()).strip(".") or "user"
    uid = "usr_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return User(uid, name, email.strip() if email and email.strip() else f"{slug}@osmosis.local")


def parse_user_spec(spec: str) -> tuple[str, User]:
    """``TOKEN=NAME[:EMAIL]`` -> (token, user); ``ValueError`` names what is wrong (never
    the token)."""
    token, sep, who = spec.partition("=")
    if not sep or not token.strip() or not who.strip():
        raise ValueError("--user needs TOKEN=NAME[:EMAIL], e.g. --user alice-token=Alice")
    name, _, email = who.partition(":")
    if not name.strip():
        raise ValueError("--user needs a name after '='")
    if email and "@" not in email:
        raise ValueError(f"--user {name.strip()}: {email!r} is not an email address")
    return token.strip(), make_user(name, email or None)


def parse_creator(spec: str) -> User:
    """``NAME[:EMAIL]`` (``runs seed --creator``) -> the user."""
    name, _, email = spec.partition(":")
    if email and "@" not in email:
        raise ValueError(f"--creator {name.strip()}: {email!r} is not an email address")
    return make_user(name, email or None)


def users_from_specs(specs: list[str] | tuple[str, ...]) -> dict[str, User]:
    """``["TOKEN=NAME[:EMAIL]", ...]`` (``serve --user``) -> ``LocalPlatform(users=...)``."""
    users: dict[str, User] = {}
    for spec in specs:
        token, user = parse_user_spec(spec)
        if token in users:
            raise ValueError(
                f"--user: two users share one token ({users[token].name}, {user.name})"
            )
        users[token] = user
    return users
