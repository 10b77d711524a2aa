"""A read-only home can be browsed by the monitor, live (issue 29): the monitor works on a private
copy of the store (onegc_tui/store/readonly_home.py ``private_store``), its live ingest reads the session
folders into it, the keys that would write say why not in one line, and the home is left as it
was: no ``onegc.db-wal``/``-shm``, no new file, no byte changed; the copy is gone afterwards."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import Log

from onegc_tui.app import make_app
from onegc_tui.app.guard import check_store
from onegc_tui.app.screens.newsession import NewSessionScreen
from onegc_tui.app.widgets.panes import CheckpointsPane
from onegc_tui.store import DB_NAME, Store, db_path, readonly_home
from onegc_tui.store.ingest import Ingester
from onegc_tui.store.readonly_home import private_store
from runner.wire.jsonl import EventWriter
from tests.homes import _session

SIZE = (160, 44)
LIVE = "b-live"


def build(home: Path) -> None:
    """An ended session and a running one (no runner: nothing ends it), both in ``onegc.db``, and a
    session that ended in the folders only (the store lags behind them)."""
    _session(home, "a-ended", "scripted", "completed", False, [0.41, 0.77])
    _session(home, LIVE, "scripted", None, False, [0.30])
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    _session(home, "e-late", "scripted", "completed", False, [0.5, 0.7])


def snapshot(home: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder of the home, but the live session's events (the test writes those)."""
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode)
            for p in sorted(home.rglob("*")) if p != home / "runs" / LIVE / "events.jsonl"}


async def browse(home: Path, writer_path: Path) -> None:
    """The monitor over ``home``, as ``onegc monitor`` opens it; the live session's runner appends
    through ``writer_path`` (its events file, where the runner sees it)."""
    before, db_bytes = snapshot(home), (home / DB_NAME).read_bytes()
    events_before = writer_path.read_bytes()
    with private_store(home) as read_only:
        assert read_only
        copy = db_path(home)
        assert copy != home / DB_NAME and copy.parent.stat().st_mode & 0o777 == 0o700
        check_store(home)
        app = make_app(home, focus=LIVE, show_clock=False, read_only=read_only)
        async with app.run_test(size=SIZE) as pilot:
            log = app.query_one("#transcript-log", Log)
            for _ in range(100):  # the store, and what only the folders held (e-late)
                await pilot.pause(0.1)
                if {"a-ended", LIVE, "e-late"} <= set(app.feed.rows) and app.dashboard.loaded_seq:
                    break
            assert app.feed.rows[LIVE]["state"] == "running" and app.feed.rows["e-late"]["state"] == "ended"
            assert app.dashboard.selected == LIVE and any(f"{LIVE}: I'll start" in line for line in log.lines)
            assert "read-only view of" in app.title and str(home) in app.title

            writer = EventWriter(writer_path, LIVE)  # the session goes on after the monitor started
            writer.emit("transcript", role="assistant", kind="text", text="streamed while a read-only monitor watched")
            writer.emit("checkpoint_scored", name="run_2-1", value=0.91, metric="val_acc", split="val",
                        budget_elapsed_s=70.0)
            writer.close()
            for _ in range(100):
                await pilot.pause(0.1)
                if any("streamed while a read-only monitor watched" in line for line in log.lines):
                    break
            else:
                raise AssertionError(f"the new events never reached the transcript pane: {log.lines[-5:]}")
            await pilot.pause(0.5)
            assert "run_2-1" in app.query_one(CheckpointsPane).values  # the checkpoints pane too

            for key, what in (("a", f"cannot abort {LIVE}"), ("p", f"cannot pause {LIVE}"),
                              ("n", "cannot start a session")):
                await pilot.press(key)
                await pilot.pause()
                said = [n.message for n in app._notifications if n.message.startswith(what)]
                assert len(said) == 1 and "\n" not in said[0], said
                assert f"{home} is read-only for this user" in said[0] and "someone who can write there can" in said[0]
                assert len(app.screen_stack) == 1 and not isinstance(app.screen, NewSessionScreen)  # no confirm, no form
            await pilot.press("h")  # the history reads the copy; its export would write into the home
            for _ in range(100):
                await pilot.pause(0.1)
                if getattr(app.screen, "matrix", None) is not None:
                    break
            await pilot.press("e")
            await pilot.pause()
            assert any(n.message.startswith(f"cannot export the history to {home / 'exports'}: ")
                       for n in app._notifications)
        assert copy.exists()
    assert not copy.parent.exists()  # the private copy is removed at the end
    assert db_path(home) == home / DB_NAME
    assert snapshot(home) == before and (home / DB_NAME).read_bytes() == db_bytes
    assert not (home / "onegc.db-wal").exists() and not (home / "onegc.db-shm").exists()
    assert not (home / "runs" / LIVE / "control.jsonl").exists()
    assert writer_path.read_bytes().startswith(events_before)  # only the runner's lines were added


@pytest.fixture
def mounted(tmp_path):
    """``(home, src)``: the home, built in ``src`` and shown read-only at ``home`` by a bind mount
    (root ignores permissions; a read-only mount it does not). The runner writes in ``src``."""
    src, home = tmp_path / "src", tmp_path / "home"
    src.mkdir()
    home.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(home)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        build(home)  # through the mount: the store records the home's own paths
        out = subprocess.run(["mount", "-o", "remount,bind,ro", str(home)], capture_output=True, text=True)
        if out.returncode:
            pytest.skip(f"cannot remount read-only: {out.stderr.strip()}")
        yield home, src
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


@pytest.mark.slow  # mount
async def test_the_monitor_browses_a_read_only_mount_live_and_leaves_it_as_it_was(mounted):
    home, src = mounted
    assert not readonly_home.writable(home)
    await browse(home, src / "runs" / LIVE / "events.jsonl")


async def test_the_monitor_writes_nothing_where_the_home_is_not_writable(tmp_path, monkeypatch):
    """The same without a mount: as root a write would succeed, and the snapshot would show it."""
    home = tmp_path / "home"
    build(home)
    monkeypatch.setattr(readonly_home, "writable", lambda _home: False)
    await browse(home, home / "runs" / LIVE / "events.jsonl")


def test_onegc_monitor_opens_a_read_only_home_on_its_private_copy(tmp_path, monkeypatch):
    """The command's wiring: a read-only view on the copy, the copy removed when the monitor ends;
    a writable home as before."""
    from onegc_tui.app import guard
    from onegc_tui.cli import main as cli

    home = tmp_path / "home"
    build(home)
    monkeypatch.setenv("ONEGC_HOME", str(home))
    monkeypatch.setattr(cli, "need_terminal", lambda _what: None)
    seen = []

    def run_monitor(app, going_on="", headless=False, *, describe):
        seen.append((app.read_only, db_path(app.home)))

    monkeypatch.setattr(guard, "run_monitor", run_monitor)
    assert CliRunner().invoke(cli.main, ["monitor"]).exit_code == 0
    monkeypatch.setattr(readonly_home, "writable", lambda _home: False)
    r = CliRunner().invoke(cli.main, ["monitor"])
    assert r.exit_code == 0, r.output
    (writable, own), (read_only, copy) = seen
    assert (writable, own) == (False, home / DB_NAME)
    assert read_only and copy.parent != home and not copy.parent.exists()
    assert not (home / "onegc.db-wal").exists()


@pytest.mark.slow  # mount, a server, Chromium
async def test_onegc_monitor_web_serves_a_read_only_view(mounted, tmp_path):
    """``onegc monitor --web`` over a read-only mount: the server says it is a read-only view, the
    tab's monitor shows the sessions and refuses an abort in one line, and neither leaves anything
    behind, in the home or in the temporary folder."""
    import os
    import sys

    pytest.importorskip("textual_serve", reason="textual-serve is not installed")
    from tests.app.browser import Browser, find_chromium

    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from tests.app.test_web import free_port, wait_http
    from tests.helpers import REPO

    home, _src = mounted
    before = snapshot(home)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "ONEGC_HOME": str(home), "PYTHONPATH": str(REPO), "TZ": "UTC", "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "onegc_tui.cli", "monitor", "--web", "--port", str(free_port())],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        line = proc.stdout.readline().decode()  # the server's first line, once it listens
        assert "a read-only view: this user cannot write there" in line, line
        url = line.split(" on ", 1)[1].split()[0]
        wait_http(url)
        async with Browser(1400, 900) as browser:
            await browser.open(url)
            await browser.wait_for_text("read-only view of", LIVE, "e-late", timeout=90)
            await browser.type("a")
            text = await browser.wait_for_text(f"cannot abort {LIVE}", timeout=30)
            assert "Abort session" not in text  # no confirmation asked
            assert [p.name[:14] for p in tmp.iterdir()] == ["onegc-monitor-"]  # the tab's private copy
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert snapshot(home) == before and not (home / "onegc.db-wal").exists()
    for _ in range(50):  # the tab's monitor ends with its page
        if not any(tmp.iterdir()):
            break
        time.sleep(0.1)
    assert not any(tmp.iterdir()), list(tmp.iterdir())


async def test_the_monitor_reads_a_finished_read_only_home_in_place(tmp_path, monkeypatch):
    """Where the store holds the folders whole and nothing runs, the monitor reads it in place
    (issue 49: no copy per viewer), ingests nothing, and shows every session."""
    home = tmp_path / "home"
    _session(home, "a-ended", "scripted", "completed", False, [0.41, 0.77])
    _session(home, "c-ended", "scripted", "agent_failed", False, [])
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    monkeypatch.setattr(readonly_home, "writable", lambda _home: False)
    with private_store(home) as view:
        assert view == readonly_home.IN_PLACE and db_path(home) == home / DB_NAME
        opened = Store.open(home)
        assert opened.read_only
        opened.close()
        app = make_app(home, show_clock=False, read_only=True, live=False)
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(100):
                await pilot.pause(0.1)
                if {"a-ended", "c-ended"} <= set(app.feed.rows):
                    break
            assert app.feed.rows["c-ended"]["state"] == "failed"
    assert not (home / "onegc.db-wal").exists() and not (home / "onegc.db-shm").exists()
