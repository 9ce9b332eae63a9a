# shellcheck shell=bash
# The knowledge index (issue 40), narrowed by name to the functions that hold its promises (446 of the
# two files' 592 mutants): what is indexed (`knowledge.services`: `parse_sections`, `_markdown_files`,
# `_inside`, `knowledge_index`: regular Markdown inside the root only, unchanged files left alone,
# removed ones deleted), what is retrieved (`knowledge.context`: `_safe_path`, `_section_text`,
# `_expand`: `@context` lines resolved from the index only, never outside the root, loops and depth
# cut) and the limit (`_truncate`, `project_context`). Left out for size: `slugify_heading` (19, the
# anchors' spelling), `_section_in` / `_without_sections` (22, a section brought in twice listed
# once), the reports' `as_dict` / `problems`, and the instructions cached per index version
# (`knowledge_version*`, `project_context_cached`, `_copied`, the cache's clear and flush; covered by
# test_knowledge_cache.py, kept below for the functions it reaches). No test here is slow.
FILES[knowledge]="knowledge/services.py knowledge/context.py"
GLOBS[knowledge]="knowledge.services.x_parse_sections__mutmut_* knowledge.services.x__markdown_files__mutmut_* knowledge.services.x__inside__mutmut_* knowledge.services.x_knowledge_index__mutmut_* knowledge.context.x__safe_path__mutmut_* knowledge.context.x__section_text__mutmut_* knowledge.context.x__expand__mutmut_* knowledge.context.x__truncate__mutmut_* knowledge.context.x_project_context__mutmut_*"
NAMED[knowledge]=1
TESTS[knowledge]="tests/knowledge/test_knowledge.py tests/knowledge/test_knowledge_mutants.py tests/knowledge/test_knowledge_cache.py tests/knowledge/test_knowledge_admin.py"
ORDER+=(knowledge)
