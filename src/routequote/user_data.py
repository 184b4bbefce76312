"""Where `routequote mcp` keeps its files: a per-user data directory, never the working directory of the agent
host that started it (a desktop host starts it wherever it happens to be, and `var/` appeared there).

The XDG base directory rule: `$XDG_DATA_HOME/routequote` when that is an absolute path, else
`~/.local/share/routequote`. (`platformdirs` is not among the dependencies; this is the one rule needed.)
A setting given in the environment (ROUTEQUOTE_DATABASE_URL, ROUTEQUOTE_DEV_SIGNING_KEY_PATH) still wins."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from routequote.config import Settings

APP_DIR = "routequote"


def user_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_DIR
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "share" / APP_DIR


def stdio_settings(environ: Mapping[str, str] | None = None, **given: Any) -> Settings:
    """Settings for a process an agent host starts: the files it keeps default to the per-user directory
    (created 0700) unless the environment names them."""
    settings = Settings(**given)
    chosen = settings.model_fields_set
    where = user_data_dir(environ)
    update: dict[str, str] = {}
    if "database_url" not in chosen:
        update["database_url"] = f"sqlite+aiosqlite:///{where / 'routequote.sqlite3'}"
    if "dev_signing_key_path" not in chosen:
        update["dev_signing_key_path"] = str(where / "routequote-dev-signing-key.pem")
    if update:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
    return settings.model_copy(update=update)
