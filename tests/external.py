"""What the tests read from outside the repository, each found through an environment variable.

The repository carries none of these. `UDS_SHARED_DIR` names one folder that holds them all in
the layout CI checks out beside the clone (`data/tofu/`, `data/lmlm_audit/`,
`vendor/open-unlearning/`); `UDS_TOFU_DIR` and `UDS_LMLM_AUDIT_DIR` (the toolkit's own
variables) name the data folders one by one and win over it. A test whose input is absent skips,
saying which variable provides it (docs/testing.md). Importing this module sets the toolkit's
variables from `UDS_SHARED_DIR`, so the code under test finds the same data.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ["UDS_SHARED_DIR"]).expanduser() if os.environ.get("UDS_SHARED_DIR") else None
if SHARED is not None:
    os.environ.setdefault("UDS_TOFU_DIR", str(SHARED / "data" / "tofu"))
    os.environ.setdefault("UDS_LMLM_AUDIT_DIR", str(SHARED / "data" / "lmlm_audit"))

# Never created: a path under which nothing exists, so `TOFU_DIR / name` is simply absent.
_ABSENT = Path(__file__).resolve().parents[1] / ".uds_home" / "not-provided"
TOFU_DIR = Path(os.environ["UDS_TOFU_DIR"]).expanduser() if os.environ.get("UDS_TOFU_DIR") else _ABSENT / "tofu"
TOFU_SKIP = ("needs the TOFU JSON files: set UDS_TOFU_DIR to a folder holding them, or UDS_SHARED_DIR "
             "(docs/testing.md says where they come from)")
OU_SOURCE = SHARED / "vendor" / "open-unlearning" if SHARED is not None else _ABSENT / "open-unlearning"
OU_SKIP = "needs Open-Unlearning's source tree: set UDS_SHARED_DIR (docs/testing.md)"
LMLM_SKIP = "needs the published deletion-audit data: set UDS_LMLM_AUDIT_DIR or UDS_SHARED_DIR (docs/testing.md)"
