#!/usr/bin/python3
"""The end of scripts/test.sh: stops what the tests left running, then prints which tests
failed and where each kept its logs, and last the one summary line.

Reads cargo test's output (`--log`): each binary's "Running" line, its "test NAME ...
FAILED" lines and its "test result:" line. A binary that ended without a result line
(killed, aborted) counts as failed. The run directory (`--run`) holds the list of kept
directories (kept.txt: "crate::test path" per line); it is removed when the run passes.
"""

import argparse
import os
import re
import shutil
import signal
import sys
import time

RUNNING = re.compile(r"^\s+Running (?:unittests )?(\S+) \((\S+)\)")
RESULT = re.compile(
    r"^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered out"
)
FAILED = re.compile(r"^test (\S+) \.\.\. FAILED")
# cargo names each target that failed, at once and again at the end: "to rerun pass
# `--test NAME`", and under "error: N targets failed:" a line "`--bench NAME`".
TARGET_FAILED = re.compile(r"`--(?:test|bench|bin|example) ([^`\s]+)`|`--(lib)`")
GRACE = 5.0


def crate_of(binary_path):
    """target/debug/deps/serve_prometheus-0123abcd -> serve_prometheus"""
    name = os.path.basename(binary_path)
    return re.sub(r"-[0-9a-f]{16}$", "", name)


def parse(log):
    """Sums the result lines; lists the failed tests, and the binaries cargo says failed
    that printed no result (killed, aborted; a harness-less bench prints none when it passes)."""
    passed = failed = skipped = 0
    failures = []  # (crate, test or None)
    without_result = []
    failed_targets = set()
    current = None
    # The etcd 3.5 run picks the etcd tests of targets that already ran whole: what its
    # filter leaves out ran, and is no skip.
    rerun = False
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("==> etcd 3.5"):
                rerun = True
            for m in TARGET_FAILED.finditer(line):
                failed_targets.add((m.group(1) or "electop").replace("-", "_"))
            m = RUNNING.match(line)
            if m:
                current = crate_of(m.group(2))
                without_result.append(current)
                continue
            m = FAILED.match(line)
            if m and current:
                failures.append((current, m.group(1)))
                continue
            m = RESULT.match(line)
            if m and current:
                if without_result and without_result[-1] == current:
                    without_result.pop()
                passed += int(m.group(2))
                failed += int(m.group(3))
                skipped += int(m.group(4)) + (0 if rerun else int(m.group(5)))
    for crate in without_result:
        if crate in failed_targets:
            failures.append((crate, None))
            failed += 1
    return passed, failed, skipped, failures


def processes_of_run(run_id):
    """Every live process whose environment carries this run's ELECTOP_TEST_RUN."""
    mark = f"ELECTOP_TEST_RUN={run_id}".encode()
    me = os.getpid()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if mark in env and cmd:
            found.append((int(pid), cmd))
    return found


def stop(pids):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
            time.sleep(0.1)


def kept_dirs(run):
    kept = {}
    try:
        with open(os.path.join(run, "kept.txt")) as f:
            for line in f:
                test, _, path = line.strip().partition(" ")
                kept.setdefault(test, []).append(path)
    except OSError:
        pass
    return kept


def minutes(seconds):
    return f"{seconds // 60}m {seconds % 60:02d}s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--status", type=int, required=True)
    ap.add_argument("--started", type=int, required=True)
    a = ap.parse_args()

    leftovers = processes_of_run(os.path.basename(a.run))
    if leftovers:
        print(f"==> {len(leftovers)} processes the tests started were still running; stopping them:")
        for pid, cmd in leftovers:
            print(f"    {pid} {cmd[:200]}")
        stop([pid for pid, _ in leftovers])

    passed, failed, skipped, failures = parse(a.log)
    ok = a.status == 0 and failed == 0 and not failures and not leftovers
    cargo_alone = not ok and not failures and not leftovers
    kept = kept_dirs(a.run)
    if not ok:
        print("\n==> what failed")
        for crate, test in failures:
            if test is None:
                print(f"FAILED {crate}: the binary ended without a result (see its output)")
                continue
            print(f"FAILED {crate}::{test}")
            for path in kept.get(f"{crate}::{test}", []):
                print(f"    kept: {path}")
        for test, paths in kept.items():
            if "::" not in test:
                for path in paths:
                    print(f"    kept by {test} (made outside a test's thread): {path}")
        if cargo_alone:
            print(f"FAILED cargo test exited {a.status} without naming a failed test (a build error?)")
        if leftovers:
            print(f"FAILED {len(leftovers)} processes left running (listed above)")
        print(f"    all of cargo test's output: {a.log}")
    elif os.path.isdir(a.run):
        shutil.rmtree(a.run, ignore_errors=True)

    wall = minutes(int(time.time()) - a.started)
    verdict = "PASSED" if ok else "FAILED"
    print(f"electop tests {verdict}: {passed} passed, {failed} failed, {skipped} skipped, "
          f"{len(leftovers)} processes left running; wall time {wall}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
