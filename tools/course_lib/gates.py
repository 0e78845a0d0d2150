"""What a failed gate held back, read from ctest's output.

Every test of a stage sets up the fixture gate_s<NN>_<track>, which every test of the next stage requires
(cmake/CourseStage.cmake). When one test of a stage fails, ctest runs none of the later stages' tests and lists
each as "Not Run", after a line naming the failed tests it depended on:

      Start  8: s07/solution/Task7.1
    Failed test dependencies: s06/solution/Stage06_Safety
     8/13 Test  #8: s07/solution/Task7.1 ..........***Not Run   0.00 sec

A test of stage 08 names stage 07's tests (Not Run themselves), so the chain is followed back to the tests
that really failed: the gate tests. What a learner needs from a long list of "Not Run" is which test to fix
first and how much waits on it; held_back() and gate_lines() give that.
"""
import re
from collections import OrderedDict

DEPENDENCIES = re.compile(r"^Failed test dependencies: (.+)$")
# " 8/13 Test  #8: s07/solution/Task7.1 ....***Not Run   0.00 sec" (or Passed, ***Failed, ***Timeout, ...)
RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?(.+?)\s+[\d.]+ sec\s*$")


def results(output):
    """({test: its result}, {test held back: the failed tests it named}) from ctest's output."""
    status, needs = {}, {}
    pending = None
    for line in output.splitlines():
        m = DEPENDENCIES.match(line)
        if m:
            pending = m.group(1).split()
            continue
        m = RESULT.match(line)
        if m:
            name, result = m.group(1), m.group(2).strip()
            status[name] = result
            if result == "Not Run" and pending is not None:
                needs[name] = pending
            pending = None
    return status, needs


def held_back(output):
    """{gate tests that failed (a tuple): [the tests they held back, in ctest's order]}, gates in the order
    they failed. A test held back by a test that was itself held back counts for the first one's gates."""
    status, needs = results(output)

    def roots(name, seen=()):
        found = []
        for dep in needs.get(name, []):
            if dep in seen:
                continue
            if status.get(dep) == "Not Run" and dep in needs:
                found += roots(dep, seen + (name,))
            else:
                found.append(dep)
        return found

    order = {name: i for i, name in enumerate(status)}
    gates = OrderedDict()
    for name in needs:
        key = tuple(sorted(set(roots(name)), key=lambda r: (order.get(r, len(order)), r)))
        if key:
            gates.setdefault(key, []).append(name)
    return gates


def stages_of(names):
    """'stages 07 to 09' (or 'stage 07') from test names s<NN>/<track>/...; '' when none has that form."""
    numbers = sorted({m.group(1) for m in (re.match(r"s(\d\d)/", n) for n in names) if m})
    if not numbers:
        return ""
    return f"stage {numbers[0]}" if len(numbers) == 1 else f"stages {numbers[0]} to {numbers[-1]}"


def gate_lines(output, build_dir="build/ci"):
    """The lines that tools/course test prints after a failed ctest run: for each gate that failed, its
    test(s), how many later tests it held back, and the command that reruns it alone. [] when no gate held
    anything back."""
    lines = []
    for gate, waiting in held_back(output).items():
        names = ", ".join(gate)
        which = stages_of(waiting)
        verb = "failed" if len(gate) == 1 else "failed together"
        lines.append(f"gate: {names} {verb} and held back {len(waiting)} later test"
                     f"{'' if len(waiting) == 1 else 's'}{f' ({which})' if which else ''} as \"Not Run\"; "
                     "they are not failures of their own: fix this first")
        pattern = "|".join("^" + re.escape(g) + "$" for g in gate)
        lines.append(f"  rerun it alone: ctest --test-dir {build_dir} -R '{pattern}' --output-on-failure")
    return lines
