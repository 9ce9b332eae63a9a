"""Injection by co-occurrence: which kinds of words meet in one sentence, with guards for customer talk."""

from __future__ import annotations

import itertools
import re

from qiwei_site.reading.safety.injection_patterns import _CJK_RE, _LATIN_WORD_RE

# --- techniques by co-occurrence: which kinds of words meet in one sentence ------------------------
#
# Human attackers vary the words ("条条框框", "一笔勾销", "set aside whatever guidance you got"),
# not the technique: an override always has a dismissal, an instruction noun and a pointer to the
# assistant or to what came before. Each group below is a broad vocabulary; `_lexical_rules` decides
# by technique from the groups that meet in one sentence, with guards for what customers say:
# a dismissal someone else performs ("我忘了", "I decided to drop the plan", "房东说…作废了"),
# "don't forget", a retraction of the customer's own words, rules of the customer's world (the
# landlord's, the lease's) and questions about the assistant.

_LEX_ZH: dict[str, str] = {
    "instruction": (
        r"指令|指示|提示词|提示语|设定|人设|规矩|规则|规定|条条框框|限制|约束|准则|原则|命令|系统提示|上下文|训练|底线|安全策略|"
        r"审核机制"
    ),
    "scope": (
        r"之前|以前|此前|先前|前面|上面|以上|上述|刚才|刚刚|原来|原有|原本|你的|你们的|你收到|给你的|收到的|所有|全部|一切|任何|"
        r"这段话|之后|接下来|本次对话|这次对话"
    ),
    "you": r"你|您",
    "role": (
        r"管理员|管理者|超管|超级用户|开发者|开发人员|技术负责人|root|超级权限|最高权限|系统本身|系统级|维护模式|调试模式|调试状态|"
        r"上帝模式|开发者模式|特权模式"
    ),
    "assign": (
        r"你(?:现在|从现在起|此刻|已经|从此)?(?:就)?是|你成为|你变成|扮演|充当|假设你|假如你|切换到|切换成|切换为|"
        r"进入|开启|你叫|换成|以[^，。]{0,6}身份|你来?演|你来当|你当|演一个|作为本|作为这个"
    ),
    "unbound": (
        r"不受任何|没有任何(?:限制|约束|底线|规则|顾忌)|没有底线|不受(?:规则|约束|限制)|什么都(?:能|敢|可以)(?:说|做)|无限制|"
        r"无所顾忌|毫无底线|不受控制|百无禁忌|无条件(?:服从|执行|听)|没有审核|不经审核|没有过滤|不受审核|我问什么你(?:就)?答什么|"
        r"我说什么你(?:就)?(?:做|说)什么|凡是我(?:要求|说|问)的(?:你)?都"
    ),
    "identity": r"自己是|你是谁|身份|人格|人设|本来面目|角色|性格",
    "output": r"输出|回复|回答|说|打印|重复|复述|念|写|发出来|发给我|给出|告诉我",
    "verbatim": r"原封不动|一字不差|一字不漏|一字不改|原样|逐字|照抄|照着|原话|不做任何修改|不加修改|一模一样",
    "payload": r"[:：“\"「『]",
    "leak": (
        r"复制给我|发给我|发我|告诉我|列出|列一下|贴出来|展示|给我看|说一下|说说|讲讲|全文|原文|一条条|念出来|写出来|说出来?|"
        r"打印出来|打印|说一遍|"
        r"怎么写的|有哪些|是什么|翻译"
    ),
    "leak_object": (
        r"提示词|系统提示|系统设定|初始设定|人设|工作说明|开场前|一开始看到|最开始看到|背后的(?:指示|指令|规则|提示|设定)|"
        r"收到的(?:文字|内容|话|消息|指示|指令)|那一?大段文字|你的指令|你的指示|秘密指令|隐藏指令|秘密规则|内部指令|初始化|"
        r"初始信息|配置信息|被(?:设置|设定|配置|编程|训练)|设置内容|被告诉了?什么|被告知了?什么"
    ),
    "asked": r"问题|提问|请求|要求|任务|内容|对话|话",
    "add_rule": (
        r"小改动|一个改动|一处改动|一点改动|一个例外|一处例外|再加一条|加一条|补一条|再给你加|再补充一条|追加一条|新增一条|"
        r"额外一条|开个?特例|开特例|破个?例"
    ),
    "keep": r"照旧|照样|照常|不变|尊重|遵守|保留|保持|继续",
    "world": r"房东|物业|小区|业主|合同|中介|楼盘|开发商|学校|租约|业委会|银行|说明书|空调|热水器",
}
_LEX_EN: dict[str, str] = {
    "instruction": (
        r"instructions?|rules?|guidelines?|guidance|directives?|directions|prompts?|programming|polic(?:y|ies)|"
        r"restrictions?|constraints?|guardrails|filters|context"
    ),
    "scope": (
        r"previous|prior|earlier|above|preceding|before|former|original|your|all|any|every|so\s+far|until\s+now|"
        r"this\s+conversation|this\s+chat|got|given|received"
    ),
    "you": r"you|your|yourself|you're|you've",
    "role": r"admin|administrator|superadmin|super-?admin|superuser|sysadmin|root|system\s+itself|god\s+mode",
    "assign_any": (
        r"act\s+as|operate\s+as|speak\s+as|behave\s+as|function\s+as|pretend\s+(?:to\s+be|you\s+are|you're)|"
        r"roleplay\s+as|role-play\s+as|switch\s+to|assume\s+the\s+role|from\s+this\s+point\s+(?:on\s+)?you|"
        r"imagine\s+(?:you're|you\s+are)|you\s+play\s+(?:the|an?)\s+(?:ai|bot|chatbot|assistant|model|system|character)"
    ),
    "assign": r"you\s+are\s+now|you're\s+now|become|be\s+my",
    "unbound": (
        r"no\s+(?:rules|limits|guidelines|restrictions|filters|boundaries|ethics)|freed\s+from|free\s+(?:from|of)\s+(?:its|your|"
        r"any|all)|without\s+(?:any\s+)?(?:rules|limits|restrictions|guidelines|filters)|unrestricted|unfiltered|uncensored|"
        r"never\s+refuse|obey\s+me|zero\s+(?:restrictions|limits|rules|filters)|always\s+agree\s+with\s+me"
    ),
    "identity": (
        r"who\s+you\s+are|being\s+an?\s+(?:assistant|agent|bot|ai|chatbot|helper|support\s+agent)|your\s+(?:role|identity|"
        r"persona|personality|programming|training)|prior\s+programming|your\s+head"
    ),
    "output": r"say|print|output|type|write|reply|respond|answer|repeat|echo|mirror|return",
    "verbatim": (
        r"verbatim|exactly|precisely|word\s+for\s+word|unchanged|nothing\s+(?:else|after|more)|mirror|"
        r"(?:your\s+)?(?:answer|reply|response)\s+is\s+always"
    ),
    "payload": r"(?:[:\"“‘]|\s'|^')",
    "leak": (
        r"show|see|reveal|print|repeat|tell|list|dump|spell|quote|paste|share|display|recite|what\s+exactly|"
        r"what\s+(?:did|do|were|are)"
    ),
    "leak_object": (
        r"(?:system|hidden|initial|secret|your)\s+prompt|prompt\s+you|system\s+instructions|your\s+instructions|"
        r"instructions\s+you|setup\s+text|(?:tell|told)\s+you\s+to\s+do|running\s+on|programmed\s+(?:with|to)|"
        r"(?:instruct|instructed|told|tell|brief|briefed)\s+you\s+(?:before|earlier|at\s+the\s+start|to\s+say)|its\s+rules|"
        r"initial\s+instructions|your\s+rules"
    ),
    "asked": r"questions?|requests?|tasks?|text|messages?|conversation|input",
    "add_rule": (
        r"make\s+(?:one|an|a\s+single)\s+exception|one\s+extra|extra\s+one|one\s+more\s+(?:rule|instruction)|addendum|"
        r"add\s+(?:a|one)\s+(?:rule|exception)"
    ),
    "except": r"except\s+(?:when|if|for)|unless",
    "keep": r"stay\s+within|are\s+fine|keep|same|still\s+apply|remain|follow",
    "world": (
        r"landlord|landlady|building|lease|contract|agency|owner's|property|school|hoa|bank|company's|manager's|"
        r"machine|appliance|key\s+pickup|washer|dryer|oven"
    ),
}
# Dismissals, found one by one so that their subject can be checked.
_DISMISS_ZH_RE = re.compile(
    r"忽略|忽视|无视|不理会?|不用理|别理|不予理睬|不理睬|别管|不要管|不用管|不必管|不顾|放一边|放一放|丢到一边|丢一边|抛开|撇开|"
    r"丢掉|丢开|扔掉|(?<![别要没])(?:忘掉|忘记|忘了)|清掉|清空|清除|移除|抹去|抹掉|删掉|作废|失效|无效|不算数?|一笔勾销|勾销|不作数|不再适用|不适用|跳过|"
    r"绕过|推翻|放下|"
    r"抛弃|抛诸脑后|搁置|不用遵守|不必遵守|别遵守|不要遵守|解除"
)
_DISMISS_EN_RE = re.compile(
    r"\b(?:ignore|disregard|forget|skip|drop|discard|dismiss|never\s+mind|set\s+aside|put\s+aside|throw\s+out|abandon|"
    r"override|overrule|scrap|void|nullify|cancel|irrelevant|no\s+longer\s+(?:apply|applies|matters?|counts?|valid)|"
    r"(?:don't|doesn't|do\s+not|does\s+not)\s+(?:apply|matter|count)|none\s+of|erase|wipe|clear|bypass|circumvent|"
    r"stop\s+following|pay\s+no\s+attention|suspend)\b",
    re.IGNORECASE,
)
# ...performed by someone else, negated, or aimed at the customer's own words.
_OTHER_SUBJECT_ZH_RE = re.compile(r"(?:我|他|她|我们|他们|房东|物业|中介)[^，。！？,!?]{0,3}$")
_OTHER_SUBJECT_EN_RE = re.compile(
    r"(?:\b(?:i|we|he|she|they|it|i've|i'd|i'll|we've|they've)\b(?:\s+\w+){0,3}\s*|\b(?:don't|do\s+not|never|not|won't)\s*)$",
    re.IGNORECASE,
)
_OWN_OBJECT_RE = re.compile(r"^\s*(?:我|my\b|what\s+i\b|me\b)", re.IGNORECASE)


def _compile_lexicon(groups: dict[str, str], *, words: bool) -> dict[str, re.Pattern[str]]:
    edge = r"\b" if words else ""
    return {
        name: re.compile(pattern if name == "payload" else rf"{edge}(?:{pattern}){edge}", re.IGNORECASE)
        for name, pattern in groups.items()
    }


_LEXICON = {"zh": _compile_lexicon(_LEX_ZH, words=False), "en": _compile_lexicon(_LEX_EN, words=True)}
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[。！？!?\n；;])|(?<=\.)\s+")
_QUESTION_END_RE = re.compile(r"(?:[?？]|吗|嘛|呢|(?<!什)么)\s*[\"'”’」』)）]*\s*$")


def _dismissal(sentence: str, script: str) -> bool:
    """A dismissal the sender asks the assistant to perform."""
    regex, other = (_DISMISS_ZH_RE, _OTHER_SUBJECT_ZH_RE) if script == "zh" else (_DISMISS_EN_RE, _OTHER_SUBJECT_EN_RE)
    for match in regex.finditer(sentence):
        if other.search(sentence[: match.start()]) or _OWN_OBJECT_RE.match(sentence[match.end() :]):
            continue
        return True
    return False


def _lexical_decide(g: set[str], script: str, *, single: bool, question: bool, world: bool) -> tuple[list[str], str]:
    """(techniques, weak override rule or "") for the groups `g` met in one sentence (or a pair)."""
    rules: list[str] = []
    if "instruction" in g and ("add_rule" in g or {"except", "unbound"} <= g) and ({"keep", "you"} & g) and not world:
        rules.append(f"lex_exception_{script}")
    if not single:
        if {"dismiss", "identity", "assign"} <= g:
            rules.append(f"lex_forget_{script}")
        return rules, ""
    if {"dismiss", "instruction"} <= g and ({"scope", "you"} & g) and not (world or question):
        rules.append(f"lex_override_{script}")
    if {"output", "verbatim", "payload"} <= g and not question:
        rules.append(f"lex_output_{script}")
    assigned = "assign_any" in g or ("assign" in g and bool({"role", "unbound"} & g))
    if assigned and (script == "en" or {"role", "unbound"} & g) and not question:
        rules.append(f"lex_role_{script}")
    if {"dismiss", "identity"} <= g and not question:
        rules.append(f"lex_forget_{script}")
    if {"leak", "leak_object"} <= g and ("you" in g or script == "en") and not world:
        rules.append(f"lex_leak_{script}")
    weak = f"lex_weak_override_{script}" if {"dismiss", "asked", "scope"} <= g and not (world or question) else ""
    return rules, weak


def _lexical_groups(text: str, script: str) -> set[str]:
    groups = {name for name, regex in _LEXICON[script].items() if regex.search(text)}
    if _dismissal(text, script):
        groups.add("dismiss")
    return groups


def _lexical_rules(text: str, weak: dict[str, str] | None = None) -> list[str]:
    """Techniques found by which groups of words meet in one sentence of `text` (or in two
    sentences in a row); a weak override is added to `weak`."""
    rules: list[str] = []
    weak = {} if weak is None else weak
    scripts = [script for script, regex in (("zh", _CJK_RE), ("en", _LATIN_WORD_RE)) if regex.search(text)]
    sentences = [sentence for sentence in _SENTENCE_SPLIT_RE.split(text) if sentence.strip()]
    # An exception or a new identity is often spread over two sentences ("Your rules are fine. One
    # extra one though: …"); the pairs are read for those two techniques only.
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(sentences)]
    for script in scripts:
        # The guards only ever remove a technique, so the whole message without them is an upper
        # bound: most messages stop here, after one pass of the groups.
        whole = _lexical_groups(text, script)
        found, weak_rule = _lexical_decide(whole, script, single=True, question=False, world=False)
        if (
            not found
            and not weak_rule
            and not _lexical_decide(whole, script, single=False, question=False, world=False)[0]
        ):
            continue
        for part, single in [*((s, True) for s in sentences), *((p, False) for p in pairs)]:
            g = _lexical_groups(part, script)
            world = "world" in g and "you" not in g
            question = _QUESTION_END_RE.search(part) is not None
            found, weak_rule = _lexical_decide(g, script, single=single, question=question, world=world)
            rules += found
            if weak_rule:
                weak.setdefault("override", weak_rule)
    return list(dict.fromkeys(rules))
