#!/usr/bin/python3
"""A service electing its leader with a PostgreSQL advisory lock, as Python services write it
(psycopg2): `block` waits in line with pg_advisory_lock(key); `try` polls
pg_try_advisory_lock(key) every 100 ms. Prints what it believes, one line per change:
`pid N` (its backend pid) first, then `leader`, and `deposed: <why>` when its session is
ended (it learns that only when it next uses its connection: here, every 200 ms).

Usage: advisory.py DSN APP KEY block|try      (KEY: `42`, or `1:2` for the two-key form)
"""
import sys
import time

import psycopg2

dsn, app, key, mode = sys.argv[1:5]
args = tuple(int(k) for k in key.split(":"))
place = ", ".join(["%s"] * len(args))
conn = psycopg2.connect(dsn, application_name=app)
conn.autocommit = True
cur = conn.cursor()
cur.execute("SELECT pg_backend_pid()")
print("pid", cur.fetchone()[0], flush=True)
try:
    if mode == "block":
        cur.execute(f"SELECT pg_advisory_lock({place})", args)
    else:
        while True:
            cur.execute(f"SELECT pg_try_advisory_lock({place})", args)
            if cur.fetchone()[0]:
                break
            time.sleep(0.1)
    print("leader", flush=True)
    while True:
        time.sleep(0.2)
        cur.execute("SELECT 1")
except psycopg2.Error as e:
    print("deposed:", str(e).strip().splitlines()[0], flush=True)
    sys.exit(0)
