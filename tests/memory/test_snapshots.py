"""The core snapshot never exceeds QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT, whatever is captured (spec §8)."""

from __future__ import annotations

from memory.models import MemoryItem, MemorySnapshot


def test_snapshot_stays_within_core_limit_and_records_left_out_items(ingest, settings):
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = 500
    # Given a chatty customer whose statements yield far more memory than fits
    areas = ["地铁", "学校", "公园", "商场", "医院", "菜市场", "健身房", "写字楼", "江边", "老城区"]
    texts = [f"我比较喜欢{area}附近第{n}号线沿线的房子，最好是南向带阳台的" for n in range(1, 8) for area in areas]
    ingest(*texts)
    # Then every snapshot version fits, and what was left out is recorded
    snapshots = list(MemorySnapshot.objects.all())
    assert snapshots and all(s.char_count <= 500 and len(s.content) <= 500 for s in snapshots)
    latest = MemorySnapshot.objects.order_by("-version").first()
    active = MemoryItem.objects.filter(status="active").count()
    assert len(latest.item_ids) + len(latest.left_out_ids) == active
    assert latest.left_out_ids
