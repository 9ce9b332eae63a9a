"""Safety gate for automatic capture (spec §3, DESIGN §6): a message that smuggles instructions
or carries a credential never becomes memory. Only categories, rule names and positions leave
this module, never matches.

Two kinds of sensitive text, two treatments (issue 14):
- A secret that opens something (password, key, token, one-time code, CVV) blocks the whole
  message: it writes no memory and the audit names the category. What surrounds a secret is
  usually about the secret, and the message is itself a security event.
- A personal number that only identifies (mainland ID card, bank card, mobile) does not block:
  customers give them beside real facts ("电话138…，预算5000"), and losing the facts would be the
  gate's false positive. Capture reads `without_personal_numbers(text, scan(text).spans)`, so the
  number never reaches an item's content or key; the stored message stays as received.

Both are found after NFKC folding and after squeezing evasive spacing ("密 码 是 a b c 1 2 3",
"ｐａｓｓｗｏｒｄ＝ａｂｃ１２３"), and `find_sensitive` returns their spans in the text as received,
which `memory.capture.masking` uses wherever a message is shown.

False positives silently lose customer facts, so every pattern needs an instruction-like object
or a concrete secret value: "请忽略我上一条消息" (a retraction) and "验证码收不到" (a complaint) pass;
prices, dates, room and order numbers are never personal numbers.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import phonenumbers
from stdnum import luhn
from stdnum.cn import ric

from memory.text import fold_compatibility

PROMPT_INJECTION = "prompt_injection"
CREDENTIAL = "credential"
HIDDEN_CHARACTERS = "hidden_characters"

# Span categories: CREDENTIAL (above) and these.
VERIFICATION_CODE = "verification_code"
CARD_SECURITY_CODE = "cvv"
ID_CARD = "id_card"
BANK_CARD = "bank_card"
MOBILE = "mobile"
# Secrets block capture (scan's category CREDENTIAL); personal numbers are cut out of what it reads.
SECRET_CATEGORIES = frozenset({CREDENTIAL, VERIFICATION_CODE, CARD_SECURITY_CODE})
PERSONAL_NUMBER_CATEGORIES = frozenset({ID_CARD, BANK_CARD, MOBILE})


@dataclass(frozen=True)
class ScanResult:
    blocked: bool
    categories: list[str] = field(default_factory=list)
    # Which rules fired (names only, safe to audit); never the matched text.
    rules: list[str] = field(default_factory=list)
    # Every secret and personal number, as positions in the scanned text (see `find_sensitive`).
    spans: tuple[Span, ...] = ()


# --- hidden characters -------------------------------------------------------------------

# Zero-width, bidi controls, invisible separators and Unicode tag characters.
_HIDDEN_RE = re.compile(
    "[\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u206a-\u206f\u180e\u00ad\U000e0000-\U000e007f]"
)
_ZWJ = "\u200d"


def _is_pictographic(char: str) -> bool:
    if not char:
        return False
    code = ord(char)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x1F3FB <= code <= 0x1F3FF
        or code == 0xFE0F
        or unicodedata.category(char) == "So"
    )


def _hidden_characters(text: str) -> bool:
    # A BOM at the very start is an encoding artefact, not an attack.
    body = text[1:] if text.startswith("\ufeff") else text
    if "\ufeff" in body or _HIDDEN_RE.search(body):
        return True
    # The zero-width joiner is legitimate inside emoji sequences (👨‍👩‍👧) and nowhere else.
    start = 0
    while (index := body.find(_ZWJ, start)) != -1:
        before = body[index - 1] if index > 0 else ""
        after = body[index + 1] if index + 1 < len(body) else ""
        if not (_is_pictographic(before) and _is_pictographic(after)):
            return True
        start = index + 1
    return False


# --- prompt injection --------------------------------------------------------------------

# Nouns that name *our* instructions. Messages, words and "what I said" are deliberately absent:
# "忽略我上一条消息" retracts the customer's own words.
_ZH_INSTRUCTION_NOUN = (
    r"(?:指令|指示|命令|规则|规定|设定|人设|提示词|提示语|系统提示|prompt|约束|限制|安全策略|安全规则|"
    r"安全限制|道德|准则|守则|政策限制|系统消息|系统设置|预设|初始化|训练内容|上下文)"
)
_ZH_OVERRIDE_VERB = (
    r"(?:忽略|忽视|无视|忘记|忘掉|忘了|抛开|丢掉|放弃|跳过|绕过|绕开|突破|覆盖|不要理会|别管|不用管|"
    r"不必遵守|不要遵守|别遵守|违反|解除|取消)"
)

# Only determiners that point at the assistant's own instructions may sit between verb and noun:
# "忽略预算限制" or "ignore the landlord's rules" are customer talk, not overrides.
_ZH_DET = (
    r"以上|上面|上述|前面|之前|此前|先前|以前|所有|全部|一切|任何|你的|你们的|你|系统|原来|原有|原始|默认|既定|内置|"
    r"这些|那些|这条|那条|的|各种|一切的|现有|当前|开发者|设定的|给你的|对你的|\s"
)
_EN_DET = (
    r"all|any|the|your|previous|prior|above|earlier|preceding|original|initial|system|every|of|these|those|"
    r"existing|current|default|given|preset|safety|content|developer|built-in|programmed|other|above-mentioned|its"
)
_EN_INSTRUCTION_NOUN = (
    r"(?:instructions?|prompts?|rules|guidelines|directives?|directions|programming|system\s+message|"
    r"guardrails|restrictions|constraints|safety\s+(?:rules|guidelines|policies|filters)|policies|context|training)"
)

_INJECTION_PATTERNS: tuple[tuple[str, str], ...] = (
    # -- instruction override (zh): verb + determiners that point at *our* instructions + an instruction noun.
    ("override_zh", rf"{_ZH_OVERRIDE_VERB}(?:掉)?(?:{_ZH_DET}){{0,5}}{_ZH_INSTRUCTION_NOUN}"),
    ("override_zh_above", r"(?:忽略|无视|忘记|忘掉)(?:以上|上面|上述|前面|之前|此前|先前)(?:所有|全部|的一切|一切)"),
    (
        "override_zh_everything",
        r"(?:忽略|无视|忘记|忘掉)(?:你)?(?:之前|以前|此前|先前)?(?:被告知|学到|收到)的(?:一切|所有|全部)",
    ),
    # -- instruction override (en)
    (
        "override_en",
        rf"\b(?:ignore|disregard|forget|override|bypass|skip|abandon|discard|neglect)\s+(?:(?:{_EN_DET})\s+){{0,4}}"
        rf"{_EN_INSTRUCTION_NOUN}\b",
    ),
    (
        "override_en_above",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+|anything\s+)(?:of\s+)?(?:the\s+)?(?:(?:that\s+)?(?:was\s+)?"
        r"(?:said|written|stated)\s+)?(?:above|before\s+this|prior\s+to\s+this|you\s+(?:were|have\s+been)\s+told)",
    ),
    (
        "override_then_output",
        r"\b(?:ignore|disregard|forget)\b[^.!?\n]{0,40}?(?:\band\b|\bthen\b|,)\s*(?:instead\s+)?(?:just\s+)?"
        r"(?:say|print|output|write|respond|reply|answer|tell|repeat|translate|return)\b"
        r"|(?:忽略|无视|忘记|忘掉)[^。！？]{0,20}?(?:然后|并且?|再|，|,)\s*(?:直接|只)?(?:输出|说|回复|回答|打印|写|重复|翻译)",
    ),
    (
        "override_en_everything",
        r"\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:above|previous|prior|before)\b",
    ),
    # "房东有新规则：不许养宠物" is news; a rule that opens the message or orders the agent is not.
    (
        "new_instructions_zh",
        r"(?:新的?|以下是?你?的?新|下面是?你?的?新)(?:指令|设定|指示|人设)[是为:：]"
        r"|(?:^|[。！？\n])\s*(?:[#>*=\-]+\s*)?(?:新的?|最新|更新后?的?)(?:规则|任务|规定)[是为:：]"
        r"|(?:新的?|最新)(?:规则|规定)[是为:：]\s*(?:以后|今后|你|所有|一律|总是|永远|必须|自动|直接)",
    ),
    (
        "new_instructions_en",
        r"\b(?:new|updated|real|actual|true)\s+(?:instructions?|directives?|orders)\s*(?:is|are|:)"
        r"|(?:^|(?<=[.!?\n]))\s*(?:[#>*=\-]+\s*)?(?:new|updated|real|actual|true|additional|secret|hidden)\s+"
        r"(?:task|rules?|policy|guidelines?)\s*(?:is|are|:)"
        r"|\b(?:new|updated)\s+(?:rules?|policy|guidelines?)\s*(?:is|are|:)\s*(?:always|never|you|from\s+now|"
        r"do\s+not|don't|ignore|approve|auto)",
    ),
    # -- role hijack
    (
        "role_zh",
        r"(?:从现在(?:开始|起)|现在起)[，,\s]*你(?:就是|是|将是|要扮演|扮演|将扮演|必须|只能|作为|不再是|不是)"
        r"(?!.{0,12}(?:吗|嘛|呢|[?？]|哪|什么|谁))",
    ),
    (
        "role_zh_now",
        r"你现在(?:是|扮演|作为|成为|变成)(?!.{0,12}(?:吗|嘛|呢|[?？]|哪|什么|谁|几|多少))"
        r"(?:一个|一名|一位|DAN|AI|.{0,8}(?:助手|机器人|模型|黑客|角色|模式|没有限制|不受限制|无限制))",
    ),
    (
        "role_zh_play",
        r"(?:请你?|你)?(?:扮演|假装(?:你是|成)|装作|充当|模拟)(?!的)(?:一个|一名|一位)?.{0,12}"
        r"(?:AI|ai|人工智能|机器人|助手|模型|黑客|系统|管理员|开发者|没有限制|不受限制|DAN|猫娘|角色)",
    ),
    ("role_zh_mode", r"(?:进入|切换到|开启|启动|激活)(?:到)?.{0,6}(?:开发者|越狱|调试|上帝|管理员|无限制|DAN)模式"),
    ("role_zh_unbound", r"你(?:现在|已经)?(?:不受|没有|不再有|摆脱了?)(?:任何)?(?:限制|约束|规则|束缚|审查)"),
    ("role_zh_jailbreak", r"越狱|jailbreak|DAN模式"),
    ("role_zh_claim", r"我是你的(?:开发者|管理员|创造者|主人|设计者|程序员|上级)"),
    (
        "role_en",
        r"\b(?:(?:you\s+are|you're)\s+now\s+(?!my\b)(?:an?\s+|the\s+|in\s+|called\s+|named\s+)?(?:[\w-]+\s+){0,3}?"
        r"(?:ai|assistant|bot|chatbot|model|llm|gpt|chatgpt|dan|hacker|character|persona|mode|unrestricted|unfiltered|"
        r"uncensored|jailbroken|evil|admin|administrator|developer|system|terminal|root|free\s+(?:from|of))\b|"
        r"from\s+now\s+on,?\s+you(?:'re|\s+are|\s+will|\s+must|\s+shall)|"
        r"you\s+(?:are|will)\s+no\s+longer|you\s+will\s+now\s+(?:act|be|play|respond)|"
        r"i\s+want\s+you\s+to\s+(?:act|pretend|behave|roleplay)|pretend\s+(?:to\s+be|you\s+are|that\s+you)|"
        r"roleplay\s+as|role-play\s+as|act\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|evil|jailbroken|"
        r"linux|terminal|dan|ai|language\s+model|system|admin|developer|hacker))",
    ),
    (
        "role_en_mode",
        r"\b(?:developer|dan|god|jailbreak|debug|admin|unrestricted|evil)\s+mode\b|\bdo\s+anything\s+now\b|(?-i:\bDAN\b)",
    ),
    ("role_en_claim", r"\bi\s+am\s+your\s+(?:developer|creator|admin|administrator|owner|programmer|master)\b"),
    # -- system-prompt leaking
    (
        "leak_zh",
        r"(?:输出|打印|告诉我|显示|展示|泄露|透露|重复|复述|背诵|给我看|发给我|说出|列出|念出|翻译)"
        r"(?:一下|一遍)?(?:你的?|你们的?|系统的?|上面的?|最初的?|原始的?|隐藏的?|内部的?|完整的?){1,3}"
        r"(?:系统提示|提示词|提示语|系统指令|初始指令|指令|设定|prompt|规则原文|配置|system)",
    ),
    ("leak_zh_what", r"你的(?:系统提示词?|提示词|初始指令|系统指令|prompt)(?:是什么|有哪些|内容)"),
    (
        "leak_en",
        r"\b(?:reveal|show|print|output|repeat|display|leak|tell\s+me|give\s+me|share|recite|what\s+(?:is|are|was|were))"
        r"\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?(?:your|the)\s+(?:full\s+|entire\s+|complete\s+|exact\s+)?"
        r"(?:system\s+prompt|initial\s+(?:instructions|prompt)|original\s+(?:instructions|prompt)|hidden\s+"
        r"(?:instructions|prompt)|secret\s+(?:instructions|prompt)|pre-?prompt|instructions\s+above|prompt\s+above)",
    ),
    ("leak_en_words", r"\b(?:repeat|print|output)\s+(?:the\s+)?(?:words|text|everything)\s+above\b"),
    ("leak_en_system_prompt", r"\bsystem\s+prompt\b"),
    # -- output hijacking
    (
        "output_zh",
        r"(?:直接|只|仅|请只|只需|只要)(?:输出|回复|回答|返回|打印|说)(?:[:：「“\"'『]|以下|下面|这句话|这段话|这几个字|一个字|"
        r"一句|原文)",
    ),
    ("output_zh_verbatim", r"(?:原样|一字不差地?|一字不改地?|逐字)(?:输出|回复|打印|重复|复述)"),
    (
        "output_en",
        r"\b(?:print|say|output|respond|reply|answer|write|return)\s+(?:with\s+)?(?:only|exactly|verbatim|just)\b"
        r"|\b(?:only|just)\s+(?:respond|reply|answer|output|say)\s+(?:with\s+)?[\"'“:]"
        r"|\brepeat\s+after\s+me\b",
    ),
    # -- exfiltration
    (
        "exfil_zh",
        r"(?:把|将)(?:[^，。！？]{0,16}?)(?:对话|聊天记录|会话|客户(?:信息|资料|数据|名单)|所有(?:数据|信息|记录|资料)|"
        r"系统提示|提示词|数据库|密钥|密码|token|用户(?:信息|数据)|其他客户|内部资料)(?:[^，。！？]{0,10}?)"
        r"(?:发送到|发到|发给|转发到|转发给|上传到|传到|提交到|post到)[^，。！？]{0,10}?"
        r"(?:https?://|www\.|@|邮箱|服务器|网址|链接|地址|接口|webhook|群)",
    ),
    ("exfil_zh_url", r"(?:发送到|发到|转发到|上传到|提交到|传到)\s*(?:https?://|www\.)"),
    (
        "exfil_en",
        r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|email)\b[^.!?\n]{0,60}?\bto\s+(?:https?://|www\.|"
        r"[\w.+-]+@[\w-]+\.[\w.]+\b[^.!?\n]{0,0}(?=.*\b(?:conversation|chat|history|data|prompt|password|key|token)\b))",
    ),
    (
        "exfil_en_data",
        r"\b(?:send|post|upload|forward|email)\s+(?:me\s+)?(?:all\s+)?(?:the\s+|your\s+)?(?:conversation|chat\s+history|"
        r"customer\s+data|user\s+data|database|api\s+keys?|credentials|system\s+prompt|other\s+customers)",
    ),
    ("exfil_markdown_image", r"!\[[^\]]*\]\(\s*https?://[^)]*[?&][^)]*="),
    # -- writing to the assistant's memory directly ("请记住我的预算是3000" names no memory and passes)
    (
        "memory_write_zh",
        r"(?:你的?|你们的?|系统的?|AI的?|长期|永久|核心)(?:长期|永久|核心)?(?:记忆|记忆库)(?:里|中|内|里面|当中)?[，,：:\s]*"
        r"(?:写入|写上|写下|写进|添加|加上|加入|存入|存上|保存|记录|记下|标记|更新|改成|修改|注入|植入|插入)"
        r"|(?:在|往|向|给)(?:记忆|记忆库)(?:里|中|内|里面)[，,：:\s]*(?:写入|写上|写下|写进|添加|加上|加入|存入|保存|记录|记下|"
        r"标记|更新|改成|修改|注入|植入|插入)"
        r"|(?:写入|写进|存入|存进|保存到|保存进|保存在|记录到|记录进|加入到?|添加到|存到|存在|记到|记进|记在|注入到?|植入到?|"
        r"更新到)(?:你的?|你们的?|系统的?|AI的?)?(?:长期|永久|核心)?(?:记忆|记忆库)"
        r"|(?:更新|修改|改写|重写|清空|删除|覆盖)(?:一下)?(?:你的?|你们的?|系统的?)(?:长期|永久|核心)?(?:记忆|记忆库)",
    ),
    (
        "memory_write_en",
        r"\b(?:save|store|write|add|put|record|commit|insert|inject|update|append)\b[^.!?\n]{0,40}?\b(?:in|into|to)\s+"
        r"(?:your\s+)?(?:long[-\s]?term\s+|permanent\s+|core\s+)?(?:memory|memories|knowledge\s+base)\b"
        r"|\bupdate\s+your\s+(?:long[-\s]?term\s+)?memory\b",
    ),
    # -- switching off human review / auto-send (spec: drafts always wait for staff)
    (
        "review_bypass_zh",
        r"(?:不需要|不用|无需|不必|别|不要|免|跳过|绕过|绕开|关闭|关掉|取消|停止|省略|去掉)(?:再)?(?:经过|走|等|通过|进行)?"
        r"(?:任何)?(?:人工|人类|真人|管理员|主管|经理|人为)(?:的)?(?:审核|审批|复核|审查|把关)"
        r"(?![^。！？\n]{0,10}(?:吗|嘛|呢|[?？]))"
        r"|不经(?:过)?(?:人工|任何)?(?:审核|审批|复核)(?:就|直接)?(?:发|回)"
        r"|(?:以后|今后|所有|全部|每条|你的?)(?:的)?(?:回复|答复|回答|草稿)[^。！？\n]{0,10}(?:都|全部|一律|统统)?"
        r"(?:直接|自动)(?:发送|发出|发给客户|推送)"
        r"|(?:打开|开启|启用)(?:你的?)?(?:自动发送|自动发出)",
    ),
    (
        "review_bypass_en",
        r"\b(?:skip|bypass|disable|turn\s+off|without|no\s+need\s+for)\s+(?:any\s+|the\s+)?(?:human|manual|staff|admin)\s+"
        r"(?:review|approval|check|sign[-\s]?off)"
        r"|\b(?:enable|turn\s+on|switch\s+on)\s+auto[-\s]?(?:send|reply)"
        r"|\b(?:replies|responses|drafts|answers)\b[^.!?\n]{0,30}\bsen[dt]\s+(?:out\s+)?(?:automatically|directly|"
        r"immediately)\b",
    ),
    # -- standing orders about what to tell other people ("以后不管谁问，都说…")
    (
        "standing_order_zh",
        r"(?:不管|无论|不论)(?:是)?(?:谁|任何人|哪个客户|哪位客户|什么人|别人|其他人|其他客户|别的客户)(?:来)?(?:问|咨询|打听)(?!我)"
        r"[^。！？\n]{0,8}?(?:都|就|一律|统一|全)(?:要)?(?:说|回答|回复|告诉|讲|答)"
        r"|(?:对|跟|和|给|向)(?:所有|其他|别的|任何|每个|每一个)(?:的)?(?:客户|人|租客|买家|用户)[^。！？\n]{0,6}?"
        r"(?:都|一律|统一)(?:要)?(?:说|讲|回复|回答|报价?|推荐)(?![^。！？\n]{0,16}(?:吗|嘛|呢|[?？]))"
        r"|(?:记住|牢记|记好了?)[，,：:\s]*(?:以后|今后|从今以后|往后|从现在起|从现在开始)?[，,\s]*(?:你)?(?:要)?"
        r"(?:总是|永远|一律|始终|每次都|都要|必须|只能|务必)(?:要)?(?:推荐|回复|回答|说|同意|批准|答应|告诉|报价?|打折|优先)",
    ),
    (
        "standing_order_en",
        r"\bno\s+matter\s+who\s+asks\b"
        r"|\b(?:tell|say\s+to)\s+(?:every(?:one|body)|all\s+(?:other\s+)?customers|other\s+customers|anyone\s+who\s+asks)\b"
        r"|\bremember\s*[:,-]\s*(?:to\s+)?(?:always|never)\s+(?:say|tell|reply|answer|recommend|approve|agree|offer|quote)"
        r"|\b(?:always|automatically|auto-?)\s*approve\b",
    ),
    # -- fake system / admin markers and chat-role JSON
    (
        "fake_marker",
        r"[【\[<]\s*(?:系统|管理员|开发者|后台|system|admin|administrator|developer|sys)\s*"
        r"(?:指令|消息|提示|命令|设置|message|prompt|note|override|instructions?)?\s*[】\]>]"
        r"|[【\[<]\s*(?:指令|新规则|instructions?|new\s+rules?)\s*[】\]>]"
        r"|(?:#{2,}|={2,}|-{3,}|\*{2,})\s*(?:系统|管理员|开发者|指令|新?规则|system|admin|instructions?|rules?)\s*"
        r"(?:指令|消息|提示)?\s*(?:#{2,}|={2,}|-{3,}|\*{2,})"
        r"|(?:系统|管理员|开发者|后台|运营|超级管理员|平台)(?:最高|紧急)?(?:指令|命令)\s*[:：]",
    ),
    (
        "role_json",
        r"[\"']role[\"']\s*:\s*[\"'](?:system|developer|assistant|tool|function)[\"']"
        r"|(?:^|\n)\s*role\s*[:=]\s*[\"']?(?:system|developer)[\"']?\s*(?:$|\n|,)",
    ),
    # -- chat-template and delimiter smuggling
    (
        "delimiter",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<<\s*/?SYS\s*>>|</?system>|"
        r"^\s*#{2,}\s*(?:system|instruction)s?\b|^\s*(?:system|assistant)\s*:|【系统(?:指令|消息|提示)】|\[system\]",
    ),
)

_COMPILED_INJECTION = tuple(
    (name, re.compile(pattern, re.IGNORECASE | re.MULTILINE)) for name, pattern in _INJECTION_PATTERNS
)

# A retraction of the customer's own words is never an override ("请忽略我上一条消息，发错了").
_SELF_RETRACTION = re.compile(
    r"(?:忽略|无视|忘记|忘掉|不用管|别管|撤回|作废)(?:掉)?(?:我|刚才|刚刚|上一条|前一条|之前发的|上面发的|那条)"
    r"|\b(?:ignore|disregard|forget)\s+(?:my|what\s+i|that\s+last|the\s+(?:last|previous)\s+(?:message|msg|text|one))",
    re.IGNORECASE,
)

# --- credentials and personal numbers -----------------------------------------------------

_VALUE_STOPWORDS_ZH = (
    "什么",
    "多少",
    "啥",
    "几位",
    "几个",
    "不对",
    "错",
    "忘",
    "对的",
    "正确",
    "不是",
    "多长",
    "怎么",
    "哪",
)
_VALUE_STOPWORDS_EN = frozenset(
    {
        "is", "the", "a", "an", "not", "wrong", "incorrect", "correct", "right", "too", "invalid", "expired",
        "required", "reset", "forgotten", "lost", "changed", "on", "in", "at", "for", "what", "same", "different",
        "weak", "strong", "long", "short", "missing", "needed", "ok", "okay", "fine", "locked", "there", "here",
        "sent", "below", "above", "attached", "it", "that", "this", "my", "your", "please", "and", "or", "still",
    }
)  # fmt: skip


def _zh_password_value(value: str) -> bool:
    # "密码是多少" asks; "密码abc" in "密码abc锁" is a word: a value carries a digit or is long.
    if any(value.startswith(word) for word in _VALUE_STOPWORDS_ZH):
        return False
    return any(c.isdigit() for c in value) or len(value) >= 6


def _en_password_value(value: str) -> bool:
    value = value.lower().rstrip(".!?")
    if value in _VALUE_STOPWORDS_EN or len(value) < 3:
        return False
    return not (value.isalpha() and len(value) < 6)


@dataclass(frozen=True)
class _Rule:
    """One pattern; its group `v` (when present) is the secret itself, so masking keeps the label."""

    name: str
    category: str
    regex: re.Pattern[str]
    accept: Callable[[str], bool] | None = None


def _rule(name: str, category: str, pattern: str, accept: Callable[[str], bool] | None = None) -> _Rule:
    return _Rule(name, category, re.compile(pattern, re.IGNORECASE), accept)


# Digits stand next to Chinese characters without a word break ("验证码482913请查收"), so number
# edges are lookarounds on digits, not \b.
_CODE_WORDS_ZH = r"(?:验证码|校验码|动态码|短信码|安全码|授权码|提取码|激活码|动态密码|确认码|取件码)"
_SECRET_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        CREDENTIAL,
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[^\n]*?-----|[\s\S]*)",
    ),
    _rule("aws_access_key", CREDENTIAL, r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
    _rule("aws_secret", CREDENTIAL, r"aws.{0,20}?(?:secret|key).{0,20}?[\"'=:\s](?P<v>[A-Za-z0-9/+=]{40})\b"),
    _rule("gcp_api_key", CREDENTIAL, r"\bAIza[0-9A-Za-z_-]{35}\b"),
    _rule("gcp_oauth", CREDENTIAL, r"\bya29\.[0-9A-Za-z_-]{20,}"),
    _rule("gcp_service_account", CREDENTIAL, r"\"(?:private_key_id|private_key)\"\s*:(?:\s*\"(?P<v>[^\"]+)\")?"),
    _rule(
        "azure_storage",
        CREDENTIAL,
        r"AccountKey\s*=\s*[A-Za-z0-9+/=]{40,}|SharedAccessSignature\s+sig=\S*|[?&]sig=[A-Za-z0-9%+/=]{30,}",
    ),
    _rule("azure_client_secret", CREDENTIAL, r"\b[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}\b"),
    _rule("github_token", CREDENTIAL, r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{40,}"),
    _rule("gitlab_token", CREDENTIAL, r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat|ffct|imt|agent)-[A-Za-z0-9_-]{20,}"),
    _rule(
        "slack_token", CREDENTIAL, r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+"
    ),
    _rule("stripe_key", CREDENTIAL, r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _rule("openai_key", CREDENTIAL, r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule("anthropic_key", CREDENTIAL, r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}"),
    _rule("huggingface_token", CREDENTIAL, r"\bhf_[A-Za-z0-9]{30,}"),
    _rule("aliyun_access_key", CREDENTIAL, r"\bLTAI[A-Za-z0-9]{12,24}\b"),
    _rule("tencent_secret_id", CREDENTIAL, r"\bAKID[A-Za-z0-9]{13,40}\b"),
    _rule("jwt", CREDENTIAL, r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _rule("bearer_token", CREDENTIAL, r"\bBearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
    _rule("url_credentials", CREDENTIAL, r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s:/@]{3,})@[\w.-]+"),
    _rule(
        "secret_assignment",
        CREDENTIAL,
        r"\b(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
        r"app[_-]?secret|private[_-]?key|secret)\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9_\-./+=]{8,})",
    ),
    # Chinese "密码是…": a concrete value (letters/digits/symbols), not "密码是什么" or "密码锁".
    _rule(
        "password_zh",
        CREDENTIAL,
        r"(?:密码|口令|密令|PIN码|pin码|开门码|门锁码|支付码)(?:是|为|改成了?|改为|设成了?|设置为|:|：|=|\s)?\s*"
        r"[\"'“「]?(?P<v>[A-Za-z0-9!@#$%^&*()_+\-=.~]{3,})",
        _zh_password_value,
    ),
    _rule(
        "password_zh_tight",
        CREDENTIAL,
        r"(?:登录|支付|银行卡|取款|开门|门锁|账户|账号|邮箱|微信|支付宝)密码\s*(?P<v>\d{4,})",
    ),
    _rule(
        "password_en",
        CREDENTIAL,
        r"\b(?:password|passwd|pwd|passcode|passphrase|pin(?:\s+code)?)\b(?:\s+(?:is|was|=|:)|\s*[:=])\s*"
        r"[\"'“]?(?P<v>[^\s\"'”,;]{3,})",
        _en_password_value,
    ),
    _rule(
        "verification_code_zh",
        VERIFICATION_CODE,
        rf"{_CODE_WORDS_ZH}(?:是|为|:|：|\s|发你|给你|发给你)*\s*(?P<v>(?<![0-9])\d{{4,8}})(?![0-9])",
    ),
    _rule(
        "verification_code_zh_before",
        VERIFICATION_CODE,
        r"(?<![0-9])(?P<v>\d{4,8})\s*(?:是|为)?(?:我的)?(?:验证码|校验码|动态码|动态密码)",
    ),
    _rule(
        "verification_code_otp",
        VERIFICATION_CODE,
        r"\b(?:otp|2fa|mfa|tan)\b\s*(?:code)?\s*(?:is|was|:|=)?\s*(?P<v>\d{4,8})(?![0-9])",
    ),
    _rule(
        "verification_code_en",
        VERIFICATION_CODE,
        r"\b(?:verification|security|confirmation|one[-\s]?time|auth(?:entication)?|login|sms|access|door)\s+"
        r"(?:code|pin|passcode|password)\s*(?:is|was|:|=)?\s*(?P<v>\d{4,8})(?![0-9])",
    ),
    _rule(
        "verification_code_word",
        VERIFICATION_CODE,
        r"(?<!zip )(?<!postal )(?<!area )(?<!post )\bcode\s*(?:is|:)\s*(?P<v>\d{4,8})(?![0-9])",
    ),
    _rule(
        "card_cvv",
        CARD_SECURITY_CODE,
        r"(?:(?<![A-Za-z])(?:cvv|cvc|cvn|csc)2?(?![A-Za-z])|安全码|卡背后三位|背面三位|卡背面)[^0-9\n]{0,6}"
        r"(?P<v>(?<![0-9])\d{3,4})(?![0-9])",
    ),
)

# A long opaque token: letters and digits mixed, high entropy; Chinese and ordinary words never match.
_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_/+=.-])[A-Za-z0-9_+/=-]{24,}(?![A-Za-z0-9_/+=-])")
# WeChat's generated account ids ("wxid_8k2j4h5g6f7d8s9a0p1o2i3u4y") are contact details, not secrets.
_WECHAT_ID_RE = re.compile(r"wxid_[a-z0-9]{6,32}", re.IGNORECASE)
_URL_RE = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
_URL_SECRET_PARAM_RE = re.compile(
    r"[?&](?:access_?token|api_?key|apikey|token|secret|password|sig|signature|key|auth)=([A-Za-z0-9%._~+/=-]{16,})",
    re.IGNORECASE,
)
_HEX_RE = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{32,}(?![0-9a-fA-F])")


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_like_secret_token(token: str) -> bool:
    """detect-secrets' entropy plugins flag ordinary words; demand what real keys look like."""
    stripped = token.strip("=-_")
    if len(stripped) < 24:
        return False
    has_lower = any(c.islower() for c in stripped)
    has_upper = any(c.isupper() for c in stripped)
    digits = sum(c.isdigit() for c in stripped)
    if stripped.isdigit() or digits == 0:
        return False
    # Hex digests (order hashes, file checksums) only count with a keyword nearby; see _HEX_RE.
    if re.fullmatch(r"[0-9a-fA-F]+", stripped):
        return False
    if not (has_lower and has_upper) and digits < 4:
        return False
    # Words joined by separators (file names, slugs, URL paths) are not keys.
    parts = re.split(r"[-_/]", stripped)
    if len(parts) > 2 and all(p.isalpha() or p.isdigit() or len(p) < 6 for p in parts):
        return False
    return _entropy(stripped) >= 3.7


_SECRET_KEYWORD_RE = re.compile(r"key|token|secret|密钥|秘钥|令牌|私钥|凭证|credential|signature|签名", re.IGNORECASE)


@lru_cache(maxsize=1)
def _detect_secrets_plugins() -> tuple[Any, ...]:
    """detect-secrets' regex plugins (not its entropy plugins), loaded once."""
    try:
        from detect_secrets.plugins.artifactory import ArtifactoryDetector
        from detect_secrets.plugins.aws import AWSKeyDetector
        from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
        from detect_secrets.plugins.basic_auth import BasicAuthDetector
        from detect_secrets.plugins.discord import DiscordBotTokenDetector
        from detect_secrets.plugins.github_token import GitHubTokenDetector
        from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
        from detect_secrets.plugins.jwt import JwtTokenDetector
        from detect_secrets.plugins.mailchimp import MailchimpDetector
        from detect_secrets.plugins.npm import NpmDetector
        from detect_secrets.plugins.openai import OpenAIDetector
        from detect_secrets.plugins.private_key import PrivateKeyDetector
        from detect_secrets.plugins.pypi_token import PypiTokenDetector
        from detect_secrets.plugins.sendgrid import SendGridDetector
        from detect_secrets.plugins.slack import SlackDetector
        from detect_secrets.plugins.square_oauth import SquareOAuthDetector
        from detect_secrets.plugins.stripe import StripeDetector
        from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
        from detect_secrets.plugins.twilio import TwilioKeyDetector
    except ImportError:  # pragma: no cover - the dependency is pinned; our own patterns still apply
        return ()
    classes: Iterable[type] = (
        ArtifactoryDetector, AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, MailchimpDetector, NpmDetector, OpenAIDetector,
        PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector, SquareOAuthDetector, StripeDetector,
        TelegramBotTokenDetector, TwilioKeyDetector,
    )  # fmt: skip
    return tuple(cls() for cls in classes)


def _match_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a match: group `v` or the first group that matched, else the whole match."""
    if "v" in match.re.groupindex:
        if match.group("v") is not None:
            return match.span("v")
        return match.span()
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span()


def _secret_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    """(rule, category, start, end) of every secret in one view of the message."""
    for rule in _SECRET_RULES:
        for match in rule.regex.finditer(text):
            start, end = _match_span(match)
            if rule.accept is not None and not rule.accept(text[start:end]):
                continue
            yield rule.name, rule.category, start, end
    for plugin in _detect_secrets_plugins():
        for regex in getattr(plugin, "denylist", ()):
            try:
                for match in regex.finditer(text):
                    yield f"ds_{type(plugin).__name__}", CREDENTIAL, *_match_span(match)
            except Exception:  # pragma: no cover - a plugin's own regex must never break capture
                continue
    urls = list(_URL_RE.finditer(text))
    for url in urls:
        for param in _URL_SECRET_PARAM_RE.finditer(url.group()):
            yield "url_secret_param", CREDENTIAL, url.start() + param.start(1), url.start() + param.end(1)
    # Tokens and hex digests are looked for outside URLs (paths and slugs are not keys).
    outside = _URL_RE.sub(lambda m: " " * len(m.group()), text)
    for token in _TOKEN_RE.finditer(outside):
        if not _WECHAT_ID_RE.fullmatch(token.group()) and _looks_like_secret_token(token.group()):
            yield "opaque_token", CREDENTIAL, token.start(), token.end()
    if _SECRET_KEYWORD_RE.search(outside):
        for token in _HEX_RE.finditer(outside):
            if any(c.isalpha() for c in token.group()) and any(c.isdigit() for c in token.group()):
                yield "hex_secret", CREDENTIAL, token.start(), token.end()


# --- personal numbers: mainland ID cards, bank cards, mobiles ---------------------------------

# Digit runs with at most one space or dash between digits ("6222 0212 3456 7890 123").
_ID_CARD_RE = re.compile(r"(?<![0-9A-Za-z])\d(?:[ -]?\d){16}[ -]?[0-9Xx](?![0-9A-Za-z])")
_CARD_RUN_RE = re.compile(r"(?<![0-9A-Za-z])\d(?:[ -]?\d){14,18}(?![0-9A-Za-z])")
# A label just before the number (same clause) says what it is; a label beats the bare rules.
_CLAUSE_TAIL = r"[^0-9\n。，,；;！!？?]{0,8}$"
_CARD_CONTEXT_RE = re.compile(
    r"(?:卡号|银行卡|信用卡|储蓄卡|借记卡|工资卡|银联|开户行|收款账户|银行账户|银行账号|"
    r"card|visa|master\s?card|amex|unionpay)" + _CLAUSE_TAIL,
    re.IGNORECASE,
)
# Weaker: "用卡6222…" or "6222…这张卡", unless an order or waybill label says otherwise.
_CARD_NEAR_BEFORE_RE = re.compile(r"卡[:：是为\s]{0,2}$")
_CARD_NEAR_AFTER_RE = re.compile(r"^\s?(?:这张|那张|的)?(?:银行卡|信用卡|储蓄卡|卡)(?![券住顿了])")
_ID_CONTEXT_RE = re.compile(r"(?:身份证|证件|身份号|公民身份|id\s?card|\bid\b|\bid\s?no)" + _CLAUSE_TAIL, re.IGNORECASE)
# ...and these make a number something else (order, waybill, invoice, contract numbers).
_OTHER_NUMBER_CONTEXT_RE = re.compile(
    r"(?:订单|单号|编号|流水|快递|运单|物流|工单|合同|发票|票号|房源|批次|序列号|order|tracking|invoice|ref|serial)"
    + _CLAUSE_TAIL,
    re.IGNORECASE,
)
_CONTEXT_WINDOW = 16


def _digits(value: str) -> str:
    return re.sub(r"[^0-9Xx]", "", value).upper()


def _before(text: str, start: int) -> str:
    return text[max(0, start - _CONTEXT_WINDOW) : start]


def _is_id_card(text: str, start: int, end: int) -> bool:
    # ric checks the length, the birth date, the birth place and the check digit.
    if not ric.is_valid(_digits(text[start:end])):
        return False
    before = _before(text, start)
    return bool(_ID_CONTEXT_RE.search(before)) or not _OTHER_NUMBER_CONTEXT_RE.search(before)


def _is_bank_card(text: str, start: int, end: int) -> bool:
    digits = _digits(text[start:end])
    before = _before(text, start)
    if _CARD_CONTEXT_RE.search(before):
        return 15 <= len(digits) <= 19
    if _OTHER_NUMBER_CONTEXT_RE.search(before):
        return False
    if _CARD_NEAR_BEFORE_RE.search(before) or _CARD_NEAR_AFTER_RE.search(text[end : end + 8]):
        return 15 <= len(digits) <= 19
    # A bare number: 16–19 digits, a card network's leading digit (UnionPay 62, Visa 4, Mastercard 5,
    # JCB/Discover 3 and 6), a valid Luhn check and not a repeated pattern.
    return 16 <= len(digits) <= 19 and digits[0] in "3456" and len(set(digits)) > 3 and bool(luhn.is_valid(digits))


def _personal_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    if sum(c.isdigit() for c in text) < 11:
        return
    ids: list[tuple[int, int]] = []
    for match in _ID_CARD_RE.finditer(text):
        if _is_id_card(text, match.start(), match.end()):
            ids.append(match.span())
            yield "id_card", ID_CARD, match.start(), match.end()
    for match in _CARD_RUN_RE.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in ids):
            continue
        if _is_bank_card(text, match.start(), match.end()):
            yield "bank_card", BANK_CARD, match.start(), match.end()
    yield from _mobile_hits(text)


def _mobile_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    """Mainland mobiles as libphonenumber reads them: 13812345678, 138 1234 5678, +86-138-1234-5678."""
    for match in phonenumbers.PhoneNumberMatcher(text, "CN", leniency=phonenumbers.Leniency.VALID):
        number = match.number
        if (
            phonenumbers.region_code_for_number(number) == "CN"
            and phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE
        ):
            yield "mobile", MOBILE, match.start, match.end


# --- views of the message, mapped back to its characters ----------------------------------------


@dataclass(frozen=True)
class _View:
    """A normalised reading of the message; `origin[i]` is the raw index of its i-th character."""

    text: str
    origin: tuple[int, ...]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        return self.origin[start], self.origin[end - 1] + 1


# One separator between one-character tokens is spacing meant to evade ("密 码 是 a b c 1 2 3").
_SQUEEZABLE = frozenset(" \t\u00a0·•_*.-")


def _is_cjk(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _folded_view(raw: str) -> _View:
    """NFKC one character at a time (full-width forms fold, indexes survive), hidden characters dropped."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(raw):
        if _HIDDEN_RE.match(char) or char == "\ufeff" or char == _ZWJ:
            continue
        for folded in unicodedata.normalize("NFKC", char):
            chars.append(folded)
            origin.append(index)
    return _View("".join(chars), tuple(origin))


def _squeezed_view(view: _View) -> _View:
    text = view.text
    last = len(text) - 1

    def separator(i: int) -> bool:
        return text[i] in _SQUEEZABLE or text[i].isspace()

    def word(i: int) -> bool:
        return text[i].isascii() and text[i].isalnum()

    def single(i: int) -> bool:
        # A character standing alone: a CJK character, or a letter or digit with no letter or digit
        # on either side. "am" in "I am" is not single, so words keep their spaces.
        if separator(i):
            return False
        if _is_cjk(text[i]):
            return True
        return (i == 0 or not word(i - 1)) and (i == last or not word(i + 1))

    keep = [i for i in range(len(text)) if not (0 < i < last and separator(i) and single(i - 1) and single(i + 1))]
    return _View("".join(text[i] for i in keep), tuple(view.origin[i] for i in keep))


def _views(raw: str) -> list[_View]:
    folded = _folded_view(raw)
    squeezed = _squeezed_view(folded)
    return [folded] if squeezed.text == folded.text else [folded, squeezed]


@dataclass(frozen=True, order=True)
class Span:
    """Where a secret or a personal number sits in the message as received: `text[start:end]`."""

    start: int
    end: int
    category: str
    rule: str = ""


# When spans overlap, the stronger reading wins: a password that looks like a mobile is a password.
_PRIORITY = {
    CREDENTIAL: 0,
    VERIFICATION_CODE: 1,
    CARD_SECURITY_CODE: 2,
    BANK_CARD: 3,
    ID_CARD: 4,
    MOBILE: 5,
}


def _merge(spans: Iterable[Span]) -> tuple[Span, ...]:
    merged: list[Span] = []
    for span in sorted(spans):
        if merged and span.start < merged[-1].end:
            previous = merged[-1]
            stronger = previous if _PRIORITY[previous.category] <= _PRIORITY[span.category] else span
            merged[-1] = Span(previous.start, max(previous.end, span.end), stronger.category, stronger.rule)
        else:
            merged.append(span)
    return tuple(merged)


# The Workbench and the APIs re-quote the same recent messages on every poll.
@lru_cache(maxsize=1024)
def _find_sensitive(raw: str) -> tuple[Span, ...]:
    found: list[Span] = []
    for view in _views(raw):
        if not view.text:
            continue
        for hits in (_secret_hits(view.text), _personal_hits(view.text)):
            for rule, category, start, end in hits:
                if end > start:
                    found.append(Span(*view.raw_span(start, end), category, rule))
    return _merge(found)


def find_sensitive(text: str) -> list[Span]:
    """Every credential, one-time code, CVV, ID-card, bank-card and mobile number in `text`, as
    non-overlapping spans of the text as received (spaced-out and full-width forms included)."""
    return list(_find_sensitive(text or ""))


def without_personal_numbers(text: str, spans: Iterable[Span]) -> str:
    """What capture reads: the message with its ID-card, bank-card and mobile numbers cut out."""
    out: list[str] = []
    last = 0
    for span in sorted(spans):
        if span.category not in PERSONAL_NUMBER_CATEGORIES or span.start < last:
            continue
        out.append(text[last : span.start])
        out.append(" ")
        last = span.end
    out.append(text[last:])
    return "".join(out)


def _injection_rules(text: str) -> list[str]:
    hits: list[str] = []
    retraction = _SELF_RETRACTION.search(text) is not None
    for name, regex in _COMPILED_INJECTION:
        match = regex.search(text)
        if match is None:
            continue
        if retraction and name in {
            "override_zh_above",
            "override_en_above",
            "override_en_everything",
            "override_then_output",
        }:
            continue
        hits.append(name)
    return hits


# Four or more single Latin letters joined by one separator each ("i g n o r e", "s.y.s.t.e.m");
# a double space stays a word break, so "i g n o r e  a l l" collapses to "ignore all".
_SPACED_LATIN_RE = re.compile(r"(?<![A-Za-z])[A-Za-z](?:(?:[.·•_*\-]| (?! ))[A-Za-z]){3,}(?![A-Za-z])")

# When every letter is spaced the word breaks are gone too; these run on the letters alone.
_SQUEEZED_INJECTION_RE = re.compile(
    r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your|previous|prior|above|earlier|system)*"
    r"(?:instructions?|prompts?|rules|guidelines|directives?)"
    r"|systemprompt|developermode|jailbreak|youarenow(?:an?)?(?:unrestricted|unfiltered|evil|dan)"
)


def _collapse_spacing(text: str) -> str:
    # "忽 略 以 上 指 令" and "i g n o r e" style spacing evades naive patterns.
    collapsed = re.sub(r"(?<=[\u4e00-\u9fff])[\s·•_*\-.]+(?=[\u4e00-\u9fff])", "", text)
    collapsed = _SPACED_LATIN_RE.sub(lambda m: re.sub(r"[^A-Za-z]", "", m.group()), collapsed)
    return re.sub(r"  +", " ", collapsed) if collapsed != text else collapsed


def _spaced_latin_rules(text: str) -> list[str]:
    if not _SPACED_LATIN_RE.search(text):
        return []
    squeezed = re.sub(r"[^a-z]", "", text.lower())
    return ["spaced_letters"] if _SQUEEZED_INJECTION_RE.search(squeezed) else []


def scan(text: str) -> ScanResult:
    """Scan a message before capture: blocked when it carries instructions, hidden characters or a
    secret; its personal numbers are reported in `spans` without blocking."""
    raw = text or ""
    categories: list[str] = []
    rules: list[str] = []
    if _hidden_characters(raw):
        categories.append(HIDDEN_CHARACTERS)
        rules.append("hidden_characters")
    normalised = fold_compatibility(raw)
    visible = _HIDDEN_RE.sub("", normalised)
    injection = _injection_rules(visible)
    collapsed = _collapse_spacing(visible)
    if collapsed != visible:
        injection += [rule for rule in _injection_rules(collapsed) if rule not in injection]
    injection += [rule for rule in _spaced_latin_rules(visible) if rule not in injection]
    if injection:
        categories.append(PROMPT_INJECTION)
        rules += injection
    spans = _find_sensitive(raw)
    secret_rules = list(dict.fromkeys(span.rule for span in spans if span.category in SECRET_CATEGORIES))
    if secret_rules:
        categories.append(CREDENTIAL)
        rules += secret_rules
    return ScanResult(blocked=bool(categories), categories=categories, rules=rules, spans=spans)
