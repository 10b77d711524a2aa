"""Budget arithmetic with injected clocks: pauses do not count, the deadline moves on resume."""

from runner.session.budget import BudgetClock


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_active_time_excludes_pauses_and_deadline_moves():
    mono, wall = FakeClock(), FakeClock()
    c = BudgetClock(100, monotonic=mono, wall=wall)
    c.start()
    mono.t += 30
    wall.t += 30
    assert c.remaining_s() == 70 and c.deadline() == wall.t + 70
    assert c.pause() and not c.pause()
    mono.t += 500
    wall.t += 500
    assert c.remaining_s() == 70 and not c.expired() and c.paused_s() == 500
    assert c.resume() and not c.resume()
    assert c.deadline() == wall.t + 70
    mono.t += 70
    assert c.expired() and c.remaining_s() == 0
    c.stop()
    assert c.active_s() == 100 and c.wall_s() == 600


def test_stop_while_paused_closes_the_pause():
    mono = FakeClock()
    c = BudgetClock(10, monotonic=mono)
    c.start()
    mono.t += 2
    c.pause()
    mono.t += 3
    c.stop()
    assert c.active_s() == 2 and c.paused_s() == 3
