# shellcheck shell=bash
# Core-memory snapshots (issue 40): memory/snapshots.py whole (165 mutants: which items are effective,
# the rendering by type within QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT with what is left out recorded, the
# version that increases only when the text changes, by `snapshot_refresh` and by the batched
# `snapshot_write`).
# Tests: those that state what a snapshot holds. Left out: every other memory write's tests
# (test_items.py, test_proposals.py, context/test_builder.py, capture's), which reach these functions
# on each write and cost 10-20 s a mutant on the shared 2-core machine while stating little of the
# snapshot; the property tests (test_decisions_paths_property.py, governance/test_forget_property.py:
# hypothesis runs); the smoke command's mutations (test_smoke_mutations.py) and the browser tests.
FILES[snapshots]="memory/snapshots.py"
GLOBS[snapshots]="memory.snapshots.*"
TESTS[snapshots]="tests/memory/test_snapshots.py tests/memory/test_snapshots_mutants.py tests/memory/test_items_mutants.py tests/memory/governance/test_services.py tests/memory/test_profile.py tests/memory/admin/test_snapshots.py tests/memory/admin/test_snapshot_diff.py tests/sessions_epoch/test_epochs.py"
ORDER+=(snapshots)
