#!/usr/bin/python3
"""A third-party participant of a ZooKeeper election, written the way a user of kazoo writes
one: a KazooClient, then `Election(path, identifier=id).run(lead)`. electop's tests start it
to see what such a participant believes. It prints one JSON line per change of belief:

  {"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"..."}

It notices only what kazoo tells it: `run` calling the leader function, and the connection
state (LOST once the session is gone). Run it with Debian's /usr/bin/python3 (python3-kazoo).

  /usr/bin/python3 campaign.py --connect 127.0.0.1:2181 --path /election/jobs --id node-a \
      --session-ms 3000
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState

_lock = threading.Lock()


def say(ident, belief, detail):
    line = json.dumps(
        {"t_ms": int(time.time() * 1000), "id": ident, "belief": belief, "detail": detail}
    )
    # One write per line, so a reader never sees half a belief.
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", default="127.0.0.1:2181")
    ap.add_argument("--path", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--session-ms", type=int, default=3000)
    args = ap.parse_args()

    client = KazooClient(hosts=args.connect, timeout=args.session_ms / 1000.0)

    def on_state(state):
        if state == KazooState.LOST:
            say(args.id, "lost", "connection state LOST (session gone)")
        elif state == KazooState.SUSPENDED:
            print("connection SUSPENDED", file=sys.stderr, flush=True)

    client.add_listener(on_state)
    client.start(timeout=15)

    def resign(_sig, _frame):
        # As a service stops: close the session, which removes its node at once.
        client.stop()
        client.close()
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, resign)
    say(args.id, "follower", "campaigning with kazoo Election on " + args.path)

    def lead():
        say(args.id, "leader", "Election.run called the leader function")
        # Lead until the process is stopped, as a leader loop would.
        threading.Event().wait()

    client.Election(args.path, identifier=args.id).run(lead)


if __name__ == "__main__":
    main()
