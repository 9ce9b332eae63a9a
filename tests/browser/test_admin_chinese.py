"""Every admin page in Chinese (issue 24, item 2): a supervisor walks every registered model's list,
its add form and one change form in a real browser, and no English model or field name shows in
the page's labels — titles, breadcrumbs, navigation, column headers, filters, form labels, help,
actions and buttons — beyond a short list of terms that stay as they are."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin

from tests.browser.conftest import login
from tests.qiwei_site.platform.conftest import account_rows, knowledge_root  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Terms a Chinese back office writes as they are: abbreviations, WeCom's and the keyboard's names.
ALLOWED = {"ID", "API", "JSON", "IP", "URL", "WeCom", "LDAP", "Control", "Command", "Mac", "Markdown", "SQLite"}
# The names WeCom's own console gives these fields (in English there), quoted beside the Chinese
# label so a supervisor finds them: 「消息加密密钥（后台的 EncodingAESKey）」.
ALLOWED |= {"Secret", "Token", "EncodingAESKey"}

# Where the page names things (not where it shows the customer's data).
LABELS = ", ".join(
    [
        "#site-name",
        ".breadcrumbs",
        "#content h1",
        "#content h2",
        "#content-main caption",
        "#nav-sidebar caption",
        "#nav-sidebar th",
        "#result_list thead th",
        "#changelist-filter h2",
        "#changelist-filter h3",
        "#changelist-filter summary",
        "select[name=action] option",
        ".object-tools",
        "#content-main label",
        "#content-main .help",
        "#content-main .helptext",
        "#content-main fieldset h2",
        "#content-main .inline-group h2",
        "#content-main .inline-group th",
        ".submit-row",
        "#content-main .paginator",
        "#content-main select[multiple] option",
        ".selector h2",
        ".selector .selector-filter",
    ]
)
WORD = re.compile(r"[A-Za-z][A-Za-z_]+")


HEX = re.compile(r"^[0-9a-f]+$")  # pieces of a token or a hash: data


def _english_labels(page, data_words: set[str]) -> list[str]:
    texts = page.eval_on_selector_all(LABELS, "els => els.map(e => e.innerText || e.textContent || '')")
    words = {w for text in texts for w in WORD.findall(text)} - ALLOWED - data_words
    return sorted(w for w in words if not HEX.match(w))


def test_admin_every_page_names_things_in_chinese(page, browser_context, live_server, staff_user, account_rows):  # noqa: F811
    # given a supervisor with an account holding a row of every registered model, chosen in the switcher
    login(browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("body")).to_contain_text("已切换到账号 acme")
    # The customer's and the staff's own words are data, not labels: their names, ids, files.
    data_words = set(WORD.findall(" ".join([staff_user.username, account_rows.customer.conversation_id, "acme"])))
    # (a failed sign-in's user name, the knowledge file, a delivery's idempotency key 「draft-1」)
    data_words |= {"guess_who", "rules", "md", "wang", "draft"}
    # (a WeCom kf account's id 「wk7a3c01」)
    data_words |= {"wk"}
    found: dict[str, list[str]] = {}
    visited = 0

    def check(path: str) -> None:
        nonlocal visited
        response = page.goto(live_server.url + path)
        assert response is not None and response.status == 200, path
        visited += 1
        english = _english_labels(page, data_words)
        if english:
            found[path] = english

    # when they open the index and every app's page
    check("/admin/")
    for model in sorted(admin.site._registry, key=lambda model: model._meta.label):
        opts = model._meta
        base = f"/admin/{opts.app_label}/{opts.model_name}/"
        # and every list,
        check(base)
        first = page.locator("#result_list tbody tr a[href*='/change/']").first
        change_url = first.get_attribute("href") if first.count() else None
        # its add form where adding is allowed,
        add = page.goto(live_server.url + base + "add/")
        if add is not None and add.status == 200:
            visited += 1
            english = _english_labels(page, data_words)
            if english:
                found[base + "add/"] = english
        # and the change form of its first row
        if change_url:
            check(change_url)

    # then no page names a model or a field in English
    assert visited > 40, visited
    assert found == {}, "\n".join(f"{path}: {words}" for path, words in found.items())
