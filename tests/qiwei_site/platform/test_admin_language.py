"""The admin speaks Chinese whatever language the browser asks for."""

from __future__ import annotations


def test_admin_changelist_is_chinese_for_an_english_browser(admin_client):
    # Given a supervisor whose browser prefers English
    # When they open the memory list
    page = admin_client.get("/admin/memory/memoryitem/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()
    # Then Django's own admin text is Chinese too
    assert "Select" not in page and "to change" not in page
    assert "选择" in page and "当前企微账号" in page
