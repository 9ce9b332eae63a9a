"""WeCom itself as the upstream (issue 37): an account's 微信客服 (kf) connection, its callback, the
pull of messages by cursor, and replies out through `kf/send_msg`."""
