"""Re-exports integration/conftest.py's as_root/as_user fixtures for the kernel attack battery."""

from __future__ import annotations

import importlib.util
import os
import sys

_INTEGRATION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

_spec = importlib.util.spec_from_file_location("_agb_integration_conftest",
                                               os.path.join(_INTEGRATION, "conftest.py"))
_mod = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_mod)  # type: ignore[union-attr]

as_root = _mod.as_root
as_user = _mod.as_user
token = _mod.token
