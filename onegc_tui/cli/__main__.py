"""``python -m onegc_tui.cli``: the ``onegc`` command."""

from onegc_tui.cli.main import entry

if __name__ == "__main__":
    entry()
