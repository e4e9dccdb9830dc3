#!/usr/bin/env bash
# Best effort: install the real osmosis CLI (osmosis-ai 0.3.8, needs Python >= 3.12) into
# .venv-osmosis-cli so the suite can check that it works against the local Platform.
# When no Python 3.12+ is available the real-CLI test is skipped and says why.
set -u
dest=${1:-.venv-osmosis-cli}
[ -x "$dest/bin/osmosis" ] && exit 0
find_python() {
  for candidate in python3.13 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.1[2-9]\.' | tail -n 1)
    if [ -n "$version" ]; then
      echo "$(pyenv root)/versions/$version/bin/python3"; return 0
    fi
  fi
  return 1
}
python=$(find_python) || { echo "note: no Python 3.12+ found; the real osmosis CLI test will be skipped"; exit 0; }
"$python" -m venv "$dest" && "$dest/bin/python" -m pip install -q "osmosis-ai==0.3.8" >/dev/null 2>&1 \
  || { echo "note: could not install osmosis-ai 0.3.8; the real osmosis CLI test will be skipped"; rm -rf "$dest"; exit 0; }
