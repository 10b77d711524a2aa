"""The App/Screen split (issue 34, toolong's shape): the app owns what every screen shares and the
keys of every screen; the dashboard owns its keys and actions; nothing is forwarded between them."""

from __future__ import annotations

import inspect

from onegc_tui.app.app import MonitorApp
from onegc_tui.app.screens.dashboard import DashboardScreen


def _actions(cls: type) -> set[str]:
    return {name for name in vars(cls) if name.startswith("action_")}


def test_the_app_forwards_no_action_to_the_dashboard_and_each_key_has_its_owner():
    assert not _actions(MonitorApp) & _actions(DashboardScreen)
    assert {"action_toggle_pause", "action_abort", "action_detail", "action_mark"} <= _actions(DashboardScreen)
    for binding in DashboardScreen.BINDINGS:
        namespace, _, name = binding.action.rpartition(".")  # type: ignore[union-attr]
        owner = MonitorApp if namespace == "app" else DashboardScreen
        assert hasattr(owner, f"action_{name}"), binding


def test_the_footer_order_is_the_dashboards_own_list():
    keys = [b.key for b in DashboardScreen.BINDINGS if b.show]  # type: ignore[union-attr]
    assert keys == ["question_mark", "p", "a", "backslash", "slash", "d", "h", "t", "f", "s", "space", "r", "n", "q"]


def test_the_app_stays_small():
    assert len(inspect.getsourcelines(MonitorApp)[0]) <= 200
    assert not [name for name, value in vars(MonitorApp).items() if isinstance(value, property)]  # no read-through


def test_the_app_posts_the_dashboard_messages_and_calls_none_of_its_methods():
    """Issue 49: the app called the dashboard's methods (follow, show_sessions, tick, ask_for)."""
    import ast

    tree = ast.parse(inspect.getsource(MonitorApp))
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Attribute)
              and node.func.value.attr == "dashboard"}
    assert called == {"post_message"}
    posted = {node.args[0].func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and node.func.attr == "post_message" and node.args
              and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Attribute)}
    assert {"Beat", "Second", "Sessions", "Focus"} <= posted
