"""Preference triggers: the phrases by which a customer asks for something ("更喜欢朝南", "I'd prefer").

(regex, type, confidence, importance), longer phrases first; tried after the constraint triggers.
"""

from __future__ import annotations

import re

from memory.capture.extract._common import PREFERENCE

ZH_PREFERENCE_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    (r"必须是|必须有|必须要|必须|一定要|一定得|务必|非要", PREFERENCE, 0.9, 4),
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
        r"想要|想找|想租|想买|想住|要找|帮我找|给我找|帮忙找|打算租|打算买|准备租|准备买|需要|要求|(?:^|我|我们|咱们)要(?!是|不|求)",
        PREFERENCE,
        0.8,
        3,
    ),
)
EN_PREFERENCE_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    (r"must\s+have|must\s+be|has\s+to\s+be|have\s+to\s+have|need\s+to\s+have|it\s+must", PREFERENCE, 0.9, 4),
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
