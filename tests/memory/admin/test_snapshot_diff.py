"""What changed between two snapshot versions, item by item (memory.admin.selectors.snapshot_diff):
added, edited, retyped and removed items by their masked text with why each left, and an item
forgotten in between named by the audit's record since its text is gone from every version."""

from __future__ import annotations

from memory.admin.selectors import snapshot_diff, snapshot_left_out, snapshot_lines
from memory.governance.services import memory_item_add, memory_item_edit, memory_item_forget, memory_item_reject
from memory.models import MemorySnapshot, MemoryType
from memory.snapshots import snapshot_current


def _add(customer, staff_user, content, type=MemoryType.FACT):
    return memory_item_add(customer=customer, content=content, type=type, actor=staff_user, reason="电话确认")


def test_snapshot_lines_pair_each_bullet_with_its_item_and_mask_numbers(customer, staff_user):
    # given two items, one carrying a phone number
    budget = _add(customer, staff_user, "预算：4500左右")
    phone = _add(customer, staff_user, "联系电话13812345678")
    # when the latest version is read as lines
    lines = snapshot_lines(snapshot_current(customer))
    # then each line is its item, under its section, with the number masked
    assert {line.item_id for line in lines} == {budget.pk, phone.pk}
    assert {line.section for line in lines} == {"已确认事实"}
    assert any(line.text.startswith("联系电话138") and "13812345678" not in line.text for line in lines)


def test_snapshot_diff_names_added_edited_and_rejected_items(customer, staff_user):
    # given a version with a budget, a floor constraint and a wrong preference
    budget = _add(customer, staff_user, "预算：4500左右")
    _add(customer, staff_user, "不考虑：顶楼", MemoryType.CONSTRAINT)
    wrong = _add(customer, staff_user, "喜欢：一楼", MemoryType.PREFERENCE)
    before = snapshot_current(customer)
    # when the budget is edited, the preference rejected and a move-in date added
    memory_item_edit(item=budget, content="预算：5000以内", actor=staff_user, reason="客户改口")
    memory_item_reject(item=wrong, actor=staff_user, reason="客户说不要一楼")
    added = _add(customer, staff_user, "入住：下月初", MemoryType.EVENT)
    diff = snapshot_diff(snapshot=snapshot_current(customer), against=before)
    # then each change is an item by its text and what changed
    changes = {(c.kind, c.item_id): c for c in diff.changes}
    assert changes[("edited", budget.pk)].old_text == "预算：4500左右"
    assert changes[("edited", budget.pk)].text == "预算：5000以内"
    assert changes[("removed", wrong.pk)].text == "喜欢：一楼" and changes[("removed", wrong.pk)].why == "已拒绝"
    assert changes[("added", added.pk)].section == "重要事件"
    assert diff.unchanged == 1 and not diff.forgotten and not diff.identical
    assert diff.summary == "新增 1 条、移出 1 条、内容修改 1 条；未变 1 条。"


def test_snapshot_diff_after_forget_names_the_forget_not_the_text(customer, staff_user):
    # given two items, then one forgotten (its line leaves every version)
    _add(customer, staff_user, "预算：4500左右")
    secret = _add(customer, staff_user, "家里车位编号 8391")
    before = snapshot_current(customer)
    memory_item_forget(item=secret, actor=staff_user, reason="客户要求删掉这条")
    after = snapshot_current(customer)
    before.refresh_from_db()  # forget took the line out of the older version too
    # when the supervisor compares the forget's version with the one before
    diff = snapshot_diff(snapshot=after, against=before)
    # then the two now read the same, and the diff says an item was forgotten, by whom and why
    assert after.version == before.version + 1 and diff.identical and diff.changes == []
    assert [(n.item_id, n.type_label, n.reason) for n in diff.forgotten] == [(secret.pk, "事实", "客户要求删掉这条")]
    assert diff.summary == "遗忘 1 条（内容已删除）；未变 1 条。"
    # and the forgotten words are nowhere in what the page shows
    shown = " ".join([c.text for c in diff.changes] + [line.text for line in snapshot_lines(before)])
    assert "8391" not in shown


def test_snapshot_diff_of_versions_with_no_change_between_says_so(customer, staff_user):
    # given one item and its version, compared with itself
    _add(customer, staff_user, "预算：4500左右")
    snapshot = snapshot_current(customer)
    # when compared with itself
    diff = snapshot_diff(snapshot=snapshot, against=snapshot)
    # then nothing changed
    assert diff.identical and diff.changes == [] and diff.summary == "两个版本内容相同。"


def test_snapshot_left_out_lists_items_by_text(customer, staff_user):
    # given a version that left an item out for the core limit
    _add(customer, staff_user, "预算：4500左右")
    long = _add(customer, staff_user, "希望小区有大型超市和健身房，步行十分钟内")
    snapshot = snapshot_current(customer)
    MemorySnapshot.objects.filter(pk=snapshot.pk).update(left_out_ids=[long.pk])
    snapshot.refresh_from_db()
    # when the version's left-out items are read
    left_out = snapshot_left_out(snapshot)
    # then they are named by their type and text, not a bare id
    assert [(line.item_id, line.section, line.text) for line in left_out] == [
        (long.pk, "事实", "希望小区有大型超市和健身房，步行十分钟内")
    ]
