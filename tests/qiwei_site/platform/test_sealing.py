"""Sealing (`qiwei_site.platform.sealing`): the embedded default's key file is made once, owner-only,
and says where; configured keys rotate (the newest seals, any opens, `reseal` moves a token to the
newest); a wrong key or an altered token never opens."""

from __future__ import annotations

import logging
import stat

import pytest
from cryptography.fernet import Fernet

from qiwei_site.platform import sealing
from qiwei_site.platform.keyfiles import KeyUnavailable
from qiwei_site.platform.sealing import SealBroken, reseal, seal, unseal

ORIGINAL = "门锁密码是 Lx9#qa2041，看房时直接进"


def test_sealing_key_file_is_made_once_owner_only(db, settings, tmp_path, caplog):
    # Given no configured key (the embedded default)
    settings.QIWEI_SEALING_KEYS = []
    settings.QIWEI_KEY_DIR = tmp_path
    # When something is sealed
    with caplog.at_level(logging.WARNING, logger="qiwei_site.platform.sealing"):
        token = seal(ORIGINAL)
    # Then a key file was made, readable by its owner only, and the log says where
    key_file = tmp_path / sealing.KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert str(key_file) in caplog.text
    # And the same key is used again (no second file, no second warning), and it opens the token
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="qiwei_site.platform.sealing"):
        assert unseal(seal(ORIGINAL)) == ORIGINAL
    assert unseal(token) == ORIGINAL and caplog.text == ""
    assert [path.name for path in tmp_path.iterdir()] == [sealing.KEY_FILE_NAME]


def test_sealing_keys_rotate(settings):
    # Given a token sealed with the old key
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.QIWEI_SEALING_KEYS = [old]
    token = seal(ORIGINAL)
    assert ORIGINAL not in token
    # When a new key is put first, the old token still opens and is re-sealed with the new key
    settings.QIWEI_SEALING_KEYS = [new, old]
    assert unseal(token) == ORIGINAL
    moved = reseal(token)
    # Then with the old key retired, the re-sealed token opens and the old one does not
    settings.QIWEI_SEALING_KEYS = [new]
    assert unseal(moved) == ORIGINAL
    with pytest.raises(SealBroken):
        unseal(token)


def test_sealing_refuses_an_altered_token_and_a_bad_key(settings):
    settings.QIWEI_SEALING_KEYS = [Fernet.generate_key().decode()]
    token = seal(ORIGINAL)
    altered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(SealBroken):
        unseal(altered)
    # And a configured value that is not a key refuses to seal with a retriable 503 naming the setting
    settings.QIWEI_SEALING_KEYS = ["not-a-fernet-key"]
    with pytest.raises(KeyUnavailable) as refused:
        seal(ORIGINAL)
    assert refused.value.status_code == 503 and "QIWEI_SEALING_KEYS" in refused.value.detail
    with pytest.raises(SealBroken):
        unseal(token)
