"""Record the score of `make mutation` in tests/mutation_score.json; exit 1 below 85% killed.

`make mutation` runs mutmut ([tool.mutmut] in pyproject.toml), then this script. It reads
mutmut's verdict on each mutant of every module it mutates (``mutants/helpers/<module>.py.meta``:
each mutant's exit code, named as mutmut names them in ``mutmut.stats``) and writes, per
module, how many were killed, survived, timed out, had no tests, were suspicious (and the
rarer verdicts), its score, and the commit it measured (with whether the working tree held
uncommitted changes). The score is what mutmut's own badge computes: killed and timed-out
mutants over all but the skipped ones; "no tests" counts as survived, and so does every
other verdict, a mutant not yet checked included.

    python scripts/mutation_score.py            # every module mutmut mutates
    python scripts/mutation_score.py records    # helpers/records.py only (make mutation MODULE=records)

A module's entry is replaced only when it is measured; entries of modules that are no longer
mutated are dropped. tests/test_mutation_score.py checks the committed file.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[1]
SCORE_FILE = ROOT / "tests" / "mutation_score.json"
THRESHOLD = 0.85
#: The verdicts recorded, as mutmut names them (and every other one as "other").
VERDICTS = ["killed", "timeout", "survived", "no tests", "suspicious", "segfault", "skipped"]
VERDICTS += ["not checked"]
#: What each module's entry counts (mutmut's verdicts with underscores, and the sum).
COUNTS = [v.replace(" ", "_") for v in VERDICTS] + ["other", "total"]
KILLED = {"killed", "timeout", "caught by type check"}


def mutated_modules() -> list[str]:
    """Every file of helpers/ that [tool.mutmut] mutates (its only_mutate and do_not_mutate)."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        config = tomllib.load(file)["tool"]["mutmut"]
    files = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "helpers").glob("*.py"))]
    return [
        f
        for f in files
        if any(fnmatch.fnmatch(f, p) for p in config["only_mutate"])
        and not any(fnmatch.fnmatch(f, p) for p in config.get("do_not_mutate", []))
    ]


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def counts(module: str) -> dict:
    """The verdicts on the mutants of ``module`` (helpers/x.py), and its score."""
    meta = ROOT / "mutants" / f"{module}.meta"
    if not meta.exists():
        raise SystemExit(f"{module}: no results in {meta.relative_to(ROOT)}; run make mutation")
    exit_codes = json.loads(meta.read_text())["exit_code_by_key"]
    verdicts = Counter(status_by_exit_code[code] for code in exit_codes.values())
    found = {v.replace(" ", "_"): verdicts.pop(v, 0) for v in VERDICTS}
    found["killed"] += verdicts.pop("caught by type check", 0)
    found["other"] = sum(verdicts.values())  # e.g. "check was interrupted by user"
    found["total"] = len(exit_codes)
    found["score"] = score(found)
    return found


def score(found: dict) -> float:
    """Killed and timed out over every mutant but the skipped ones (1.0 for none at all)."""
    tested = found["total"] - found["skipped"]
    return round((found["killed"] + found["timeout"]) / tested, 4) if tested else 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="module names (records, _checks); default: all")
    args = parser.parse_args()
    every = mutated_modules()
    chosen = [f"helpers/{name}.py" for name in args.modules] or every
    unknown = sorted(set(chosen) - set(every))
    if unknown:
        print(f"not mutated by make mutation: {unknown}; mutated: {every}", file=sys.stderr)
        return 2
    measured = {
        "commit": git("rev-parse", "HEAD").strip(),
        "clean": git("status", "--porcelain", "--untracked-files=no") == "",
        "date": time.strftime("%Y-%m-%d"),
    }
    record = json.loads(SCORE_FILE.read_text()) if SCORE_FILE.exists() else {"modules": {}}
    modules = {m: e for m, e in record["modules"].items() if m in every}  # dropped: not mutated
    for module in chosen:
        modules[module] = {**measured, **counts(module)}
    total = {k: sum(e[k] for e in modules.values()) for k in COUNTS}
    total["score"] = score(total)
    record = {
        "threshold": THRESHOLD,
        "rule": "score = (killed + timeout) / (total - skipped); no_tests and the rest count as survived",
        "modules": dict(sorted(modules.items())),
        "total": total,
    }
    SCORE_FILE.write_text(json.dumps(record, indent=2) + "\n")

    low = []
    for module in chosen:
        entry = modules[module]
        mark = "" if entry["score"] >= THRESHOLD else "  BELOW 85%"
        print(
            f"{module:28} {entry['killed'] + entry['timeout']:5} of {entry['total']:5} killed "
            f"({entry['score']:.1%}; {entry['survived']} survived, {entry['no_tests']} no tests, "
            f"{entry['not_checked']} not checked){mark}"
        )
        if mark:
            low.append(module)
    missing = [m for m in every if m not in modules]
    changes = "" if measured["clean"] else ", uncommitted changes"
    print(
        f"all measured modules: {total['score']:.1%} killed of {total['total']} mutants; "
        f"wrote {SCORE_FILE.relative_to(ROOT)} (commit {measured['commit'][:12]}{changes})"
    )
    if missing:
        print(f"not measured yet: {', '.join(missing)}")
    if low or (not args.modules and total["score"] < THRESHOLD):
        where = ", ".join(low) or "in total"
        print(
            f"score below {THRESHOLD:.0%}: {where}; see .venv/bin/mutmut results", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
