#!/usr/bin/python3
"""A third-party holder of a Redis leader lock, written the way a user of redis-py writes
one: `r.lock(name, timeout=ttl)`, `acquire()`, then `reacquire()` every third of the TTL
while leading. electop's tests start it to see what such a holder believes. It prints one
JSON line per change of belief, its token in `detail`:

  {"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"<token>"}

The password, if any, comes from the REDIS_PASSWORD environment variable. Run it with
Debian's /usr/bin/python3 (python3-redis).

  /usr/bin/python3 campaign.py --port 6379 --name leader:jobs --id node-a --ttl-ms 3000
"""

import argparse
import json
import os
import sys
import time

import redis
from redis.exceptions import LockError


def say(ident, belief, detail):
    line = json.dumps(
        {"t_ms": int(time.time() * 1000), "id": ident, "belief": belief, "detail": detail}
    )
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--name", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--ttl-ms", type=int, default=3000)
    args = ap.parse_args()

    r = redis.Redis(host=args.host, port=args.port, password=os.environ.get("REDIS_PASSWORD"))
    ttl = args.ttl_ms / 1000.0
    say(args.id, "follower", "campaigning with redis-py Lock on " + args.name)
    while True:
        lock = r.lock(args.name, timeout=ttl, sleep=0.1)
        lock.acquire(blocking=True)
        token = lock.local.token.decode()
        say(args.id, "leader", token)
        try:
            while True:
                time.sleep(ttl / 3)
                lock.reacquire()
        except LockError as e:
            say(args.id, "lost", "%s: %s" % (token, e))


if __name__ == "__main__":
    main()
