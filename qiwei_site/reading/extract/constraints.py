"""Constraint triggers: the phrases by which a customer rules something out ("不要顶楼", "no pets").

(regex, type, confidence, importance), longer phrases first; `statements` tries these before the
preference triggers, so "不喜欢" never reads as "喜欢".
"""

from __future__ import annotations

from qiwei_site.reading.extract._common import CONSTRAINT

ZH_CONSTRAINT_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    # "不再喜欢高层" withdraws a preference: a constraint, held less firmly than "不要".
    (
        r"不再(?:喜欢|想要|要|需要|考虑|想住|想租|想买|希望|中意|倾向于?|偏好|接受)",
        CONSTRAINT,
        0.7,
        3,
    ),
    # A softened negated want ("不是很想要", "没那么喜欢") is still a constraint, held less firmly.
    (
        r"(?:不是很|不是太|不是特别|不是那么|并不是很|也不是很|不太|不怎么|不大|不算太|不算很|没那么|没有那么|没太|没有很|"
        r"没特别|没有特别)(?:想要|想住|想租|想买|喜欢|愿意|希望|需要|中意|倾向于?|能接受|接受得了|接受)|"
        r"(?<!不)(?:有点|有些|有一点)(?:介意|怕|嫌|不喜欢|抗拒|排斥)",
        CONSTRAINT,
        0.55,
        2,
    ),
    # "最好不要顶楼" is a clear wish, but softer than "不要顶楼".
    (r"尽量别让|最好别让|最好不要让|尽量别|最好别|最好不要|尽量不要|尽量避免|最好避开|尽量避开", CONSTRAINT, 0.7, 3),
    (r"绝对不要|坚决不要|千万不要|千万别|打死也不|死活不要|绝不", CONSTRAINT, 0.95, 5),
    # "只要不是顶楼就行": anything but the object.
    (r"只要不是|只要别是|只要不在|只要别在", CONSTRAINT, 0.85, 4),
    (
        r"不考虑|不予考虑|不能接受|不可以接受|接受不了|无法接受|没法接受|没办法接受|不接受|受不了|排除|别推荐|不要推荐|别给我推荐|不要给我推荐",
        CONSTRAINT,
        0.9,
        4,
    ),
    (
        r"别(?:再)?给我(?:们)?(?:看|找|发|寄|推荐|推|选|安排|派|用)|别帮我找|不要给我(?:找|发|寄|推荐|推|选|安排)|不要帮我找|不想看|不想要|不希望(?:是|有|在)?|不愿意(?:住|租|买|要)?|不想住|不想租|不想买|不要有|不想有|不能有|不能是|不能在|不要在|不要是|别是|不能要",
        CONSTRAINT,
        0.9,
        4,
    ),
    (r"不喜欢|讨厌|反感|嫌弃|拒绝|避开|避免|最怕|很怕|害怕|(?:比较|很|非常|特别|挺)介意", CONSTRAINT, 0.85, 4),
    (r"(?<!要)不要(?!紧|钱|客气|急|着急)", CONSTRAINT, 0.85, 4),
    # "不需要车位" is a non-need, read as a release (`acceptance`), not as this exclusion.
    (r"不用考虑|(?:^|我|我们|也|就|都)不(?:住|租|买|看|选|找|坐|乘|搭|吃|喝|用)(?!了解)", CONSTRAINT, 0.75, 3),
    # "这次不想去海岛", "不想坐大巴": a refused activity; "别太赶", "行程别太紧": a refused degree.
    (
        r"不想(?:去|坐|乘|吃|住|用|选|报|学|换|要)|别(?=太[\u4e00-\u9fff])|(?:别|不要)(?:再)?让|(?:别|不要)再?(?:派|安排)(?=那个|这个|上次)",
        CONSTRAINT,
        0.8,
        3,
    ),
    # Postposed, tried last: "顶楼就算了", "合租的还是算了吧", "翻新机别给我" (the object comes first).
    # "三居算了" too: a value named and let go of in the same breath (issue 35 review)
    (r"(?:就|那就|也就|还是|的话就)?算了(?=[的吧啊呀哈了呢哦嘛啦]*$)", CONSTRAINT, 0.8, 3),
    (r"(?:就|可|千万)?别(?:再)?给我(?:发|寄|推荐|推|选|安排)?(?=[的吧啊呀哈了呢哦嘛啦]*$)", CONSTRAINT, 0.8, 3),
    # "别临街", "别太吵的": a bare refusal opening the clause.
    (
        r"^(?:最好)?别(?!急|客气|担心|着急|忘|挂|打|发|催|管|说|问|找|骗|走|动|乱|再|让|跟|和|给|把|被|这样|那样|麻烦|介意|"
        r"的|人|墅|处|提|搞|弄|等|看|来|去|怕|嫌|误会|生气|理|回|联系)",
        CONSTRAINT,
        0.75,
        3,
    ),
)
EN_CONSTRAINT_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    # Softened dislikes: still a constraint, held less firmly.
    (
        r"(?:don't|do\s+not)\s+(?:really|particularly|especially|exactly)\s+(?:want|like|love)|"
        r"not\s+(?:really\s+|much\s+of\s+|too\s+|that\s+|so\s+)?(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of|"
        r"not\s+(?:too\s+|that\s+|so\s+|very\s+|really\s+)?(?:keen\s+on|crazy\s+about|into)|"
        r"(?:i|we)(?:(?:\s+would|'d)\s+(?:rather|prefer)|\s+prefer)\s+not(?:\s+to)?(?=\s+(?:have|live|rent|buy|stay|be|get|"
        r"take|share|deal\s+with|a|an|the|any|too|on|in|near|with|facing)\b)|"
        r"no\s+longer\s+(?:want|need|like|love|prefer|consider)|(?:i'm|i\s+am|we're|we\s+are)\s+not\s+looking\s+for",
        CONSTRAINT,
        0.6,
        3,
    ),
    (r"absolutely\s+no|definitely\s+no|never\s+(?:want|accept)|under\s+no\s+circumstances", CONSTRAINT, 0.95, 5),
    (
        r"(?:don't|do\s+not|won't|will\s+not|wouldn't|would\s+not)\s+(?:want|consider|accept|take|like)|"
        r"(?:can't|cannot|couldn't|could\s+not)\s+(?:accept|stand|bear|do|live\s+with)|not\s+interested\s+in|no\s+interest\s+in|"
        r"(?:don't|do\s+not)\s+(?:show|recommend|send)\s+me|rule\s+out|exclude|avoid|dislike|hate|"
        r"anything\s+but|(?:i|we)\s+(?:want|need|would\s+like|'d\s+like)\s+neither|^neither",
        CONSTRAINT,
        0.85,
        4,
    ),
    (
        r"^(?:please\s+)?no\s+(?!problem|worries|thanks|thank|idea|way|need|rush|hurry|doubt|matter|one|more\s+questions)",
        CONSTRAINT,
        0.8,
        4,
    ),
)
