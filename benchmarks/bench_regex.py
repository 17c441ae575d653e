"""find()/findAll() on a pathological pattern: RE2 (what the CEL environment uses) against
a backtracking engine (Python's `re`, what it used before).

`"aaa…a!".find("(a+)+$")` doubles in cost with every "a" on a backtracking engine; RE2
is linear. Prints CPU time per evaluation for growing inputs and the ratio, measured in
one run. Python's `re` is only timed up to --max-backtracking "a"s (it takes seconds
beyond that).

    .venv/bin/python benchmarks/bench_regex.py [--max-backtracking 22]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from modelplane.dra import compile_selector, prepare_device

PATTERN = "(a+)+$"


def cpu_seconds(call: Callable[[], object], repeat: int) -> float:
    """Best CPU time of one call over `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-backtracking", type=int, default=22)
    args = parser.parse_args()
    device = prepare_device({"driver": "d.example.com"})
    print(f"{'a':>4} {'RE2 (CEL find)':>16} {'Python re':>12} {'ratio':>10}")
    for n in (10, 15, 18, 20, 22, 25, 30, 1000):
        subject = "a" * n + "!"
        selector = compile_selector(f'"{subject}".find("{PATTERN}") == ""')
        assert selector.matches(device)
        ours = cpu_seconds(lambda s=selector: s.evaluate(device), 20)
        theirs_text, ratio = "-", "-"
        if n <= args.max_backtracking:
            theirs = cpu_seconds(lambda s=subject: re.search(PATTERN, s), 3)
            theirs_text, ratio = f"{theirs * 1e3:.1f} ms", f"{theirs / ours:,.0f}x"
        print(f"{n:>4} {ours * 1e6:>13.1f} µs {theirs_text:>12} {ratio:>10}")


if __name__ == "__main__":
    main()
