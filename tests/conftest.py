from __future__ import annotations

import os

# The suite must never read an operator's environment by accident.
for key in [k for k in os.environ if k.startswith("ROUTEQUOTE_")]:
    del os.environ[key]
