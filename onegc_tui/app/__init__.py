"""The Textual monitor. The only package of onegc that imports textual."""

from onegc_tui.app.app import MonitorApp, make_app

__all__ = ["MonitorApp", "make_app"]
