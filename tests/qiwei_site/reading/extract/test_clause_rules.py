"""The extractor's clause rules are one ordered table: each rule's example is decided by that rule."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import CLAUSE_RULES, ExtractContext, extract


def test_clause_rules_have_unique_names_and_examples():
    # given the table / then every rule is named once and shows what it reads
    names = [rule.name for rule in CLAUSE_RULES]
    assert len(names) == len(set(names))
    assert all(rule.example.strip() for rule in CLAUSE_RULES)


def test_clause_rules_end_with_the_plain_statement():
    # the last rule decides whatever no rule before it did
    assert CLAUSE_RULES[-1].name == "statement"


@pytest.mark.parametrize("rule", CLAUSE_RULES, ids=[rule.name for rule in CLAUSE_RULES])
def test_clause_rule_example_is_decided_by_its_rule(rule):
    # given the rule's example (after the agent's question it answers, if any)
    context = ExtractContext(previous_outbound=rule.asked) if rule.asked else None
    decided: list[str] = []
    # when it is read
    extract(rule.example, context, decided_by=decided)
    # then this rule decided one of its clauses (or, a rule that passes clauses on, applied to one)
    assert rule.name in decided, decided
