#!/usr/bin/env python3
"""What `tools/course check` shows for GPU faults: its check_tasks() run on bin/s04_planted_faults,
whose tests of Tasks 4.1, 4.2 and 4.3 hold planted faults (a refused launch, an illegal address,
a kernel that never returns; tests/04_cuda_matmul/planted/). Each task's line must carry the
fault's explanation. Run by tools/gpu/robustness.sh with COURSE_GPU_TEST_TIMEOUT=5.

    COURSE_GPU_TEST_TIMEOUT=5 tools/gpu/course_check_faults.py build/gpu/bin/s04_planted_faults
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    exe = Path(sys.argv[1]).resolve()
    loader = importlib.machinery.SourceFileLoader("course_cli", str(ROOT / "tools" / "course"))
    spec = importlib.util.spec_from_loader("course_cli", loader)
    course = importlib.util.module_from_spec(spec)
    loader.exec_module(course)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        failing = course.check_tasks("04_cuda_matmul", ["4.1", "4.2", "4.3"], exe, course.task_goals())
    text = printed.getvalue()
    print(text)
    limit = os.environ.get("COURSE_GPU_TEST_TIMEOUT", "300")
    # 4.1: CUDA 13.0 on the H100 refuses the 2048-thread block with "invalid argument" (cudaErrorInvalidValue),
    # where the documentation names "invalid configuration argument": either is the refused launch.
    refused = "invalid argument" if "Task 4.1's code: invalid argument" in text else "invalid configuration argument"
    want = {"4.1": f"GPU fault in Task 4.1's code: {refused}",
            "4.2": "GPU fault in Task 4.2's code: an illegal memory access was encountered",
            "4.3": f"GPU fault in Task 4.3's code: the test did not finish within {limit} s"}
    missing = [t for t, line in want.items() if line not in text]
    print("tools/course check shows:", "all three faults explained" if not missing else f"NOT the faults of {missing}")
    return 1 if missing or failing != ["4.1", "4.2", "4.3"] else 0


if __name__ == "__main__":
    sys.exit(main())
