"""Randomized isolation: thousands of random ingest, governance and read operations across three
accounts that share conversation ids; no row is ever visible outside its account."""

from __future__ import annotations

import json
import random
import re

import pytest

from conversations.models import Message
from memory.models import MemoryItem, MemorySnapshot
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.conftest import client_for
from tests.factories import StaffUserFactory

ACCOUNTS = ("north", "south", "east")
CONVERSATIONS = ("wm_shared_1", "wm_shared_2", "wm_shared_3")
MARK = re.compile(r"〔(north|south|east)〕")
PHRASES = (
    "我更喜欢地铁附近的房子",
    "不考虑顶楼",
    "我预算{n}元，想要两居室",
    "叫我{name}就行",
    "最好是南北通透的",
    "不要一楼，比较潮",
    "周六上午可以看房吗",
    "I prefer a quiet neighbourhood near Line {n}",
)
NAMES = ("老王", "小李", "陈老师", "Mike")


def marked(account_id: str, rng: random.Random) -> str:
    phrase = rng.choice(PHRASES).format(n=rng.randint(2, 9) * 1000, name=rng.choice(NAMES))
    return f"{phrase}〔{account_id}〕"


def foreign_marks(payload: object, account_id: str) -> set[str]:
    return {m for m in MARK.findall(json.dumps(payload, ensure_ascii=False)) if m != account_id}


@pytest.mark.long
@pytest.mark.django_db(transaction=True)
def test_random_operations_never_leak_rows_across_accounts():
    # Given three accounts sharing conversation ids and one supervisor with access to all
    rng = random.Random(20261129)
    supervisor = StaffUserFactory()
    for account_id in ACCOUNTS:
        membership_grant(user=supervisor, account=account_create(account_id=account_id, name=f"门店{account_id}"))
    api = client_for(supervisor)
    item_ids: dict[str, list[int]] = {a: [] for a in ACCOUNTS}
    counter = 0
    # When thousands of random operations run against them
    for _ in range(2000):
        account_id, cid = rng.choice(ACCOUNTS), rng.choice(CONVERSATIONS)
        base = f"/api/accounts/{account_id}/conversations/{cid}"
        op = rng.random()
        if op < 0.35:
            counter += 1
            body = {
                "external_id": f"m{counter}",
                "direction": rng.choice(["inbound", "inbound", "outbound"]),
                "text": marked(account_id, rng),
                "sender": "客户",
            }
            response = api.post(f"{base}/messages/", body, format="json")
            assert response.status_code == 201, response.content
        elif op < 0.45:
            response = api.post(
                f"{base}/memory/",
                {"content": marked(account_id, rng), "type": "fact", "reason": "随机添加"},
                format="json",
            )
            # A conversation this account has not seen yet is unknown here, whatever the others hold
            assert response.status_code in (201, 404), response.content
            if response.status_code == 201:
                item_ids[account_id].append(response.json()["id"])
        elif op < 0.55 and item_ids[account_id]:
            # Governance on an item id that may belong to another conversation or account
            other = rng.choice(ACCOUNTS)
            item_id = rng.choice(item_ids[other]) if item_ids[other] else 1
            action = rng.choice(["reject", "confirm", "expire"])
            response = api.post(f"{base}/memory/{item_id}/{action}/", {"reason": "随机治理"}, format="json")
            assert response.status_code < 500, response.content
        elif op < 0.6 and item_ids[account_id]:
            item_id = item_ids[account_id].pop(rng.randrange(len(item_ids[account_id])))
            response = api.delete(f"{base}/memory/{item_id}/", {"reason": "随机遗忘"}, format="json")
            assert response.status_code < 500, response.content
        else:
            path = rng.choice(["/messages/", "/memory/", "/snapshot/", "/context/", "/"])
            response = api.get(base + path if path != "/" else base + "/")
            assert response.status_code < 500, response.content
            if response.status_code == 200:
                # Then a read never shows another account's rows
                assert not foreign_marks(response.json(), account_id), (account_id, path)
    # And every database holds only its own account's text
    for account_id in ACCOUNTS:
        with use_account(account_id):
            texts = [
                *Message.objects.values_list("text", flat=True),
                *MemoryItem.objects.values_list("content", flat=True),
                *MemorySnapshot.objects.values_list("content", flat=True),
            ]
            assert texts, account_id
            assert not foreign_marks(texts, account_id), account_id
