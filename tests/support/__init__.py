"""Helpers shared by the test suites: one copy of each (clock, git, canonical bodies, the
emulator, the browser)."""
