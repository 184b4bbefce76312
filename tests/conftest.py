from __future__ import annotations

import os

from hypothesis import settings

# The suite must never read an operator's environment by accident.
for key in [k for k in os.environ if k.startswith("ROUTEQUOTE_")]:
    del os.environ[key]

# CI replays a fixed set of generated examples (a red CI must be reproducible); local runs explore anew.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
