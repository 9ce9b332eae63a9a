# shellcheck shell=bash disable=SC2034
# The account router and the connection switch (issue 40): which database a customer row goes to and
# which connection serves it, narrowed by name to ~410 of tenancy.py's 1,265 and connections/'s 347
# mutants. In: the account id and its alias (`validate_account_id`, `alias_for`, `account_for_alias`,
# `is_account_model`, `current_alias`, `_current_alias_or_none`), `AccountRouter` whole, the selected
# account's transactions (`account_atomic`, `on_account_commit`), registering an account's connection
# (`is_registered`, `register_account_database`, `unregister_account_database`, `_with_connection_policy`),
# handing connections back and keeping SQLite ones per thread (`account_connection_release`,
# `account_connections_release_idle`, `account_connections_close`, `_in_use_here`, `_keep_sqlite`,
# `_sqlite_touched`, `_kept_sqlite`, `_depth_map`, `_close_unregistered`, `_forget_kept_sqlite_after_fork`),
# and in the pool the choice of a connection for an account (`pool_enabled`, `is_pooled_alias`,
# `AccountConnectionPool._take_idle`, `lease_of`). `use_account` and `no_account` are decorated
# (@contextmanager): mutmut 3.8.1 does not mutate them.
# Left out: provisioning, migration and PostgreSQL-only code (`account_database_config`'s URL/schema
# branches, `_ensure_account_schema`, roles, grants, `_drop_account_schema`, `ensure_account_database`,
# fingerprints): unreachable with SQLite accounts or not the switch; tests/integration/
# test_accounts_to_schemas_pg.py, test_audit_owner_pg.py and test_account_template_pg.py cover them.
# The pool's cap, waits and ageing (the rest of connections/__init__.py) serve PostgreSQL only.
# Left out of the tests: test_random_isolation.py (~30 s a mutant: hundreds of random API calls) and
# test_tenancy_connections.py's many-accounts migrate (~5 s, marked long); test_tenancy_mutants.py
# states their promise (no row of one account reaches another's store) at each edge instead.
FILES[tenancy]="qiwei_site/platform/tenancy.py qiwei_site/platform/connections/__init__.py"
GLOBS[tenancy]=""
for name in validate_account_id alias_for account_for_alias is_account_model current_alias _current_alias_or_none \
  account_atomic on_account_commit is_registered register_account_database unregister_account_database \
  _with_connection_policy account_connection_release account_connections_release_idle account_connections_close \
  _in_use_here _keep_sqlite _sqlite_touched _kept_sqlite _depth_map _close_unregistered _forget_kept_sqlite_after_fork; do
  GLOBS[tenancy]+=" qiwei_site.platform.tenancy.x_${name}__mutmut_*"
done
GLOBS[tenancy]+=" qiwei_site.platform.tenancy.xǁAccountRouterǁ*"
GLOBS[tenancy]+=" qiwei_site.platform.connections.x_pool_enabled__mutmut_* qiwei_site.platform.connections.x_is_pooled_alias__mutmut_*"
GLOBS[tenancy]+=" qiwei_site.platform.connections.x_lease_of__mutmut_* qiwei_site.platform.connections.xǁAccountConnectionPoolǁ_take_idle__mutmut_*"
NAMED[tenancy]=1
TESTS[tenancy]="tests/qiwei_site/platform/test_tenancy.py tests/conversations/test_isolation.py tests/qiwei_site/platform/test_tenancy_mutants.py"
TESTS[tenancy]+=" $(grep -o '^def test_[a-z0-9_]*' tests/qiwei_site/platform/test_tenancy_connections.py |
  grep -v test_migrate_accounts_over_many_accounts | sed 's|^def |tests/qiwei_site/platform/test_tenancy_connections.py::|' | tr '\n' ' ')"
ORDER+=(tenancy)
