#!/usr/bin/env python3
"""The verdict on one compute-sanitizer run of a GPU test binary (tools/gpu/sanitize.sh).

A run fails only when the sanitizer found an error, a test failed or the binary
crashed. A run that its time budget stopped is reported as such, with how many
of its tests it covered, and is not a failure: what it covered was clean. A
filter that matches no test of a binary is no run at all (sanitize.sh does not
start one), and a binary that never called CUDA has nothing to check.

    sanitizer_verdict.py --tool memcheck --binary s04_tests_solution --log LOG --out OUT \\
        --rc 0 --timeout 45 --listed 61 --seconds 12

prints one line and exits 1 when the run failed, else 0. LOG is the
sanitizer's --log-file, OUT the binary's own output (GoogleTest's, not --gtest_brief).
"""
import argparse
import re
import sys

# GoogleTest's line at the end of each test: "[       OK ] Suite.Test (12 ms)".
TEST_END = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+) \(\d+ ms\)", re.M)
SUMMARY = re.compile(r"^========= ERROR SUMMARY: (\d+) errors?", re.M)
# Lines of a log that open an error record. A run stopped by its budget never
# prints its ERROR SUMMARY, so the records are counted instead. Continuation
# lines are indented ("=========     at ..."), informational ones are listed apart.
RECORD = re.compile(r"^========= (?! )(.*)$", re.M)
NOT_ERRORS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
              "Warning: Race reported", "Error: Target application terminated before first instrumented API call")
NO_CUDA = "Target application terminated before first instrumented API call"


def count_errors(log):
    """The errors the sanitizer reported: its summary, or the error records when it has none."""
    summaries = SUMMARY.findall(log)
    if summaries:
        return int(summaries[-1])
    return sum(1 for r in RECORD.findall(log) if r.strip() and not r.startswith(NOT_ERRORS))


def tests_ended(out):
    """{"OK": n, "FAILED": n, "SKIPPED": n}: the tests that ran to their end."""
    ended = {"OK": 0, "FAILED": 0, "SKIPPED": 0}
    for status, _ in TEST_END.findall(out):
        ended[status] += 1
    return ended


def verdict(log, out, rc, timeout, listed):
    """(the verdict's text, whether the run failed, the tests that ran to their end)."""
    ended = tests_ended(out)
    covered = sum(ended.values())
    errors = count_errors(log)
    timed_out = rc in (124, 137)
    budget = f"budget of {timeout}s spent: {covered} of {listed} tests covered"
    if errors > 0:
        return f"{errors} ERRORS" + (f" ({budget})" if timed_out else ""), True, ended
    if timed_out:
        return budget + ", no error in them", False, ended
    if ended["FAILED"] > 0:
        return f"{ended['FAILED']} TESTS FAILED (exit {rc})", True, ended
    if rc != 0:
        if NO_CUDA in log:
            return "no CUDA call in these tests: nothing to check", False, ended
        return f"CRASHED (exit {rc}) after {covered} of {listed} tests", True, ended
    return "clean", False, ended


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rc", type=int, required=True)
    ap.add_argument("--timeout", type=int, required=True)
    ap.add_argument("--listed", type=int, required=True)
    ap.add_argument("--seconds", type=int, required=True)
    args = ap.parse_args()

    def read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    text, failed, ended = verdict(read(args.log), read(args.out), args.rc, args.timeout, args.listed)
    print(f"sanitize: {args.tool:<10} {args.binary:<20} {ended['OK']:4} passed {ended['FAILED']:3} failed "
          f"{ended['SKIPPED']:3} skipped of {args.listed:4}  {args.seconds:5}s  {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
