"""The engine: wiring a command's snapshots, observing the Platform, applying a plan, importing
runs and editing state. It never parses argv or prints; the CLI builds its context."""
