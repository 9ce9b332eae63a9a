"""WeCom errcodes met by gettoken and the 微信客服 (kf) APIs: a message for people, whether to retry, and the kind
of failure a caller reacts to.

Sources: WeCom's 全局错误码 page (developer.work.weixin.qq.com/document/path/90313, as mirrored in go-workwx's
generated errcodes/mod.go, crawled 2023-08-20), WxJava's WxCpErrorMsgEnum for the older global codes, and the kf
发送消息 page (document/path/96427) for the 48-hour / 5-message rules.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final, Literal, NamedTuple

__all__ = [
    "CORP_INVALID",
    "CORP_MISSING",
    "ERRCODES",
    "EXTERNAL_USERID_INVALID",
    "INVALID_MSGTYPE",
    "INVALID_PARAMETER",
    "MESSAGE_TOO_LONG",
    "MSG_TOKEN_INVALID",
    "OPEN_KFID_INVALID",
    "QUOTA_EXCEEDED",
    "SECRET_INVALID",
    "SECRET_MISSING",
    "SESSION_STATE_INVALID",
    "SYSTEM_BUSY",
    "TEXT_EMPTY",
    "TOKEN_EXPIRED",
    "TOKEN_INVALID",
    "TOKEN_MISSING",
    "WINDOW_CLOSED",
    "ErrcodeInfo",
    "Kind",
    "errcode_kind",
    "errcode_message",
    "is_retryable",
]

# token: refresh the access_token and retry once; transient: retry later; window: the 48 hours since the
# customer's last message have passed; quota: the 5 replies per customer message are used up; config: the
# account's settings are wrong (secret, corp id, open_kfid, trusted IP); request: this request or session is wrong.
Kind = Literal["token", "transient", "window", "quota", "config", "request"]


class ErrcodeInfo(NamedTuple):
    message: str
    retryable: bool
    kind: Kind


SYSTEM_BUSY: Final = -1
SECRET_INVALID: Final = 40001
CORP_INVALID: Final = 40013
TOKEN_INVALID: Final = 40014
TOKEN_MISSING: Final = 41001
CORP_MISSING: Final = 41002
SECRET_MISSING: Final = 41004
TOKEN_EXPIRED: Final = 42001
INVALID_MSGTYPE: Final = 40008
INVALID_PARAMETER: Final = 40058
EXTERNAL_USERID_INVALID: Final = 40096
TEXT_EMPTY: Final = 44004
MESSAGE_TOO_LONG: Final = 45002
OPEN_KFID_INVALID: Final = 95000
# 95001 发送客服消息次数限制: "当用户主动发送消息给微信客服时，企业最多可发送5条消息给用户；若用户继续发送消息，
# 企业可再次下发消息" (全局错误码).
QUOTA_EXCEEDED: Final = 95001
# 95002 发送客服消息时间限制: "当用户在主动发送消息给微信客服时，可在48小时内调用该接口发送消息给用户" (全局错误码).
# Developers also report 95018 once the 48 hours have passed (the session has ended by then); it is classed as a
# window failure too.
WINDOW_CLOSED: Final = 95002
MSG_TOKEN_INVALID: Final = 95007
SESSION_STATE_INVALID: Final = 95018

ERRCODES: Final = MappingProxyType(
    {
        SYSTEM_BUSY: ErrcodeInfo("企业微信系统繁忙，请稍后重试", True, "transient"),
        SECRET_INVALID: ErrcodeInfo("微信客服的 Secret 不正确，请在账号设置中核对", False, "config"),
        40003: ErrcodeInfo("无效的 UserID", False, "request"),
        INVALID_MSGTYPE: ErrcodeInfo("不支持的消息类型", False, "request"),
        CORP_INVALID: ErrcodeInfo("企业 ID（CorpID）不正确，请在账号设置中核对", False, "config"),
        TOKEN_INVALID: ErrcodeInfo("access_token 无效，需重新获取", True, "token"),
        40033: ErrcodeInfo("请求含有不合法的字符", False, "request"),
        40035: ErrcodeInfo("请求参数不合法", False, "request"),
        INVALID_PARAMETER: ErrcodeInfo("请求参数不合法", False, "request"),
        40063: ErrcodeInfo("请求缺少必填参数", False, "request"),
        40091: ErrcodeInfo("Secret 不属于该企业，请在账号设置中核对", False, "config"),
        EXTERNAL_USERID_INVALID: ErrcodeInfo("客户 ID（external_userid）无效", False, "request"),
        TOKEN_MISSING: ErrcodeInfo("请求缺少 access_token，需重新获取", True, "token"),
        CORP_MISSING: ErrcodeInfo("请求缺少企业 ID（CorpID）", False, "config"),
        SECRET_MISSING: ErrcodeInfo("请求缺少 Secret", False, "config"),
        TOKEN_EXPIRED: ErrcodeInfo("access_token 已过期，需重新获取", True, "token"),
        TEXT_EMPTY: ErrcodeInfo("消息内容为空", False, "request"),
        MESSAGE_TOO_LONG: ErrcodeInfo("消息内容过长（文本最多 2048 字节）", False, "request"),
        45009: ErrcodeInfo("调用企业微信接口过于频繁，请稍后重试", True, "transient"),
        45033: ErrcodeInfo("同时调用企业微信接口的请求过多，请稍后重试", True, "transient"),
        48002: ErrcodeInfo("该应用没有调用此接口的权限，请在企业微信后台配置「可调用接口的应用」", False, "config"),
        60020: ErrcodeInfo("服务器 IP 不在企业微信的可信 IP 名单中", False, "config"),
        OPEN_KFID_INVALID: ErrcodeInfo("客服账号 ID（open_kfid）不正确", False, "config"),
        QUOTA_EXCEEDED: ErrcodeInfo("已向该客户连发 5 条消息，需等客户回复后才能再发", False, "quota"),
        WINDOW_CLOSED: ErrcodeInfo("客户最后一条消息已超过 48 小时，需等客户再次发消息后才能回复", False, "window"),
        95003: ErrcodeInfo("可接待的客户咨询数已达上限（企业未验证）", False, "config"),
        95004: ErrcodeInfo("客服账号不存在或已删除", False, "config"),
        MSG_TOKEN_INVALID: ErrcodeInfo("拉取消息的 token 无效或已过期（10 分钟内有效）", False, "request"),
        95011: ErrcodeInfo("微信客服已由企业微信接管，请使用对应的 Secret", False, "config"),
        95012: ErrcodeInfo("微信客服未由企业微信接管，请使用对应的 Secret", False, "config"),
        95013: ErrcodeInfo("该会话已经结束", False, "request"),
        95014: ErrcodeInfo("该成员不是接待人员", False, "request"),
        95016: ErrcodeInfo("会话当前状态不允许这样转移", False, "request"),
        95017: ErrcodeInfo("企业微信后台未开启微信客服的 API 权限", False, "config"),
        SESSION_STATE_INVALID: ErrcodeInfo(
            "会话当前状态不允许通过接口发消息，或已超过 48 小时，需等客户再次发消息", False, "window"
        ),
        95019: ErrcodeInfo("接待人员已停止接待或暂时挂起", False, "request"),
    }
)

# errmsg carries "hint: [...], from ip: ..., more info at ..." after the reason; only the reason is shown.
_ERRMSG_TAIL = re.compile(r"[,;]?\s*(hint|rid|from ip|more info)\b.*$", re.IGNORECASE | re.DOTALL)


def errcode_message(code: int, errmsg: str = "") -> str:
    """Chinese, for the people operating the backoffice. WeCom's own errmsg is added only for codes not in the
    table, without its hint and caller IP."""
    if code == 0:
        return "成功"
    info = ERRCODES.get(code)
    if info is not None:
        return info.message
    reason = _ERRMSG_TAIL.sub("", errmsg).strip()[:200]
    return f"企业微信返回错误 {code}" + (f"：{reason}" if reason else "")


def errcode_kind(code: int) -> Kind:
    """An unknown code is a "request" failure: not retried, shown to people as is."""
    info = ERRCODES.get(code)
    return info.kind if info is not None else "request"


def is_retryable(code: int) -> bool:
    info = ERRCODES.get(code)
    return info.retryable if info is not None else False
