"""The recorded state: the lockfile format and its TOML reader and writer, the store, and the
local and git locks that guard it."""
