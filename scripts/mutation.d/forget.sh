# shellcheck shell=bash disable=SC2034  # sourced by scripts/mutation.sh inside main(), which reads these arrays
# Forget, erase and their scrub (issue 40): memory/governance/forgetting.py, erasure.py, scrub.py and
# messages.py hold 1,021 mutants (forgetting() itself, a decorated context manager, is not mutated by
# mutmut: only Forgetting's two helpers are), so the run is narrowed by name to the functions that hold
# the promises (418):
# - no forgotten word left anywhere: the quote rule (`Quotes.*`, `json_strings`), every word kept about
#   an erased customer (`customer_texts`, `_text_fields`, `_models_with_customer`,
#   `historical_models_with_customer`), the column rewrite every scrub goes through (`_scrub_column`,
#   `column_rewrite`);
# - the audit scrub (`audit_scrub`);
# - the cascade to every derived structure: `message_forget` (items cited, trimmed or forgotten, the
#   clause, capture jobs cancelled or stripped: `_cites`, `_payload_cites`, `_draft_jobs_cancel`),
#   `customer_erase` (every row and every history row) and `Forgetting.quote` / `messages_deleted`.
# Left out for time: `reasons_scrub` (108: which columns a forget scrubs; a third of its mutants are the
# `changed +=` count no caller reads, and each survivor ran ~15 s on the shared machine; the first run
# was cut there), the drafts' side of a message forget (`drafts_scrub_for_message`, `_trace_cites`:
# 201, covered by test_message_forget_drafts.py), the stored prompts (`prompt_redact`, `prompts_scrub`,
# `_prompt_quotes`, `_error_detail_scrub`: 146, covered by sessions_epoch/test_prompt_forget.py) and the
# storage purge after commit (WAL, FTS, outbox, pending scrubs: 148, test_no_bytes_left.py and
# test_storage_scrub.py, which need real files and a second connection).
# Left out of the tests: the hypothesis state machine of test_forget_property.py
# (test_forgotten_and_erased_words_are_nowhere_after_any_sequence: ~20 s of call and 10 s of setup on an
# idle machine, for every mutant of the quote rule and the cascade it reaches); its single-case test stays.
# And test_storage_scrub.py: its /readyz check fails in the mutation tree (the fingerprint key's check,
# not a mutant), failing mutmut's clean run; the storage purge it tests is not mutated here.
FILES[forget]="memory/governance/forgetting.py memory/governance/erasure.py memory/governance/scrub.py memory/governance/messages.py"
GLOBS[forget]="memory.governance.forgetting.xǁForgettingǁ* memory.governance.erasure.x_customer_erase__mutmut_* memory.governance.scrub.xǁQuotesǁ* memory.governance.scrub.x_json_strings__mutmut_* memory.governance.scrub.x_customer_texts__mutmut_* memory.governance.scrub.x__text_fields__mutmut_* memory.governance.scrub.x__models_with_customer__mutmut_* memory.governance.scrub.x_historical_models_with_customer__mutmut_* memory.governance.scrub.x_audit_scrub__mutmut_* memory.governance.scrub.x__scrub_column__mutmut_* memory.governance.scrub.x_column_rewrite__mutmut_* memory.governance.messages.x_message_forget__mutmut_* memory.governance.messages.x__cites__mutmut_* memory.governance.messages.x__payload_cites__mutmut_* memory.governance.messages.x__draft_jobs_cancel__mutmut_*"
NAMED[forget]=1
TESTS[forget]="tests/memory/governance/test_message_forget.py tests/memory/governance/test_message_forget_drafts.py tests/memory/governance/test_erasure.py tests/memory/governance/test_services.py tests/memory/governance/test_audit_trail.py tests/memory/governance/test_no_bytes_left.py tests/memory/governance/test_forget_property.py::test_forgetting_a_note_scrubs_a_draft_reply_that_quotes_it tests/memory/governance/test_api.py tests/memory/admin/test_message_forget_admin.py tests/sessions_epoch/test_prompt_forget.py tests/memory/governance/test_forget_mutants.py"
ORDER+=(forget)
