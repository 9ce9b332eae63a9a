"""The demo is entirely Chinese: every message, name, task, alert, recommendation and hypothesis a
supervisor or agent reads."""

from __future__ import annotations

import re

import pytest

from qiwei_site.operations.demo_data import DEMO_ACCOUNT_NAME, DEMO_CUSTOMERS

CJK = re.compile(r"[\u4e00-\u9fff]")
# Three Latin words in a row is an English sentence; 2号线 or 8000 RMB-style tokens alone are not.
ENGLISH_RUN = re.compile(r"[A-Za-z]+(?:[\s,.'!?-]+[A-Za-z]+){2,}")


def readable_texts() -> list[tuple[str, str]]:
    texts = [("account", DEMO_ACCOUNT_NAME)]
    for spec in DEMO_CUSTOMERS:
        cid = spec["conversation_id"]
        texts.append((f"{cid} name", spec["display_name"]))
        for index, (_direction, sender, text) in enumerate(spec["messages"]):
            texts += [(f"{cid} message {index} sender", sender), (f"{cid} message {index}", text)]
        texts += [(f"{cid} task", title) for title in spec["tasks"]]
        texts += [(f"{cid} alert", text) for _level, text in spec["alerts"]]
        texts += [(f"{cid} recommendation", text) for text in spec.get("recommendations", [])]
        texts += [(f"{cid} hypothesis", entry["text"]) for entry in spec.get("hypotheses", [])]
    return texts


@pytest.mark.parametrize(("where", "text"), readable_texts())
def test_demo_text_is_chinese(where, text):
    # every text a person reads has Chinese in it and no English sentence
    assert CJK.search(text), where
    assert not ENGLISH_RUN.search(text), (where, text)


def test_demo_english_check_catches_an_english_sentence():
    # the check itself: the old 张先生 line is caught, a Chinese line with a line number is not
    assert ENGLISH_RUN.search("Hi, I'm relocating to Shanghai next month for work.")
    assert not ENGLISH_RUN.search("我更喜欢2号线附近的，预算8000左右")


def test_demo_hypotheses_rest_on_the_customers_own_messages():
    for spec in DEMO_CUSTOMERS:
        for entry in spec.get("hypotheses", []):
            cited = [spec["messages"][index] for index in entry["messages"]]
            assert cited and all(direction == "inbound" for direction, _sender, _text in cited), entry["key"]
            assert 0 < entry["confidence"] <= 0.6
