"""Guards for every test session (tests/support/guards.py says what each one does and why):
HOME and XDG in a temp dir, no ``OSMOSIS_*`` from the environment, no network beyond
loopback unless a test is marked ``needs_index``. And the shared fixtures of tests/support/
(the browser page), available to every test without an import."""

from tests.support.browser import browser_page  # noqa: F401
from tests.support.guards import (  # noqa: F401  (pytest finds hooks and fixtures by name)
    hermetic_session,
    loopback_only,
    pytest_configure,
    pytest_unconfigure,
)
