"""The latency machinery, behind one seam: how a short `autopoiesis` call answers fast.

    rules.py    which argument lists are harness hook calls and which ones the running
                daemon may answer (the one rule both ends apply)
    wire.py     the request and reply of a call forwarded over the daemon's Unix socket,
                and the client that sends it; standard library only
    server.py   the daemon's end: the socket, read and answered in the daemon's loop
    forward.py  runs a forwarded call as the client's own process would
    lean_cli.py the CLI trimmed to the one command a call runs (`app_for`, for a call
                the daemon does not answer)

autopoiesis/__main__.py is the light entry that uses them. Why each trick is there, and
what it saves, is in docs/performance.md.
"""
