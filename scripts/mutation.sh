#!/usr/bin/env bash
# Mutation testing of the invariant modules with mutmut (issue 25; settings: [tool.mutmut] in pyproject.toml).
# Usage:
#   scripts/mutation.sh                 every module below, one after the other (long: hours on a busy 2-core machine)
#   scripts/mutation.sh decisions items only these modules
# Modules: decisions items grounding autosend masking governance builder recall, then those defined in
# scripts/mutation.d/*.sh (one file per module: FILES, GLOBS, TESTS, NAMED and ORDER+=(module)).
# Environment: MUTATION_JOBS (mutmut's --max-children, default 2), MUTATION_FRESH=1 (forget earlier results:
# without it a run resumes where the last one stopped, and re-runs only mutants of changed code),
# MUTATION_SURVIVORS=1 (run only the last run's survivors again, e.g. after adding tests to kill them).
#
# Each module runs in its own copy of the tree, var/mutation/<module>/tree/ (ignored by git, ruff and mypy;
# the checkout itself is never mutated, so it is safe while others edit or test it), with
# `only_mutate` and the test selection narrowed to that module and the test files that cover it.
# mutmut then runs each mutant against only the tests that reach the mutated function. Nice'd.
# The summary (killed / survived / timeouts / score) is printed and kept in var/mutation/<module>/summary.txt;
# the surviving mutants are listed with their diffs in var/mutation/<module>/survivors.txt.
set -euo pipefail
# All in a function, read whole before it runs: editing this file during a long run cannot derail it.
main() {
  cd "$(dirname "$0")/.."
  root=$(pwd)
  set -f  # the mutant globs are mutmut's, not the shell's
  scripts/bootstrap.sh dev

  # module -> the files mutated, the mutants tried (mutmut name globs), the tests that cover them.
  # Left out: the 500-step state machine of test_decisions_property.py (about 40 s, for every mutant
  # of decisions it reaches); its single-step table test stays.
  declare -A FILES GLOBS TESTS NAMED
  FILES[decisions]="memory/decisions.py"
  GLOBS[decisions]="memory.decisions.*"
  TESTS[decisions]="tests/memory/test_decisions.py tests/memory/test_decisions_property.py::test_sayings_are_read_as_the_profile_value tests/memory/test_decisions_review.py tests/memory/test_decisions_mutants.py tests/memory/test_items.py tests/memory/test_profile.py"
  FILES[items]="memory/items.py"
  GLOBS[items]="memory.items.*"
  TESTS[items]="tests/memory/test_items.py tests/memory/test_items_mutants.py tests/memory/test_decisions.py tests/memory/test_decisions_review.py tests/memory/test_profile.py tests/memory/governance/test_services.py tests/memory/capture/test_capture_queries.py"
  FILES[grounding]="memory/capture/grounding.py qiwei_site/reading/grounding.py"
  GLOBS[grounding]="memory.capture.grounding.* qiwei_site.reading.grounding.*"
  TESTS[grounding]="tests/qiwei_site/reading/test_grounding.py tests/qiwei_site/reading/test_grounding_mutants.py tests/memory/capture/test_guarded_grounding.py tests/memory/capture/test_grounding_mutants.py tests/sessions_epoch/test_hostile_model.py tests/sessions_epoch/test_hypotheses.py tests/memory/test_decisions_review.py"
  FILES[autosend]="conversations/drafts.py"
  GLOBS[autosend]="conversations.drafts.x_draft_auto_send_blockers__mutmut_*"
  NAMED[autosend]=1
  TESTS[autosend]="tests/conversations/test_drafts.py tests/conversations/test_drafts_mutants.py"
  FILES[masking]="qiwei_site/reading/masking.py qiwei_site/reading/safety/spans.py"
  GLOBS[masking]="qiwei_site.reading.masking.* qiwei_site.reading.safety.spans.*"
  TESTS[masking]="tests/qiwei_site/reading/test_masking.py tests/qiwei_site/reading/test_safety_sensitive.py tests/qiwei_site/reading/test_credential_shapes.py tests/qiwei_site/reading/safety"
  FILES[governance]="memory/governance/services.py"
  GLOBS[governance]="memory.governance.services.*"
  TESTS[governance]="tests/memory/governance/test_services.py tests/memory/governance/test_audit_trail.py tests/memory/governance/test_expiry_task.py tests/memory/governance/test_api.py"
  # The context builder (issue 40): the functions that hold its promises only. The whole of layout.py and
  # build.py is 1,462 mutants, most of them in the contract's wording, the knowledge split, the business
  # state's lines, the trace and the answer cache; this is the fitting itself (~220): the per-section
  # budgets and the overall limit (`_Layout`, `_cut`, `_joined_length`, `AgentContextBuilder._budgets`),
  # the latest customer message always kept (`_latest_block`, `_Layout._shorten_latest_to`), the section
  # order (`_Layout.ordered`, `numbered`) and the quoted lists that give up their oldest lines first
  # (`_Quoted`). Left out for time: the instructions' fit by knowledge priority (`_Instructions.fit`,
  # 130) and the build steps around the layout (`_gather`, `_assemble`, 166). Left out of the tests:
  # the property test (test_builder_property.py), which reaches every one of these mutants and cost
  # 30-40 s a mutant on the shared 2-core machine (issue 40's run); the unit tests state the same
  # promises at their edges.
  FILES[builder]="memory/context/builder/layout.py memory/context/builder/build.py"
  GLOBS[builder]="memory.context.builder.layout.x__cut__mutmut_* memory.context.builder.layout.x__joined_length__mutmut_* memory.context.builder.layout.x_numbered__mutmut_* memory.context.builder.layout.x__latest_block__mutmut_* memory.context.builder.layout.xǁ_Quotedǁ* memory.context.builder.layout.xǁ_Layoutǁ* memory.context.builder.build.xǁAgentContextBuilderǁ_budgets__mutmut_*"
  NAMED[builder]=1
  TESTS[builder]="tests/memory/context/test_builder.py tests/memory/context/test_builder_mutants.py"
  # Recall over a customer's history: the window, the limits, the order of what is recalled, and the
  # stored features it ranks by (the whole file, 316 mutants). The builder's property test is left out:
  # it reaches only recall_for's mutants, at ~15 s each on a busy machine; test_recall_mutants.py states
  # the window's edges instead.
  FILES[recall]="memory/context/recall.py"
  GLOBS[recall]="memory.context.recall.*"
  TESTS[recall]="tests/memory/context/test_recall.py tests/memory/context/test_recall_22.py tests/memory/context/test_recall_fallback.py tests/memory/context/test_recall_features.py tests/memory/context/test_recall_numbers.py tests/memory/context/test_recall_decode_cache.py tests/memory/context/test_recall_mutants.py"
  ORDER=(decisions items grounding autosend masking governance builder recall)
  # Modules added since (issue 40): one file each in scripts/mutation.d/, setting FILES, GLOBS, TESTS
  # (and NAMED) for its module and appending it to ORDER, so each can be tuned without touching this one.
  shopt -s nullglob
  set +f
  definitions=("$root"/scripts/mutation.d/*.sh)
  set -f
  for definition in "${definitions[@]}"; do
    # shellcheck source=/dev/null
    source "$definition"
  done

  modules=("$@")
  [ ${#modules[@]} -gt 0 ] || modules=("${ORDER[@]}")
  for module in "${modules[@]}"; do
    if [ -z "${FILES[$module]:-}" ]; then
      echo "未知模块 (unknown module): $module — one of: ${ORDER[*]}" >&2
      exit 2
    fi
  done

  jobs=${MUTATION_JOBS:-2}
  for module in "${modules[@]}"; do
    work="$root/var/mutation/$module"
    [ "${MUTATION_FRESH:-0}" = 1 ] && rm -rf "$work"
    tree="$work/tree"
    mkdir -p "$tree"
    # A copy of the tree as it is now (mtimes kept, so mutmut's cache knows what changed).
    rsync -a --delete --exclude mutants/ --exclude '__pycache__/' \
      memory conversations qiwei_site knowledge sessions_epoch knowledge_base templates tests manage.py pyproject.toml \
      "$tree/"
    # Existing test files only (a module's *_mutants.py may not exist yet).
    tests=()
    for path in ${TESTS[$module]}; do
      [ -e "${path%%::*}" ] && tests+=("$path")
    done
    # mutmut forks one pytest session per mutant: each gets its own test database, a copy of one
    # migrated once (by the first session, before any fork), instead of migrating anew and sharing
    # one file with the other children (pytest-django would destroy it under them).
    cat >"$tree/mutation_plugin.py" <<'PLUGIN'
"""Written by scripts/mutation.sh (loaded with -p): a test database per pytest session, copied from a template."""

import os
import shutil
import sqlite3
from pathlib import Path

import pytest


def _paths() -> tuple[Path, Path]:
    from django.conf import settings

    base = Path(settings.QIWEI_DATA_DIR)
    return base / "mutation-template.sqlite3", base / f"mutation-{os.getpid()}.sqlite3"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Its own temporary directory too: concurrent sessions would prune each other's numbered ones.
    config.option.basetemp = str(_paths()[1].with_suffix(".tmp"))


def pytest_unconfigure(config: pytest.Config) -> None:
    _template, mine = _paths()
    shutil.rmtree(mine.with_suffix(".tmp"), ignore_errors=True)
    for path in (mine, mine.with_name(mine.name + "-wal"), mine.with_name(mine.name + "-shm")):
        path.unlink(missing_ok=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    from django.db import connections

    # mutmut forks each mutant's session from a process that already ran the tests: a memoised
    # answer (the reader's lru_caches: find_sensitive's, for one) would be the unmutated code's,
    # and the mutant would survive without running. Every cache starts empty.
    import functools
    import gc

    # Unfrozen first: mutmut's fork server and tests/conftest.py call gc.freeze(), and the walk below
    # does not see frozen objects (the safety module's first run: 128 of 144 credentials mutants
    # "survived" in 0.2 s on the cached answers of the unmutated code).
    gc.unfreeze()
    for obj in gc.get_objects():
        try:
            if isinstance(obj, functools._lru_cache_wrapper):
                obj.cache_clear()
        except ReferenceError:  # a weak proxy whose object is gone
            continue

    template, mine = _paths()
    if template.exists():
        shutil.copyfile(template, mine)
    connections.settings["default"].setdefault("TEST", {})["NAME"] = str(mine)


@pytest.fixture(scope="session", autouse=True)
def _mutation_template(django_db_setup: None) -> None:
    template, mine = _paths()
    if not template.exists() and mine.exists():
        # SQLite's backup, not a file copy: the migrated pages are still in the write-ahead log.
        source, target = sqlite3.connect(mine), sqlite3.connect(template)
        with source, target:
            source.backup(target)
        source.close()
        target.close()
PLUGIN
    # The copy's [tool.mutmut]: the base section with this module's files and tests.
    .venv/bin/python - "$tree/pyproject.toml" "${FILES[$module]}" "${tests[@]}" <<'PY'
import json
import re
import sys
import tomllib
from pathlib import Path

path, files, tests = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
text = path.read_text("utf-8")
section = dict(tomllib.loads(text)["tool"]["mutmut"])
section["only_mutate"] = files
section["pytest_add_cli_args_test_selection"] = tests
section["also_copy"] = [*section.get("also_copy", []), "mutation_plugin.py"]
section["pytest_add_cli_args"] = [*section.get("pytest_add_cli_args", []), "-p", "mutation_plugin", "--reuse-db"]
lines = ["[tool.mutmut]"] + [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in section.items()]
text = re.sub(r"^\[tool\.mutmut\]\n(?:(?!^\[).*\n)*", "\n".join(lines) + "\n\n", text, flags=re.M)
path.write_text(text, "utf-8")
PY
    echo "== $module: ${FILES[$module]} (tests: ${tests[*]})"
    started=$(date +%s)
    # Only part of a file (the auto-send gate) is tried by name, which re-runs those mutants each time;
    # a whole file runs unnamed, so an interrupted run resumes and only changed functions run again.
    names=()
    [ -n "${NAMED[$module]:-}" ] && names=(${GLOBS[$module]})
    if [ "${MUTATION_SURVIVORS:-0}" = 1 ] && [ -d "$tree/mutants" ]; then
      # Only the last run's survivors, again (after tests were added to kill them).
      mapfile -t names < <(cd "$tree" && "$root/.venv/bin/mutmut" results 2>/dev/null |
        awk -F': ' '$2 == "survived" || $2 == "no tests" {gsub(/^ +/, "", $1); print $1}')
      [ ${#names[@]} -gt 0 ] || { echo "$module: no survivors to run again"; continue; }
    fi
    (cd "$tree" && nice -n 10 "$root/.venv/bin/mutmut" run --max-children "$jobs" "${names[@]}") \
      >"$work/run.log" 2>&1 || { tail -40 "$work/run.log"; echo "mutmut failed on $module (log: $work/run.log)" >&2; exit 1; }
    elapsed=$(($(date +%s) - started))
    (cd "$tree" && "$root/.venv/bin/mutmut" results --all true) >"$work/results.log" 2>&1
    .venv/bin/python - "$module" "$elapsed" "$work" ${GLOBS[$module]} <<'PY'
import collections
import fnmatch
import re
import subprocess
import sys
from pathlib import Path

module, elapsed, work, globs = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]
statuses: dict[str, str] = {}
for line in (work / "results.log").read_text("utf-8").splitlines():
    match = re.match(r"^\s+(\S+): (.+)$", line)
    if match and any(fnmatch.fnmatch(match[1], g) for g in globs):
        statuses[match[1]] = match[2].strip()
counts = collections.Counter(statuses.values())
killed = counts["killed"] + counts["caught by type check"]
# A mutant no selected test reaches ("no tests") is a survivor too; only unchecked ones are left out.
tried = len(statuses) - counts["not checked"] - counts["skipped"]
score = 100.0 * (killed + counts["timeout"]) / tried if tried else 0.0
other = {k: v for k, v in counts.items() if k not in ("killed", "caught by type check", "survived", "timeout", "no tests")}
summary = (
    f"{module}: {len(statuses)} mutants, killed {killed}, survived {counts['survived']}, "
    f"timeout {counts['timeout']}, no tests {counts['no tests']}"
    + "".join(f", {k} {v}" for k, v in sorted(other.items()))
    + f"; score {score:.1f}% ((killed + timeout) / all checked); {elapsed} s"
)
print(summary)
(work / "summary.txt").write_text(summary + "\n", "utf-8")
survivors = sorted(name for name, status in statuses.items() if status in ("survived", "no tests"))
with (work / "survivors.txt").open("w", encoding="utf-8") as out:
    for name in survivors:
        shown = subprocess.run(
            [sys.executable, "-m", "mutmut", "show", name], cwd=work / "tree", capture_output=True, text=True, check=False
        )
        out.write(shown.stdout + "\n")
print(f"survivors: {work / 'survivors.txt'} ({len(survivors)})")
PY
  done
}

main "$@"
