# shellcheck shell=bash
# Model-session epochs (issue 40): sessions_epoch/services.py whole (the rotation decision
# `_rotation_due` on turns and age, opening, closing, rotating, pruning to CLOSED_EPOCHS_KEPT, the turn
# count) and, of pipeline.py, only `_run_client`: the rotation on an invalid session (retried once) or an
# exceeded budget. The rest of pipeline.py (output validation, grounding, auto-send) is other modules'.
# Tests: of test_pipeline.py only its three rotation cases (the two fake-CLI ones spawn a subprocess,
# about 1 s, and stay: the only end-to-end rotations through the real CLI client). Left out: its other
# draft_generate cases and test_hypotheses.py / test_end_to_end.py, which reach every function here
# (each turn opens or reuses an epoch) but state nothing about epochs: with them a mutant cost 5-8 s on
# the shared machine; and test_smoke_mutations.py (each case runs the whole smoke command).
FILES[epochs]="sessions_epoch/services.py sessions_epoch/pipeline.py"
GLOBS[epochs]="sessions_epoch.services.* sessions_epoch.pipeline.x__run_client__mutmut_*"
NAMED[epochs]=1
TESTS[epochs]="tests/sessions_epoch/test_epochs.py tests/sessions_epoch/test_epochs_mutants.py tests/sessions_epoch/test_pipeline.py::test_pipeline_with_claude_code_resumes_then_rotates_on_missing_session tests/sessions_epoch/test_pipeline.py::test_pipeline_with_claude_code_rotates_after_budget_overrun tests/sessions_epoch/test_pipeline.py::test_thirteenth_generation_runs_in_a_new_epoch tests/qiwei_site/platform/test_storage_faults.py::test_unreadable_snapshot_first_turn_still_drafts tests/qiwei_site/platform/test_storage_faults.py::test_unreadable_snapshot_on_rotation_still_drafts"
ORDER+=(epochs)
