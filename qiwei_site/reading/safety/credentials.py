"""Credentials by shape and context: command-line flags, HTTP auth headers, URLs with secrets, connection strings,
`.env` assignments, private keys, detect-secrets' keyword and regex plugins, one-time codes and CVVs by context.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from qiwei_site.reading.safety.categories import CARD_SECURITY_CODE, CREDENTIAL, VERIFICATION_CODE

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


def _pinyin_password_value(value: str) -> bool:
    return any(c.isdigit() for c in value) and _zh_password_value(value)


def _en_password_value(value: str) -> bool:
    if _PLACEHOLDER_RE.search(value.strip("\"'")):
        return False
    # "password is not 1234": the first word decides whether a value follows at all.
    first = value.split()[0].lower().rstrip(".!?")
    value = value.lower().rstrip(".!?")
    if value in _VALUE_STOPWORDS_EN or first in _VALUE_STOPWORDS_EN or len(value) < 3:
        return False
    return not (value.isalpha() and len(value) < 6)


def _en_password_value_with_digit(value: str) -> bool:
    # Where the cue is short or loose ("pass: …", "pwd Zw@2024abc"), only a value whose first piece
    # has a digit ("pass: gate 12", "password reset" and "bus pass: monthly" are words).
    first = value.split()[0]
    return any(c.isdigit() for c in first) and len(value.replace(" ", "")) >= 4 and _en_password_value(value)


def _code_value(value: str) -> bool:
    return 4 <= sum(c.isdigit() for c in value) <= 8


# A value that stands for a secret without being one: "$TOKEN", "${DB_PASSWORD}", "<your-key>",
# "your_api_key_here", "changeme", "******".
_PLACEHOLDER_RE = re.compile(
    r"^(?:[$%<{\[]|\*{3,}|•+|x{3,}|\.{3,}|_{3,}|-{3,})|\$\{|\{\{"
    r"|^(?:changeme|change_me|example|sample|placeholder|redacted|hidden|none|null|nil|true|false|yes|no|undefined|"
    r"empty|password|passwd|secret|token|value|string|test|dummy|required|optional|bearer|basic|token|digest|here|"
    r"xxx\w*|your[\w.-]*|my[_-]?(?:password|secret|token|key)\w*|\w*_here)$",
    re.IGNORECASE,
)
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "api-key", "key", "negotiate", "otp"})


def _mixed(value: str) -> bool:
    """Letters of both cases and a digit: what a generated token looks like, not a word or a name."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def _id_value(value: str) -> bool:
    # "0000-…" or "aaaa…" is a placeholder; a real id mixes letters and digits.
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _credential_value(value: str) -> bool:
    """A concrete secret value on a command line, in a header or an assignment."""
    value = value.strip("\"'`")
    if len(value) < 4 or _PLACEHOLDER_RE.search(value) or value.lower() in _AUTH_SCHEMES:
        return False
    if value.lower().startswith(("http://", "https://")):
        return False
    return value.lower().rstrip(".!?") not in _VALUE_STOPWORDS_EN


def _user_password_value(value: str) -> bool:
    # "-u 1000:1000" is a uid:gid and "-u ops@host:/backup" a remote path, not a user and password.
    return _credential_value(value) and not value.isdigit() and not value.startswith(("/", "~"))


def _url_param_value(value: str) -> bool:
    return _credential_value(value) and (any(c.isdigit() for c in value) or len(value) >= 12)


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
# A value may be typed with single spaces inside ("密码是 abcd 1234", "开门码 12 34 56"): a later piece
# has two characters or more; in English it also needs a digit or a symbol ("Sunny 2024!", not
# "wrong again"). A one-time code may be grouped as it is displayed ("482 913").
_VALUE_CHAR = r"[A-Za-z0-9!@#$%^&*()_+\-=.~]"
_ZH_VALUE = rf"(?:{_VALUE_CHAR}{{3,}}|{_VALUE_CHAR}{{2}}(?= {_VALUE_CHAR}{{2}}))(?: {_VALUE_CHAR}{{2,}})*"
_EN_VALUE_CHAR = r"[^\s\"'”,;]"
_EN_VALUE = rf"{_EN_VALUE_CHAR}{{3,}}(?: (?={_EN_VALUE_CHAR}*[0-9!@#$%^&*_+=~]){_EN_VALUE_CHAR}{{2,}})*"
_CODE_VALUE = r"(?<![0-9])(?:\d{2,4}(?: \d{2,4}){1,3}|\d{4,8})(?![0-9])"
# English cue words are read as words even where Chinese touches them ("我的passwd是…"): \b would
# not see a boundary between 的 and p. Each opens with its letter and looks behind it afterwards, so
# the regex engine can skip to the next "p" (a pattern opening with a look-behind is tried everywhere).
_EN_PASSWORD_CUE = r"p(?<![A-Za-z0-9]p)(?:assword|asswd|wd|asscode|assphrase|in(?:\s+code)?)(?![A-Za-z0-9])"
_EN_PASSWORD_WORD = r"p(?<![A-Za-z0-9]p)(?:assword|asswd|wd|asscode)(?![A-Za-z0-9])"
# "pass" and "pw", not a pass one shows ("boarding pass: CA1234").
_EN_PASS_CUE = "p(?<![A-Za-z0-9-]p)(?:ass{}|w)(?![A-Za-z0-9-])".format(
    "".join(
        rf"(?<!{word} pass)(?<!{word}-pass)"
        for word in (
            "boarding",
            "bus",
            "day",
            "season",
            "visitor",
            "guest",
            "parking",
            "press",
            "ski",
            "travel",
            "metro",
        )
    )
)
_ZH_PASSWORD_CUE = r"(?:密码(?![锁箱柜器本学])|口令|密令|PIN码|pin码|开门码|门锁码|支付码)"
# What may stand between a cue and its value when the customer points at the secret rather than
# naming it anew: a reference to an earlier one ("同上", "跟上面那个一样", "还是", "也") or a
# transformation of it ("倒过来", "反着写").
_REFERENCE_ZH = (
    r"(?:倒过来|反过来|倒着|反着|倒序|逆序|颠倒|同上|同前|如上|照旧|老样子|不变|没变|没改|一样|相同|还|仍然|依然|依旧|也|都|"
    r"(?:跟|和|与|同)(?:上面|前面|之前|刚才|原来|上次|以前|楼上|上边)(?:那个|那条|发的|说的|的)?)"
)
_REFERENCE_EN = r"\b(?:same|reversed|backwards?|in\s+reverse|unchanged|as\s+before|as\s+above|still)\b"
_SECRET_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        CREDENTIAL,
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[^\n]*?-----|[\s\S]*)"
        r"|PuTTY-User-Key-File-\d+:[\s\S]*",
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
        "slack_token",
        CREDENTIAL,
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}|(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    # HashiCorp Vault service, batch and recovery tokens; the legacy "s." form only with letters of both
    # cases and digits (a file or host named "s.something" is not one).
    _rule("vault_token", CREDENTIAL, r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _rule("vault_token_legacy", CREDENTIAL, r"(?<![\w.])s\.(?P<v>[A-Za-z0-9]{24})\b", _mixed),
    _rule("age_secret_key", CREDENTIAL, r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _rule(
        "aws_bedrock_key", CREDENTIAL, r"\bABSK[A-Za-z0-9+/]{100,280}={0,2}|\bbedrock-api-key-[A-Za-z0-9+/=&%._-]{20,}"
    ),
    _rule("sourcegraph_token", CREDENTIAL, r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b"),
    # Cloudflare's API tokens carry no prefix: 40 characters named by the word "cloudflare" or CF_API_TOKEN.
    _rule(
        "cloudflare_token",
        CREDENTIAL,
        r"(?:cloudflare|\bCF)[\w.-]{0,24}?(?:token|key)?[\w.-]{0,8}[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?"
        r"(?P<v>[A-Za-z0-9_-]{40}|[a-f0-9]{37})(?![A-Za-z0-9_-])",
    ),
    _rule("stripe_key", CREDENTIAL, r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _rule("openai_key", CREDENTIAL, r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule("anthropic_key", CREDENTIAL, r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}"),
    _rule("huggingface_token", CREDENTIAL, r"\bhf_[A-Za-z0-9]{30,}"),
    _rule("aliyun_access_key", CREDENTIAL, r"\bLTAI[A-Za-z0-9]{12,24}\b"),
    _rule("tencent_secret_id", CREDENTIAL, r"\bAKID[A-Za-z0-9]{13,40}\b"),
    _rule("jwt", CREDENTIAL, r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    # An id-shaped value (a UUID, a hex string) is a secret only where a credential word names it
    # ("api key 550e8400-…", "token: 3f2a…"); order, trace and request ids stay ids.
    _rule(
        "labelled_id_secret",
        CREDENTIAL,
        r"(?:\b(?:api|access|auth|secret|private|license|licence|client|app|bearer|session)[\s_-]?(?:key|token|secret)s?\b"
        r"|\b(?:token|secret|password|passcode)s?\b|密钥|秘钥|令牌|口令|密码)"
        r"(?:\s+(?:is|was|=)|\s*[:=：]|\s*(?:是|为)|\s+(?:here|below))?\s*[\"'“]?"
        r"(?P<v>(?<![0-9A-Fa-f-])(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})(?![0-9A-Za-z-]))",
        _id_value,
    ),
    _rule("bearer_token", CREDENTIAL, r"\bBearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
    _rule(
        "url_credentials",
        CREDENTIAL,
        r"\b[a-z][a-z0-9+.-]*://[^\s:/@]*:(?P<v>[^\s/]{3,}?)@(?=[\w.-]+(?:[:/?#\s]|$))",
        _credential_value,
    ),
    # -- command lines: --password x, mysql -pX, sshpass -p, docker login -p, redis-cli -a, curl -u user:pass
    _rule(
        "cli_secret_flag",
        CREDENTIAL,
        r"(?<![\w-])--(?:[a-z]+-)?(?:password|passwd|pass|pwd|secret|client-secret|api-key|apikey|api-token|"
        r"access-token|auth-token|token|private-token|secret-key|access-key|secret-access-key|bearer-token|app-secret)"
        r"(?:=|\s+)[\"'`]?(?P<v>[^\s\"']{4,})",
        _credential_value,
    ),
    _rule(
        "cli_mysql_password",
        CREDENTIAL,
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlsh|mariadb(?:-dump)?)\b[^\n|;&]*?"
        r"(?<=\s)-p[\"']?(?P<v>[^\s\"']{3,})",
        _credential_value,
    ),
    _rule(
        "cli_login_password",
        CREDENTIAL,
        r"\b(?:sshpass|(?:docker|podman|nerdctl|buildah|skopeo|oras|helm\s+registry)\s+login)\b[^\n|;&]*?\s-p\s*"
        r"[\"']?(?P<v>[^\s\"']{3,})"
        r"|\bredis-cli\b[^\n|;&]*?\s(?:-a|--pass)\s+[\"']?(?P<w>[^\s\"']{3,})",
        _credential_value,
    ),
    _rule(
        "cli_user_password",
        CREDENTIAL,
        r"(?<![\w-])(?:-u|--user|-U|--username)(?:\s*|=)[\"']?[^\s:\"'%/]*[:%](?P<v>[^\s\"'@]{3,})",
        _user_password_value,
    ),
    # -- HTTP auth headers, inside commands or pasted
    _rule(
        "http_auth_header",
        CREDENTIAL,
        r"\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest|apikey|api-key|key|sso-key|otp|"
        r"negotiate)\s+)?[\"']?(?P<v>[A-Za-z0-9._~+/=:-]{6,})",
        _credential_value,
    ),
    _rule(
        "http_key_header",
        CREDENTIAL,
        r"\b(?:x-api-key|api-key|x-auth-token|x-access-token|auth-token|private-token|x-token|x-api-token|x-secret|"
        r"x-session-token|x-amz-security-token|x-goog-api-key|ocp-apim-subscription-key|x-functions-key|"
        r"x-rapidapi-key|x-vault-token)\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9._~+/=-]{6,})",
        _credential_value,
    ),
    _rule(
        "http_cookie_session",
        CREDENTIAL,
        r"\bcookie\s*:\s*[^\n]*?\b(?:session(?:id)?|sid|auth|token|jsessionid|phpsessid|connect\.sid|_session)="
        r"(?P<v>[A-Za-z0-9%._~+/=-]{8,})",
        _credential_value,
    ),
    # -- .env-style assignments: upper-case names ending in a secret word (DB_PASSWORD=…, PGPASSWORD=…)
    _rule(
        "env_secret",
        CREDENTIAL,
        r"(?-i:(?<![A-Za-z0-9_])(?:[A-Z][A-Z0-9]*_)*[A-Z0-9]*(?:PASSWORD|PASSWD|SECRET|TOKEN|APIKEY|API_KEY|"
        r"ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)(?:_[A-Z0-9]+)?|(?<![A-Za-z0-9_])(?:[A-Z][A-Z0-9]*_)+(?:PASS|PWD|KEY|"
        r"AUTH))\s*[=:]\s*[\"']?(?P<v>[^\s\"'#;,]{4,})",
        _credential_value,
    ),
    _rule(
        "secret_assignment",
        CREDENTIAL,
        r"\b(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|refresh[_-]?token|"
        r"app[_-]?secret|private[_-]?key|secret)[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9_\-./+=]{8,})",
        _credential_value,
    ),
    # Chinese "密码是…": a concrete value (letters/digits/symbols), not "密码是什么" or "密码锁".
    _rule(
        "password_zh",
        CREDENTIAL,
        r"(?:密码|口令|密令|PIN码|pin码|开门码|门锁码|支付码)(?:是|为|改成了?|改为|设成了?|设置为|:|：|=|\s)?\s*"
        rf"[\"'“「]?(?P<v>{_ZH_VALUE})",
        _zh_password_value,
    ),
    # "密码倒过来是X", "密码同上一样是X", "新密码跟上面那个一样，是X", "门锁密码倒着输：X", "密码还是X".
    _rule(
        "password_reference_zh",
        CREDENTIAL,
        rf"{_ZH_PASSWORD_CUE}(?:{_REFERENCE_ZH}(?:[写输打念来]|输入)?[的了就也都还,， ]{{0,2}}){{1,3}}"
        rf"(?:是|为|[:：=])\s*[\"'“「]?(?P<v>{_ZH_VALUE})",
        _zh_password_value,
    ),
    # Handovers: "密码我发你了：X", "登录密码发你：X", "账号密码：wang123 / X" (a filler, then a colon).
    _rule(
        "password_handover_zh",
        CREDENTIAL,
        r"(?:密码(?![锁箱柜器本学])|口令|密令)[^\n:：，。？！?\d]{0,8}?[:：]\s*"
        rf"(?P<v>{_ZH_VALUE}(?:\s*[/|,，]\s*[A-Za-z0-9!@#$%^&*()_+\-=.~]{{3,}})?)",
        _zh_password_value,
    ),
    # "你用这个登：X", "用这个账号密码登录：user / X": what to sign in with, handed over.
    _rule(
        "login_handover_zh",
        CREDENTIAL,
        r"(?:用|拿)这个(?:账号|帐号)?(?:密码)?(?:去)?登(?:录|陆)?[^\n:：，。？！?]{0,4}[:：]\s*"
        rf"(?P<v>{_ZH_VALUE}(?:\s*[/|,，]\s*[A-Za-z0-9!@#$%^&*()_+\-=.~]{{3,}})?)",
        _zh_password_value,
    ),
    # Pinyin keywords ("mima shi abc123"): a value only with a digit ("mima shi shenme" asks).
    _rule(
        "password_pinyin",
        CREDENTIAL,
        r"\b(?:mi\s?ma|kou\s?ling)\b(?:\s+(?:shi|wei)\b|\s*[:：=])?\s*(?P<v>[A-Za-z0-9!@#$%^&*()_+\-=.~]{3,})",
        _pinyin_password_value,
    ),
    _rule(
        "verification_code_pinyin",
        VERIFICATION_CODE,
        r"\b(?:yan\s?zheng\s?ma|dong\s?tai\s?ma|jiao\s?yan\s?ma)\b(?:\s+(?:shi|wei)\b|\s*[:：=])?\s*"
        r"(?P<v>(?<![0-9])\d{4,8})(?![0-9])",
    ),
    _rule(
        "password_zh_tight",
        CREDENTIAL,
        r"(?:登录|支付|银行卡|取款|开门|门锁|账户|账号|帐号|邮箱|微信|支付宝)密码\s*(?P<v>\d{4,})",
    ),
    _rule(
        "password_en",
        CREDENTIAL,
        rf"{_EN_PASSWORD_CUE}[\"']?(?:\s+(?:is|was|=|:)|\s*[:=]|\s*(?:是|为))\s*[\"'“`]?(?P<v>{_EN_VALUE})",
        _en_password_value,
    ),
    # The cue and the value with only a space between ("pwd Zw@2024abc", "passwd Li19880808").
    _rule(
        "password_bare_en",
        CREDENTIAL,
        rf"{_EN_PASSWORD_WORD}[ \t]+[\"'“`]?(?P<v>{_EN_VALUE})",
        _en_password_value_with_digit,
    ),
    # "pass: X", "pw=X": the short cues only before an assignment sign ("I'll pass" is a verb).
    _rule(
        "pass_en",
        CREDENTIAL,
        rf"{_EN_PASS_CUE}\s*[:=]\s*[\"'“]?(?P<v>{_EN_VALUE})",
        _en_password_value_with_digit,
    ),
    # "password is the same as above: X", "pwd reversed is X".
    _rule(
        "password_reference_en",
        CREDENTIAL,
        rf"{_EN_PASSWORD_CUE}[^\n:=;]{{0,24}}?{_REFERENCE_EN}[^\n:=;]{{0,24}}?(?:\s(?:is|was)|[:=])\s*[\"'“]?"
        rf"(?P<v>{_EN_VALUE})",
        _en_password_value_with_digit,
    ),
    _rule(
        "verification_code_zh",
        VERIFICATION_CODE,
        rf"{_CODE_WORDS_ZH}(?:是|为|:|：|\s|发你|给你|发给你)*\s*(?P<v>{_CODE_VALUE})",
        _code_value,
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
        rf"(?:code|pin|passcode|password)\s*(?:is|was|:|=)?\s*(?P<v>{_CODE_VALUE})",
        _code_value,
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
_NAME_IS_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WECHAT_ID_RE = re.compile(r"wxid_[a-z0-9]{6,32}", re.IGNORECASE)
_URL_RE = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|www\.\S+", re.IGNORECASE)
# Query parameters that carry a secret (a token, a key, a password, a signature), any length from 6.
_URL_SECRET_PARAM_RE = re.compile(
    r"[?&;](?:access[_-]?token|api[_-]?key|apikey|token|auth[_-]?token|secret(?:[_-]?key)?|client[_-]?secret|"
    r"password|passwd|pwd|pass|sig|signature|key|auth|access[_-]?key|secret[_-]?access[_-]?key|session(?:[_-]?id)?|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|refresh[_-]?token|id[_-]?token|private[_-]?token|"
    r"app[_-]?secret|appsecret|ak|sk)=([^&#\s\"'<>]{6,})",
    re.IGNORECASE,
)
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
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
    # Hex digests (order hashes, file checksums) and UUIDs (order, trace and request ids) only count
    # with a credential word nearby; see _HEX_RE and the rule "labelled_id_secret".
    if re.fullmatch(r"[0-9a-fA-F]+", stripped) or _UUID_RE.fullmatch(stripped):
        return False
    if not (has_lower and has_upper) and digits < 4:
        return False
    # Words joined by separators (file names, slugs, URL paths) are not keys.
    parts = re.split(r"[-_/]", stripped)
    if len(parts) > 2 and all(p.isalpha() or p.isdigit() or len(p) < 6 for p in parts):
        return False
    return _entropy(stripped) >= 3.7


# A label that makes a long token an id: "发票号 INV2026…", "order ref ORD…", "tracking: 1Z…".
_ID_LABEL_RE = re.compile(
    r"(?:订单|单号|编号|发票|票号|流水|运单|快递|物流|工单|合同|批次|序列号|房源|报销|凭证|交易号|账单|"
    r"order|invoice|ref(?:erence)?|tracking|serial|receipt|booking|confirmation|ticket|case|waybill|po|sku)"
    r"[^\n。，,；;]{0,8}$",
    re.IGNORECASE,
)
_PUBLIC_PEM_RE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY|CERTIFICATE(?: REQUEST)?)-----[\s\S]*?(?:-----END[^\n]*?-----|$)"
)
# An invoice's 校验码 is printed on the invoice, not a one-time code.
_INVOICE_CONTEXT_RE = re.compile(r"发票|票据|开票|invoice", re.IGNORECASE)


@lru_cache(maxsize=1)
def _detect_secrets_keyword_regexes() -> tuple[tuple[re.Pattern[str], int], ...]:
    """detect-secrets' keyword patterns that need a quoted value (`password: "…"`, `secret = '…'`): code
    and config shapes, never prose."""
    try:
        from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
    except ImportError:  # pragma: no cover - the dependency is pinned; our own patterns still apply
        return ()
    return tuple(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())


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
    """The secret inside a match: group `v` (or `w`) or the first group that matched, else the whole match."""
    named = [name for name in ("v", "w") if name in match.re.groupindex]
    if named:
        for name in named:
            if match.group(name) is not None:
                return match.span(name)
        return match.span()
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span()


# detect-secrets' keyword patterns open with `(password|pwd|…)\w*` and so backtrack over the whole
# text from every keyword start: 8,000 chars of "pwd" took 23 s. They only ever match a quoted
# value near its keyword, so they run on a window around each keyword (at most _KEYWORD_WINDOWS).
_DS_KEYWORD_START_RE = re.compile(r"key|pass|pwd|secret|contrase", re.IGNORECASE)
_KEYWORD_WINDOW = 160
_KEYWORD_WINDOWS = 64


def _keyword_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    if not any(quote in text for quote in "'\"`"):
        return
    seen: set[tuple[int, int]] = set()
    for index, keyword in enumerate(_DS_KEYWORD_START_RE.finditer(text)):
        if index >= _KEYWORD_WINDOWS:
            break
        offset = max(0, keyword.start() - _KEYWORD_WINDOW)
        window = text[offset : keyword.end() + _KEYWORD_WINDOW]
        for regex, group in _detect_secrets_keyword_regexes():
            for match in regex.finditer(window):
                span = (offset + match.start(group), offset + match.end(group))
                if span not in seen and _credential_value(match.group(group)):
                    seen.add(span)
                    yield "ds_KeywordDetector", CREDENTIAL, *span


def _inline_code_end(text: str, start: int, end: int) -> int:
    """Where a value found at text[start:end] ends: at a backtick inside it, as at a closing quote. A
    value typed as inline code (`DB_PASSWORD=changeme`，…, `curl -u admin:changeme`，…) is what
    stands between the backticks, not the backtick and the words after it — for every rule alike."""
    tick = text.find("`", start, end)
    return end if tick < 0 else tick


def _secret_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    """(rule, category, start, end) of every secret in one view of the message."""
    for rule in _SECRET_RULES:
        for match in rule.regex.finditer(text):
            start, end = _match_span(match)
            end = _inline_code_end(text, start, end)
            if end <= start:
                continue
            if rule.accept is not None and not rule.accept(text[start:end]):
                continue
            if rule.category == VERIFICATION_CODE and _INVOICE_CONTEXT_RE.search(text[max(0, start - 40) : start]):
                continue
            yield rule.name, rule.category, start, end
    for plugin in _detect_secrets_plugins():
        for regex in getattr(plugin, "denylist", ()):
            try:
                for match in regex.finditer(text):
                    yield f"ds_{type(plugin).__name__}", CREDENTIAL, *_match_span(match)
            except Exception:  # pragma: no cover - a plugin's own regex must never break capture
                continue
    yield from _keyword_hits(text)
    urls = list(_URL_RE.finditer(text))
    for url in urls:
        for param in _URL_SECRET_PARAM_RE.finditer(url.group()):
            start = url.start() + param.start(1)
            end = _inline_code_end(text, start, url.start() + param.end(1))
            if end > start and _url_param_value(text[start:end]):
                yield "url_secret_param", CREDENTIAL, start, end
    # Tokens and hex digests are looked for outside URLs (paths and slugs are not keys) and outside
    # public keys and certificates.
    outside = _URL_RE.sub(lambda m: " " * len(m.group()), text)
    outside = _PUBLIC_PEM_RE.sub(lambda m: " " * len(m.group()), outside)
    for token in _TOKEN_RE.finditer(outside):
        value, start = token.group(), token.start()
        if assignment := _NAME_IS_RE.match(value):  # "API_KEY=4f8e…": the value is the token, the name stays
            value, start = value[assignment.end() :], start + assignment.end()
        if _WECHAT_ID_RE.fullmatch(value) or not _looks_like_secret_token(value):
            continue
        # Order, invoice and waybill numbers are ids: labelled so, or upper case and digits only.
        if _ID_LABEL_RE.search(outside[max(0, start - 20) : start]):
            continue
        if not any(c.islower() for c in value) and not _SECRET_KEYWORD_RE.search(outside):
            continue
        yield "opaque_token", CREDENTIAL, start, token.end()
    if _SECRET_KEYWORD_RE.search(outside):
        for token in _HEX_RE.finditer(outside):
            if any(c.isalpha() for c in token.group()) and any(c.isdigit() for c in token.group()):
                yield "hex_secret", CREDENTIAL, token.start(), token.end()


# --- a credential announced in one message and sent in the next ---------------------------------

_ANNOUNCE_CODE_RE = re.compile(r"验证码|动态码|校验码|短信码|yan\s?zheng\s?ma|\b(?:code|otp)\b", re.IGNORECASE)
_ANNOUNCE_RE = re.compile(
    r"(?:密码(?![锁箱柜器本学])|口令|验证码|动态码|校验码|短信码|\bpin\b|password|passcode|\bcode\b|\bmi\s?ma\b|"
    r"yan\s?zheng\s?ma)"
    r"[^\n？?]{0,8}?(?:发你|给你|发给你|发过去|发过来|等下发|马上发|稍后发|\bcoming\b|\bincoming\b|to\s+follow|"
    r"next\s+message|send(?:ing)?\s+(?:it\s+)?(?:to\s+)?you)"
    r"|(?:发你|给你|发给你)(?:我的)?(?:门锁|登录|支付|开门)?(?:密码|口令|验证码)",
    re.IGNORECASE,
)
_QUESTION_AFTER_RE = re.compile(r"^[^\n]{0,4}[吗？?]")
_BARE_VALUE_RE = re.compile(r"[A-Za-z0-9!@#$%^&*()_+\-=.~]{4,40}")


def announced_secret(previous: str) -> str | None:
    """The category a customer's message announces will follow ("密码发你", "验证码等下发你",
    "password coming"), or None (a question — "密码发你了吗？" — announces nothing)."""
    folded = unicodedata.normalize("NFKC", previous or "")
    match = _ANNOUNCE_RE.search(folded)
    if match is None or _QUESTION_AFTER_RE.match(folded[match.end() :]):
        return None
    return VERIFICATION_CODE if _ANNOUNCE_CODE_RE.search(match.group()) else CREDENTIAL


def bare_secret(text: str, category: str) -> bool:
    """Whether a whole message is nothing but a secret value of this category: one token with a
    digit (a code: 4–8 digits)."""
    value = unicodedata.normalize("NFKC", text or "").strip()
    if category == VERIFICATION_CODE:
        return re.fullmatch(r"\d{4,8}", value) is not None
    return _BARE_VALUE_RE.fullmatch(value) is not None and any(c.isdigit() for c in value)
