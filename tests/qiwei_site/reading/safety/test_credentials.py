"""Credentials by shape and context (issue 15, item 4): command lines, HTTP auth headers inside
commands, URLs that embed a password or a token, connection strings, .env-style assignments and
private key blocks block capture, and masking hides exactly the secret so nothing of it reaches a
person or the model; look-alikes (ports, placeholders, ids, public keys) pass."""

from __future__ import annotations

import pytest

from qiwei_site.reading.masking import HIDDEN, mask_sensitive
from qiwei_site.reading.safety import CREDENTIAL, find_sensitive, scan

# (message, the secret that must be masked)
SHAPES = [
    # command lines
    pytest.param("运维让我跑 mysql -h 10.2.0.9 -ushop -pKd83jqPw shop 这样对吗", "Kd83jqPw", id="cli-mysql-attached"),
    pytest.param("pg_dump --password=Zx81mnq2 -U app prod", "Zx81mnq2", id="cli-double-dash-equals"),
    pytest.param("backup-tool --api-key f3a9c01d77be42e5 run", "f3a9c01d77be42e5", id="cli-api-key"),
    pytest.param("sshpass -p 'Lp#2026aa' ssh ops@10.0.0.3", "Lp#2026aa", id="cli-sshpass"),
    pytest.param("docker login -u ci -p Qm82ksLx registry.example.com", "Qm82ksLx", id="cli-docker-login"),
    pytest.param("redis-cli -h 10.0.0.4 -a Rz77pp1x info", "Rz77pp1x", id="cli-redis"),
    pytest.param("curl -u lina:Tw9x2kQa https://api.example.com/rooms", "Tw9x2kQa", id="cli-curl-user-pass"),
    # HTTP headers inside commands
    pytest.param(
        "curl -H 'Authorization: Bearer 9fK2mQx7Lp' https://api.example.com", "9fK2mQx7Lp", id="header-bearer"
    ),
    pytest.param('curl -H "X-Api-Key: ak_83ms92kd" https://api.example.com', "ak_83ms92kd", id="header-api-key"),
    pytest.param("Authorization: Basic bGluYTpUdzl4MmtRYQ==", "bGluYTpUdzl4MmtRYQ==", id="header-basic"),
    # URLs with embedded secrets
    pytest.param("后台地址 https://ops:Hm29xkw1@10.8.0.2/admin", "Hm29xkw1", id="url-user-pass"),
    pytest.param("https://api.example.com/export?token=k29XmQ81&page=2", "k29XmQ81", id="url-token"),
    pytest.param("http://files.example.com/get?access_key=AKx9281m&id=7", "AKx9281m", id="url-access-key"),
    # connection strings
    pytest.param("postgresql://report:Pw82nmx1@db.example.com:5432/bi", "Pw82nmx1", id="conn-postgres"),
    pytest.param("mongodb+srv://app:Mg77qq2x@cluster1.example.net/crm", "Mg77qq2x", id="conn-mongodb-srv"),
    pytest.param("jdbc:mysql://db:3306/rent?user=rent&password=Jd83mxq1", "Jd83mxq1", id="conn-jdbc"),
    pytest.param("Server=sql1;Database=crm;User Id=sa;Password=Sq#8812x;", "Sq#8812x", id="conn-ado"),
    # .env-style assignments
    pytest.param("DB_PASSWORD=h7Kq92mx", "h7Kq92mx", id="env-db-password"),
    pytest.param("配置里写着 WECHAT_APP_SECRET=9a8b7c6d5e4f", "9a8b7c6d5e4f", id="env-app-secret"),
    pytest.param('{"client_secret": "c8d1e2f3a4b5"}', "c8d1e2f3a4b5", id="env-json-quoted"),
]

PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----"

LOOK_ALIKES = [
    pytest.param("ssh -p 2222 ops@10.0.0.3", id="ssh-port"),
    pytest.param("docker run -p 8080:80 nginx", id="docker-port"),
    pytest.param("mysql -u root -p", id="mysql-prompts-for-password"),
    pytest.param("docker run -u 1000:1000 app", id="uid-gid"),
    pytest.param("curl -H 'Authorization: Bearer $API_TOKEN' https://api.example.com", id="header-variable"),
    pytest.param("API_KEY=your_api_key_here", id="env-placeholder"),
    pytest.param("DB_PASSWORD=${DB_PASSWORD}", id="env-variable"),
    pytest.param("https://m.example.com/house/88?from=timeline&share=1", id="url-share-params"),
    pytest.param("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE", id="public-key"),
    pytest.param("忘记密码了怎么重置？", id="password-complaint"),
]


@pytest.mark.parametrize(("text", "secret"), SHAPES)
def test_scan_credential_shape_blocks_capture_and_masking_hides_the_secret(text, secret):
    # given a message carrying a credential in one of its shapes
    # when it is scanned and masked
    result = scan(text)
    masked = mask_sensitive(text)
    # then capture is blocked as a credential, a span covers the secret, and the mask leaves none of it
    assert CREDENTIAL in result.categories, text
    assert any(
        span.start <= text.index(secret) and text.index(secret) + len(secret) <= span.end for span in result.spans
    )
    assert secret not in masked and HIDDEN in masked


def test_scan_credential_private_key_block_is_masked_whole():
    # given a pasted private key
    result = scan(PRIVATE_KEY)
    # then it is a credential and nothing of its body survives masking
    assert CREDENTIAL in result.categories
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU" not in mask_sensitive(PRIVATE_KEY)


def test_mask_sensitive_keeps_the_name_of_an_assignment():
    # given an .env line and a command line
    # then only the values are masked: what the customer was doing still reads
    assert mask_sensitive("DB_PASSWORD=h7Kq92mx") == f"DB_PASSWORD={HIDDEN}"
    assert (
        mask_sensitive("curl -u lina:Tw9x2kQa https://api.example.com")
        == f"curl -u lina:{HIDDEN} https://api.example.com"
    )


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_find_sensitive_credential_look_alike_is_not_a_secret(text):
    # given ports, uid:gid pairs, placeholders, variables, share links and public keys
    # when the gate looks for secrets
    # then it finds none and blocks nothing
    assert [span for span in find_sensitive(text) if span.category == CREDENTIAL] == []
    assert scan(text).blocked is False


def test_find_sensitive_quoted_keyword_secret_is_found_far_into_a_long_message():
    # Given a quoted secret in a config line after a long pasted log (detect-secrets' keyword
    # patterns run in a window around each keyword, not over the whole text)
    log = "服务启动日志：一切正常。" * 300
    text = f"{log}\nconfig = {{'db_password': 'Qz7-Lm2-Vx9-Rt4'}}"
    # When it is scanned
    result = scan(text)
    # Then the value is a credential and only the value is marked
    assert result.blocked
    assert any(text[span.start : span.end] == "Qz7-Lm2-Vx9-Rt4" for span in result.spans)


def test_find_sensitive_keyword_runs_are_no_credential():
    # Given thousands of keyword starts with no quoted value (once 23 s of backtracking)
    for word in ("pwd", "secret", "password", 'pwd"'):
        # Then nothing is a credential
        assert not scan(word * 2000).blocked
