"""Preference triggers: the phrases by which a customer asks for something ("更喜欢朝南", "I'd prefer").

(regex, type, confidence, importance), longer phrases first; tried after the constraint triggers.
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import ACCEPT, MUST, PREFERENCE

# What may follow a postposed trigger at the end of a clause ("地铁口优先吧", "采光很重要的").
_CLAUSE_END = r"(?=[的吧啊呀哈了呢哦嘛啦]*$)"

ZH_PREFERENCE_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    # Must-haves: a preference flagged as a hard requirement ("得有电梯", but not "觉得有…").
    (
        r"必须是|必须有|必须要|必须得|必须能|必须|一定要|一定得|务必|非要|非得|"
        r"(?<![觉记懂值显晓使获取免舍难赢认说还])得(?=有|是|能|带|离|靠近)|"
        r"只要(?!不|别)|只想要|只想找|只找|只考虑|只租|只买|只看",
        MUST,
        0.9,
        5,
    ),
    (r"最看重|最在意|最在乎|最注重", PREFERENCE, 0.85, 5),
    (
        r"比较看重|很看重|更看重|看重|比较在意|很在意|特别在意|非常在意|更在意|(?<![不没])在意|(?<![不没])在乎|注重",
        PREFERENCE,
        0.8,
        4,
    ),
    (r"我更喜欢|更喜欢|比较喜欢|最喜欢|特别喜欢|很喜欢|挺喜欢|喜欢", PREFERENCE, 0.85, 3),
    (
        r"更想要?|比较想要?|更倾向于|更倾向|倾向于|倾向|偏好|偏爱|首选|优先考虑|中意|钟意|看中|看上|心仪",
        PREFERENCE,
        0.8,
        3,
    ),
    (r"最好是|最好能|最好有|最好(?!的)", PREFERENCE, 0.8, 3),
    (r"希望是|希望能|希望有|希望", PREFERENCE, 0.8, 3),
    (
        r"想要|想找|想租|想买|想住|要找|帮我找|给我找|帮忙找|帮我推荐|给我推荐|帮忙推荐|给推荐|帮我们找|帮我们推荐|"
        # asking us to pick one out ("帮我挑选一个…的酒店", "给我物色一套…"), or "我找一家…"
        r"(?:帮|给|替)(?:我|我们)(?:挑选|挑|选|物色|留意)(?:一下)?|(?:^|我|我们)找(?=[一个家套间所])|"
        r"打算租|打算买|准备租|准备买|需要|要求|(?:^|我|我们|咱们)(?:就)?要(?!是|不|求)|"
        # other trades' acquiring verbs (issue 22): "想预定一个…的酒店", "想报个…的班", "打算找一家…"
        r"(?<!来)想(?:先|再|接着|继续|还|也|就|要)?(?:预定|预订|订|报|学|去|吃|选|换|入住|续报)|"
        r"(?:打算|准备|计划)(?:找|去|订|预定|预订|报)",
        PREFERENCE,
        0.8,
        3,
    ),
    # Postposed, tried last: "电梯是刚需", "采光很重要", "地铁口优先" (the object comes first).
    (rf"(?:是|算)?(?:刚需|必须的|必须要有的|必备的?|硬性要求|硬指标){_CLAUSE_END}", MUST, 0.9, 5),
    (rf"(?:是|算)?(?:最重要|最关键|第一位|首要)(?:的)?{_CLAUSE_END}", PREFERENCE, 0.85, 5),
    (
        rf"(?:很|非常|特别|比较|挺|也|还是|蛮|更)(?:重要|关键){_CLAUSE_END}|(?<!不)优先(?:考虑)?{_CLAUSE_END}",
        PREFERENCE,
        0.8,
        4,
    ),
)
EN_PREFERENCE_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    (
        r"must\s+have|must\s+be|has\s+to\s+be|have\s+to\s+have|need\s+to\s+have|it\s+must|"
        r"(?:is|are)\s+(?:a\s+)?must(?:-have)?(?=\W*$)|(?:is|are)\s+non-negotiable(?=\W*$)",
        MUST,
        0.9,
        5,
    ),
    (
        r"(?:is|are)\s+(?:really\s+|very\s+|most\s+)?(?:important|a\s+priority|my\s+priority|key)(?=\W*$)",
        PREFERENCE,
        0.8,
        4,
    ),
    (
        r"(?:i|we)(?:\s+would|'d)\s+(?:(?:much|really|still)\s+)?(?:prefer|like|love)|"
        # "I'd rather talk tomorrow" is about the chat, not the flat: "rather" counts only before a home.
        r"(?:i|we)(?:\s+would|'d)\s+(?:much\s+)?rather(?=\s+(?:have|live|rent|buy|stay|be|get|take|a|an|the|go\s+with)\b)|"
        r"(?:i|we)\s+(?:(?:now|really|actually|still|also|definitely|strongly|do|only|just|mostly)\s+){0,2}"
        r"(?:prefer|love|like|want|need)|(?:i'm|i\s+am|we're|we\s+are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|"
        r"(?:i'm|i\s+am|we're|we\s+are)\s+(?:looking\s+for|interested\s+in|after)|my\s+preference\s+is|"
        r"^(?:ideally|preferably)|^prefer|^looking\s+for",
        PREFERENCE,
        0.8,
        3,
    ),
)

# A negation just before a Chinese preference trigger ("并不喜欢", "不是想要") voids that match.
NEGATED_PREFERENCE_PREFIX = re.compile(r"(?:不|没|别|并不|也不|从不|不再|不是|并不是|也不是)\s*$")

# Acceptance: "一楼也可以考虑", "可以接受老小区", "不介意顶楼", "也不是不能接受一楼". Not a wish: it
# relaxes an earlier constraint on the object (a release), and states nothing where there is none.
ZH_ACCEPT_RE = (
    r"(?<![不没])(?:也|还是|其实)?(?:可以|能|还能|也能)接受|接受得了|(?<![不没])(?:也|还是)?可以考虑|也能考虑|也考虑|"
    r"也行|也可以(?![看去来约问])|也没问题|也没关系|也ok|也OK|也成|也凑合|也能住|也无妨|"
    r"不介意|不排斥|不排除|不反对|不抗拒|不嫌弃|不在乎|(?:也)?不是不能接受|(?:也)?不是不可以|(?:也)?不是不行"
)
EN_ACCEPT_RE = (
    r"\b(?:i|we)\s+(?:can|could)\s+(?:live\s+with|accept|consider)|\b(?:is|are)\s+(?:fine|ok|okay|acceptable)\s+"
    r"(?:too|as\s+well)\b|\b(?:i|we)\s+(?:don't|do\s+not)\s+mind|\b(?:i'm|i\s+am|we're|we\s+are)\s+open\s+to"
)
__all__ = [
    "ACCEPT",
    "EN_ACCEPT_RE",
    "EN_PREFERENCE_TRIGGERS",
    "NEGATED_PREFERENCE_PREFIX",
    "ZH_ACCEPT_RE",
    "ZH_PREFERENCE_TRIGGERS",
]
