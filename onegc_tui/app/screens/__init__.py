"""The monitor's screens, one module each: the dashboard, a session's detail and replay, history and
the sessions list, help, the new-session form, confirmations and the raw-file viewer."""
