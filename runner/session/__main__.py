"""``python -m runner.session RUNS/<session_id>``: the runner of one session (runner/session/main.py)."""

import sys

from runner.session.main import main

if __name__ == "__main__":
    sys.exit(main())
