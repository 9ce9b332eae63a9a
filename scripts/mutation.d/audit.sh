# shellcheck shell=bash disable=SC2034
# The audit's proof (issue 40): what `manage.py audit_verify` checks and the hashes it checks with,
# narrowed by name to ~465 mutants. In: the command's handle (non-zero exit on a broken chain); the
# walk of a chain (`audit_chain_verify`, `_row_problems`, `_words_problem`, the per-account and
# registry entry points, `audit_verify`, `ChainProblem.__str__`); the hashes a row is written and
# verified with (`sha256_hex`, `_canonical`, `payload_hash`, `time_text`, `entry_hash`, `chain_link`);
# the anchor log as verify reads it (`anchors_read`) and the scrub signatures it accepts
# (`scrub_seal_valid`). Left out: the writers (`audit_record`, `_hashed`, the scrub and its signing,
# `_anchor_one`/`audit_anchor_heads`, `anchor_append`: 470 more), the migration's install/uninstall
# and `chain_existing`, and the PostgreSQL-only trigger SQL (`pg_function_sql`, `pg_triggers`,
# `_pg_separated`, `refresh_chain_function`): unreachable on SQLite, covered by
# tests/integration/test_audit_chain_pg.py and test_audit_owner_pg.py. Also out for count:
# `triggers_missing`/`trigger_names` (29) and the summary's wording (`ChainReport.summary`, 9).
# Left out of the tests: test_audit_chain.py's upgrade of rows written before the chain (a migration
# down and up: ~6 s a mutant, 20-30 s on the shared machine, for every mutant of the hashes and the
# walk; it tests `chain_existing`, which is not mutated here), and test_account_template.py (builds
# account templates, says only "intact"); test_audit_mutants.py states verify's promises at each edge.
FILES[audit]="qiwei_site/platform/audit.py qiwei_site/platform/audit_chain.py qiwei_site/platform/audit_anchor.py qiwei_site/platform/management/commands/audit_verify.py"
GLOBS[audit]="qiwei_site.platform.audit.x__words_problem__mutmut_* qiwei_site.platform.audit.x__row_problems__mutmut_* qiwei_site.platform.audit.x_audit_chain_verify__mutmut_* qiwei_site.platform.audit.x_account_audit_verify__mutmut_* qiwei_site.platform.audit.x_registry_audit_verify__mutmut_* qiwei_site.platform.audit.x_audit_verify__mutmut_* qiwei_site.platform.audit.xǁChainProblemǁ__str____mutmut_* qiwei_site.platform.management.commands.audit_verify.xǁCommandǁhandle__mutmut_* qiwei_site.platform.audit_chain.x_sha256_hex__mutmut_* qiwei_site.platform.audit_chain.x__canonical__mutmut_* qiwei_site.platform.audit_chain.x_payload_hash__mutmut_* qiwei_site.platform.audit_chain.x_time_text__mutmut_* qiwei_site.platform.audit_chain.x_entry_hash__mutmut_* qiwei_site.platform.audit_chain.x_chain_link__mutmut_* qiwei_site.platform.audit_anchor.x_anchors_read__mutmut_* qiwei_site.platform.audit_anchor.x_scrub_seal_valid__mutmut_*"
NAMED[audit]=1
TESTS[audit]="tests/qiwei_site/platform/test_audit_anchor.py tests/memory/governance/test_audit_proof.py tests/qiwei_site/platform/test_audit_mutants.py"
TESTS[audit]+=" $(grep -o '^def test_[a-z0-9_]*' tests/qiwei_site/platform/test_audit_chain.py |
  grep -v test_audit_chain_survives_the_upgrade | sed 's|^def |tests/qiwei_site/platform/test_audit_chain.py::|' | tr '\n' ' ')"
ORDER+=(audit)
