"""A whole turn through the real memory provider: context built by AgentContextBuilder, grounded
profile updates applied by memory capture, an ungrounded one never reaching the profile."""

from __future__ import annotations

from conversations.models import CustomerProfile
from memory.models import MemoryItem
from sessions_epoch.pipeline import draft_generate
from tests.sessions_epoch.test_pipeline import ScriptedClient, _answer


def test_turn_with_real_provider_applies_only_grounded_updates(customer):
    # given a model proposing the budget the customer said and a district only our staff said
    client = ScriptedClient(_answer(requiresHuman=True, profileUpdates={"budget": "4500", "district": "陆家嘴"}))

    # when a draft is generated through the real memory provider (Celery runs eagerly in tests)
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the prompt was assembled by the context builder and holds the latest customer message
    assert "预算４，５００左右，最好离地铁近一点，不考虑顶楼" in client.prompts[0]
    assert "客服身份" in client.prompts[0]
    assert draft.context_trace and "fallback" not in draft.context_trace
    # and memory capture applied the grounded budget, never the ungrounded district
    profile = CustomerProfile.objects.get(customer=customer)
    assert profile.budget == "4500"
    assert profile.district == ""
    assert MemoryItem.objects.filter(customer=customer, key="profile:budget", status="active").exists()
    assert not MemoryItem.objects.filter(customer=customer, key="profile:district").exists()
    assert [item["field"] for item in draft.dropped_updates] == ["district"]
