"""Machine-level settings the monitor and launchers read: ``$ONEGC_HOME/onegc.toml`` and the env.

    [monitor]
    observer = "polling"   # "inotify" (default) or "polling"; polling is what a shared
                           # filesystem needs: inotify never sees writes made on other hosts

``ONEGC_OBSERVER`` overrides the file. Sections other than ``[monitor]`` belong to other parts
of onegc and are left to them.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from runner.errors import ConfigError, describe_validation_error

ObserverKind = Literal["inotify", "polling"]
SETTINGS_FILE = "onegc.toml"
OBSERVER_ENV = "ONEGC_OBSERVER"
OBSERVERS = ("inotify", "polling")


class MonitorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    observer: ObserverKind = "inotify"


def settings_path(home: Path) -> Path:
    return Path(home) / SETTINGS_FILE


def monitor_settings(home: Path) -> MonitorSettings:
    """The ``[monitor]`` table of ``onegc.toml`` (defaults when the file or table is absent)."""
    path = settings_path(home)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return MonitorSettings()
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return MonitorSettings.model_validate(raw.get("monitor", {}))
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, f"{path} [monitor]")) from None


def observer_kind(home: Path) -> ObserverKind:
    """Which watchdog observer the ingester should use for ``home/runs``.

    ``ONEGC_OBSERVER`` first, then ``[monitor] observer`` in ``onegc.toml``, else ``inotify``.
    """
    env = os.environ.get(OBSERVER_ENV, "").strip().lower()
    if env:
        if env not in OBSERVERS:
            raise ConfigError(f"{OBSERVER_ENV}={env!r}: use one of {', '.join(OBSERVERS)}")
        return env  # type: ignore[return-value]
    return monitor_settings(home).observer
