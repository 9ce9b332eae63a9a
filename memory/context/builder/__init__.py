"""AgentContextBuilder (spec §4, DESIGN §8): the only place a model prompt is assembled.

Sections, in order: instructions (persona, rules, safety boundary) · core memory snapshot ·
recalled older history · business state · recent conversation · the latest customer message ·
the output contract. The same inputs give a byte-identical prompt and trace.

The recent conversation ends at the newest message (issue 39): what our side said after the
message being answered (before the customer's next one) is in it, in order, and the latest
message section then says it was already replied to (`ALREADY_ANSWERED_NOTE`; trace
`already_answered`, `answered_by_message_ids`). The latest message section still holds the
message being answered.

Memory is data in the prompt. Quoted history and core memory go through one function
(`quoted_text`: NFKC, then `neutralise`), so no customer- or model-derived text can form one of
our section headers, a delimiter, a code fence, a Markdown heading, a role turn or a closing
quote; each memory item is introduced as what it is (客户陈述的事实, 主管备注, 待确认推断 ...).
The stored snapshot keeps its plain format (governance's forget edits its lines); the labels and
the neutralisation are applied here, when the prompt is rendered.

Budgets, in the order they are applied (every allowed setting, PROMPT >= 2000, keeps the output
contract and the rules whole):
1. The output contract is always whole.
2. Room for the latest customer message is reserved: the whole block, or LATEST_RESERVE_CHARS
   when it is longer.
3. The instructions get QIWEI_AGENT_CONTEXT_CHAR_LIMIT, or what the prompt has left after 1 and
   2 when that is less. When the knowledge base does not fit, it is kept by Markdown section
   and by priority: safety-boundary sections first (heading 安全/边界/隐私/禁止), then rule
   sections (规则/规范/要求), then persona and business background in document order. A section
   is kept whole or left out (named in the trace, marked in the prompt), never cut in half; only a
   single safety section longer than the whole budget is cut.
4. The latest customer message gets what the prompt has left after 1 and 3 (at most the
   conversation budget); a longer one is shortened and marked "…（消息过长，已截断）" before any
   other section gives way. It is always present.
5. Core memory, business state and history fit into what is left: the oldest history goes first
   (conversation budget, then the prompt), then the business state is shortened, then core memory
   loses its last items (hypotheses first).
Only limits below the allowed ranges (tests) can still force the instructions, the contract and
finally the latest message to be shortened.

A memory section that fails is left out (and audited); when memory cannot be read at all, the
caller asks for a degraded build: instructions, the latest customer message and the contract.

Cost (issue 20): a warm build is one indexed read, the customer's context version with the
profile row (`memory/sql.py: version_and_profile`), then the answer cache (`build.py: _AnswerCache`)
keyed on it. The database bumps the version on every write of anything the context reads
(`conversations/context_version.py`, triggers), so in-place scrubs, forget and edits are never
served stale; a build inside a transaction neither reads nor fills the cache. A cold build reads
with plain ORM (the knowledge-index version, the snapshot, its human-written items, one query for
the recent window and the recall candidates, one per business-state table), then computes.
"""

from __future__ import annotations

from memory.context.builder.build import (
    CONTEXT_CACHE_BYTES_DEFAULT,
    AgentContextBuilder,
    build_context,
    context_cache_clear,
)
from memory.context.builder.layout import (
    ALREADY_ANSWERED_NOTE,
    BACKGROUND,
    BUSINESS_STATE,
    CORE_MEMORY,
    DEGRADED_NOTICE,
    HEADER_RE,
    INSTRUCTIONS,
    KNOWLEDGE_OMITTED,
    KNOWLEDGE_READ_LIMIT,
    LATEST_MESSAGE,
    LATEST_RESERVE_CHARS,
    LATEST_TRUNCATED,
    MEMORY_END,
    MEMORY_NOTICE,
    OUTPUT_CONTRACT,
    QUOTE_END,
    QUOTE_NOTICE,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    RULES,
    SAFETY,
    TITLES,
    TRUNCATED,
    BuiltContext,
    MemoryFailure,
    Section,
    knowledge_blocks,
    output_contract,
)
from memory.context.builder.quoting import (
    DISPLAY_TZ,
    HUMAN_KINDS,
    MEMORY_LABELS,
    memory_line,
    quote_line,
)
from memory.context.builder.reads import (
    LATEST_SLACK,
    REPLIES_AFTER_LIMIT,
)
from qiwei_site.reading.quoting import neutralise, quoted_text

# The public names only (issue 39, item 7): helpers stay in their modules, where their tests import them.
__all__ = [
    "ALREADY_ANSWERED_NOTE",
    "BACKGROUND",
    "BUSINESS_STATE",
    "CONTEXT_CACHE_BYTES_DEFAULT",
    "CORE_MEMORY",
    "DEGRADED_NOTICE",
    "DISPLAY_TZ",
    "HEADER_RE",
    "HUMAN_KINDS",
    "INSTRUCTIONS",
    "KNOWLEDGE_OMITTED",
    "KNOWLEDGE_READ_LIMIT",
    "LATEST_MESSAGE",
    "LATEST_RESERVE_CHARS",
    "LATEST_SLACK",
    "LATEST_TRUNCATED",
    "MEMORY_END",
    "MEMORY_LABELS",
    "MEMORY_NOTICE",
    "OUTPUT_CONTRACT",
    "QUOTE_END",
    "QUOTE_NOTICE",
    "RECALLED_HISTORY",
    "RECENT_CONVERSATION",
    "REPLIES_AFTER_LIMIT",
    "RULES",
    "SAFETY",
    "TITLES",
    "TRUNCATED",
    "AgentContextBuilder",
    "BuiltContext",
    "MemoryFailure",
    "Section",
    "build_context",
    "context_cache_clear",
    "knowledge_blocks",
    "memory_line",
    "neutralise",
    "output_contract",
    "quote_line",
    "quoted_text",
]
