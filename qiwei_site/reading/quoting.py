"""Quoting for a prompt: what is left of a customer's, a staff member's or memory's words cannot
act as prompt structure. Plain Python.

`quoted_text` masks credentials and personal numbers (`masking`), then `neutralise` defuses anything
that could pass for one of our section headers or quote ends, a delimiter, a code fence, a Markdown
heading or a role turn.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from qiwei_site.reading.masking import mask_sensitive

# How the prompt introduces each memory item (by item type), and a supervisor's note: ours, so a
# customer's words that carry one of them are copying the prompt (`guard.PROMPT_LABEL_RE`).
MEMORY_LABELS: dict[str, str] = {
    "fact": "客户陈述的事实",
    "preference": "客户表达的偏好",
    "constraint": "客户的约束",
    "event": "事件",
    "hypothesis": "待确认推断",
}
NOTE_LABEL = "主管备注"
OTHER_MEMORY_LABEL = "客户记忆"

# Default-ignorable code points: zero-width, bidi controls, variation selectors, tags, fillers.
_INVISIBLE_RE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Ordinary Chinese punctuation and full-width digits stay as the customer typed them (NFKC would
# turn them into ASCII): none of them can form one of our markers, and the role and end-of-quote
# checks below accept both forms of the colon and the brackets.
_KEEP_FULL_WIDTH_RE = re.compile("([，！？：；（）～０-９]+)")
_ROLE_RE = re.compile(
    r"(?i)(?<![a-z])(system|assistant|users?|human|developer|tool|instructions?|response|input|output|prompt)(\s*)[:：]"
    r"|(系统提示|系统|助手|用户|客户|客服|人类|开发者|指令|管理员)(\s*)[:：]"
)
_CHAT_TOKEN_RE = re.compile(r"<\||\|>|\[/?INST\]", re.IGNORECASE)
_QUOTE_END_RE = re.compile(r"(?:原话|客户记忆|记忆)?\s*引用\s*结束")
_RUNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"={2,}"), "＝"),
    (re.compile(r"`{3,}"), "ˋ"),
    (re.compile(r"[~～]{3,}"), "～"),
    (re.compile(r"#{2,}"), "＃"),
    (re.compile(r"-{3,}"), "－"),
    (re.compile(r"\*{3,}"), "＊"),
    (re.compile(r"_{3,}"), "＿"),
    (re.compile(r"<{2,}"), "＜"),
    (re.compile(r">{2,}"), "＞"),
)
_CHAT_TOKENS = {"<|": "‹|", "|>": "|›"}


def _fold(text: str) -> str:
    """NFKC, except ordinary Chinese punctuation and digits, so look-alikes (full-width ＝＝, ｓｙｓｔｅｍ：)
    become the ASCII forms the checks below look for."""
    parts = _KEEP_FULL_WIDTH_RE.split(text)
    return "".join(part if index % 2 else unicodedata.normalize("NFKC", part) for index, part in enumerate(parts))


def _repeat(char: str) -> Callable[[re.Match[str]], str]:
    return lambda match: char * len(match.group())


def _role(match: re.Match[str]) -> str:
    word = match.group(1) or match.group(3)
    return f"{word}∶"


# Every build quotes the same recent lines again (issue 38: 36 lines a turn, ~6% of a context's
# CPU); the answer depends on the text alone. Text-keyed like `spans._find_sensitive`.
@lru_cache(maxsize=4096)
def neutralise(text: str) -> str:
    """One safe line of quoted text. Invisible characters go first (so they cannot hide a marker
    from the checks), then NFKC, then line breaks and control characters; what is left cannot pass
    for one of our section headers or quote ends, a delimiter, a code fence, a Markdown heading or
    a role turn (system:, 用户：, <|im_start|>, [INST]). Applying it twice changes nothing."""
    text = _INVISIBLE_RE.sub("", text or "")
    text = _INVISIBLE_RE.sub("", _fold(text))
    text = _CONTROL_RE.sub(" ", text)
    text = " ".join(text.split())
    for pattern, replacement in _RUNS:
        text = pattern.sub(_repeat(replacement), text)
    text = _CHAT_TOKEN_RE.sub(lambda m: _CHAT_TOKENS.get(m.group(), f"［{m.group()[1:-1]}］"), text)
    text = _ROLE_RE.sub(_role, text)
    return _QUOTE_END_RE.sub("〔引用标记〕", text)


def quoted_text(text: str) -> str:
    """The one place where a customer's, a staff member's or memory's words are made safe to quote
    in a prompt (history, the latest message and core memory all come through here): credentials
    and personal numbers masked, then anything that could act as prompt structure defused."""
    return neutralise(mask_sensitive(text))
