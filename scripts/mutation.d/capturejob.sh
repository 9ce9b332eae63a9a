# shellcheck shell=bash disable=SC2034  # sourced by scripts/mutation.sh inside main(), which reads these arrays
# The capture job (issue 40): memory/capture/jobs.py holds 676 mutants, and memory/sql.py's two
# statements of the job 64 more (`capture_job_claim`, `capture_job_finish`, by name; the SQL text is a
# module constant built once at import and not mutated per call). The run is narrowed by name to the
# functions that hold the job's promises (563):
# - one run wins a claim, and the job is done only by the run that still holds it: `memory.sql`'s
#   `capture_job_claim` and `capture_job_finish`, `_claim`, `_finish`, `_finish_query`, `capture_job_run`;
# - a job whose claim was lost writes nothing: `_run_message`, `_run_payload`, `_run_readings`;
# - a failed job is retried after a doubling backoff and fails for good after its attempts, audited
#   and alerted: `_backoff`, `_record_failure`;
# - a stuck running job is swept back, due jobs are sent again: `capture_sweep`;
# - a draft's hypotheses are stored with their confidence capped, and evidence that is gone is not
#   cited: `_hypotheses_put`, `_inbound_evidence`.
# Left out for time: the enqueue side (`capture_job_enqueue`, `readings_job_enqueue`,
# `enqueue_after_commit`, `_send`: 76) and a draft's proposals (`_profile_proposals_put`, 85); both
# are stated in test_capture_job_mutants.py all the same.
# Left out of the tests: test_contract_families.py (75 extraction families, each through a capture
# job: 13 s of the 19 s every claim, finish and run mutant costs on the shared 2-core machine; it tests
# what extraction reads, not the job), the hypothesis property test of test_sql.py
# (test_sql_window_and_job_equal_their_twins_for_any_conversation, 40 examples; its two single-case
# capture tests stay), the real Celery worker and PostgreSQL tests (tests/integration/, the branched
# accounts of test_tenancy_connections.py) and the threaded ingest races of test_ingest_races.py.
FILES[capturejob]="memory/capture/jobs.py memory/sql.py"
GLOBS[capturejob]="memory.sql.x_capture_job_claim__mutmut_* memory.sql.x_capture_job_finish__mutmut_* memory.capture.jobs.x__claim__mutmut_* memory.capture.jobs.x__finish__mutmut_* memory.capture.jobs.x__finish_query__mutmut_* memory.capture.jobs.x_capture_job_run__mutmut_* memory.capture.jobs.x__run_message__mutmut_* memory.capture.jobs.x__run_payload__mutmut_* memory.capture.jobs.x__run_readings__mutmut_* memory.capture.jobs.x__backoff__mutmut_* memory.capture.jobs.x__record_failure__mutmut_* memory.capture.jobs.x_capture_sweep__mutmut_* memory.capture.jobs.x__hypotheses_put__mutmut_* memory.capture.jobs.x__inbound_evidence__mutmut_*"
NAMED[capturejob]=1
TESTS[capturejob]="tests/memory/capture/test_jobs.py tests/memory/capture/test_capture_queries.py tests/memory/capture/test_stored_readings.py tests/memory/test_sql.py::test_sql_capture_job_claim_returns_what_its_orm_twin_reads tests/memory/test_sql.py::test_sql_capture_claim_and_finish_equal_their_orm_twins tests/sessions_epoch/test_hypotheses.py tests/wecom/test_sync_invariants.py tests/memory/context/test_providers.py tests/memory/capture/test_capture_job_mutants.py"
ORDER+=(capturejob)
