"""Acceptance and relaxed requirements: what a customer lets go of rather than asks for.

"其实一楼也可以考虑", "可以接受老小区", "不介意顶楼", "也不是不能接受一楼" accept an object; "对装修没要求",
"楼层无所谓", "不一定要地铁附近" relax a requirement on it. Neither is a wish (writing "偏好：一楼" would
overstate it), so neither is a candidate; each is a *release*: an item that supersedes an earlier
constraint (or, for a relaxed requirement, the earlier preference) on the same object, written only
where there is one to supersede (`memory.capture.services`), through the one write path, so a
supervisor's decision still wins.
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import (
    ACCEPT_LABEL,
    CJK_RE,
    CONSTRAINT,
    PREFERENCE,
    RELAXED_LABEL,
    Candidate,
)
from qiwei_site.reading.extract.clauses import THIRD_PARTY_RE
from qiwei_site.reading.extract.objects import object_key, objects_for, valid_object
from qiwei_site.reading.extract.preferences import EN_ACCEPT_RE, ZH_ACCEPT_RE
from qiwei_site.reading.guard import object_refusal
from qiwei_site.reading.values import amounts_in

_ACCEPT_ZH = re.compile(ZH_ACCEPT_RE)
_ACCEPT_EN = re.compile(EN_ACCEPT_RE, re.IGNORECASE)
# "对装修没要求", "装修方面没什么讲究", "楼层无所谓", "朝向不挑", "装修不做要求": the object comes first.
_RELAXED_AFTER_ZH = re.compile(
    r"(?:方面|这块|这方面|上面|上)?(?:的话)?(?:都|倒是|倒|其实)?"
    r"(?:(?:没有?|无)(?:什么|啥|太多|特别|特殊|硬性|太大|多大)?的?(?:要求|讲究|限制|偏好|所谓)|不(?:做|作)?要求|不挑|"
    # "三居不用了", "车位就不必了": no longer needed (issue 35 review), like "不需要了"
    r"不讲究|无所谓|随意|不限|不强求|没关系|(?:就|也|都)?(?:不需要|用不着|不用(?=了)|不必(?=了))(?:了)?(?=[的吧啊呀哈了呢哦嘛啦]*$))"
)
# "不一定要地铁附近", "不是非要南向", "不非得带车位": the object comes after. A non-need ("不需要
# 车位", "不用带家具") is one too: the customer does not need it, which rules out nothing that has it.
_RELAXED_BEFORE_ZH = re.compile(
    r"不一定(?:非)?(?:要|得)|不是非(?:要|得)|不非得|不是一定要|不是必须|没必要非(?:要|得)?|不必非(?:要|得)?|"
    r"(?:^|我|我们|也|都|就|暂时|目前)(?:不需要|用不着|无需|不用(?!考虑|担心|客气|着急|急|谢|了|麻烦|管|问|催|等|找|看))"
)
# "I don't need parking", "no need for a balcony": a non-need, not an exclusion.
_RELAXED_EN = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:don't|do\s+not|won't|will\s+not)\s+(?:really\s+)?need\b|\bno\s+need\s+for\b",
    re.IGNORECASE,
)
# "(我)看了几套之后觉得顶楼也能接受": the customer's own view, not someone else's.
_OWN_VIEW_RE = re.compile(r"^.*?(?:我|我们|^|之后|以后|后)(?:现在|其实|也)?(?:觉得|认为|感觉)")
_LEAD_TRIM = re.compile(r"^(?:我们?|咱们|我这边)?(?:对(?:于)?|关于|至于)")
# "一楼我其实也可以", "老小区我现在也能接受了": the object first, then the customer as subject.
_SUBJECT_AFTER_TRIM = re.compile(r"的?(?:我们?|咱们)(?:现在|目前|其实|倒是|真的|这边)*$")


def _release(label: str, obj: str, clause: str) -> Candidate | None:
    if not valid_object(obj) or object_refusal(obj) or amounts_in(obj):
        return None  # "最多到六千也行": an amount accepted is the budget, read as one; no release
    key_obj = object_key(obj)
    if not key_obj:
        return None
    return Candidate(
        type=PREFERENCE,
        key=f"{PREFERENCE}:{key_obj}",
        content=f"{label}：{obj}"
        if CJK_RE.search(clause)
        else f"{'Accepts' if label == ACCEPT_LABEL else 'Flexible on'}: {obj}",
        confidence=0.7,
        importance=2,
        supersedes_keys=(f"{CONSTRAINT}:{key_obj}",),
        clause=clause,
    )


def release_targets(release: Candidate) -> tuple[str, ...]:
    """The keys whose active item a release needs before it is written: an acceptance relaxes only a
    constraint; a relaxed requirement, the preference (its own key) or the constraint."""
    relaxed = release.content.startswith((RELAXED_LABEL, "Flexible on"))
    return (*release.supersedes_keys, *((release.key,) if relaxed else ()))


def accepts(clause: str) -> bool:
    """The clause accepts or relaxes something (even with no object of its own: "现在可以接受了")."""
    if CJK_RE.search(clause):
        return bool(_ACCEPT_ZH.search(clause) or _RELAXED_AFTER_ZH.search(clause) or _RELAXED_BEFORE_ZH.search(clause))
    return _ACCEPT_EN.search(clause) is not None or _RELAXED_EN.search(clause) is not None


def is_relaxed(clause: str) -> bool:
    if not CJK_RE.search(clause):
        return _RELAXED_EN.search(clause) is not None
    return bool(_RELAXED_AFTER_ZH.search(clause) or _RELAXED_BEFORE_ZH.search(clause))


def release_candidates(clause: str) -> list[Candidate]:
    """The releases the clause states (none when someone else is speaking: "我老婆说一楼也行")."""
    is_english = not CJK_RE.search(clause)
    if is_english:
        relaxed = _RELAXED_EN.search(clause)
        match = relaxed or _ACCEPT_EN.search(clause)
        if match is None or THIRD_PARTY_RE.search(clause[: match.start()]):
            return []
        label = RELAXED_LABEL if relaxed else ACCEPT_LABEL
        return [r for obj in objects_for(clause, match, True) if (r := _release(label, obj, clause))]
    found: list[Candidate] = []
    for regex, label in (
        (_RELAXED_BEFORE_ZH, RELAXED_LABEL),
        (_RELAXED_AFTER_ZH, RELAXED_LABEL),
        (_ACCEPT_ZH, ACCEPT_LABEL),
    ):
        match = regex.search(clause)
        if match is None:
            continue
        if THIRD_PARTY_RE.search(_OWN_VIEW_RE.sub("", clause[: match.start()])):
            return []
        before = _LEAD_TRIM.sub("", _OWN_VIEW_RE.sub("", clause[: match.start()]).strip())
        before = _SUBJECT_AFTER_TRIM.sub("", before) or before
        rebuilt = before + clause[match.start() :]
        shifted = regex.search(rebuilt)
        if shifted is None:
            continue
        for obj in objects_for(rebuilt, shifted, False):
            release = _release(label, obj, clause)
            if release is not None:
                found.append(release)
        if found:
            break
    return found


def reversed_releases(carried: list[Candidate], clause: str) -> list[Candidate]:
    """ "我以前不喜欢顶楼，现在可以接受了": the past constraint's object, released."""
    label = RELAXED_LABEL if is_relaxed(clause) else ACCEPT_LABEL
    found = []
    for past in carried:
        if past.type != CONSTRAINT:
            continue
        obj = re.split(r"：|: ", past.content, maxsplit=1)[-1]
        release = _release(label, obj, clause)
        if release is not None:
            found.append(release)
    return found
