#!/usr/bin/env bash
# One command: set up and run the main job — migrations, a demo account, the web server on
# QIWEI_BIND (default 127.0.0.1:4320, gunicorn) and a Celery worker with beat on the embedded
# broker. Ctrl-C stops all of it within a few seconds.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh runtime
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-qiwei_site.settings.local}
PY=.venv/bin/python
export QIWEI_BIND=${QIWEI_BIND:-127.0.0.1:4320}
# The address to open: a wildcard bind is reached on the loopback.
host=${QIWEI_BIND%:*}
case "$host" in "" | 0.0.0.0 | "[::]") host=127.0.0.1 ;; esac
base="http://$host:${QIWEI_BIND##*:}"

# Every set-up step in one process, each skipping what is current, ending by whether a model is
# connected — and none at all (no second Django start-up) while the stamp it left says nothing it
# depends on changed: sources, migrations, static and knowledge files, packages, settings, the
# databases themselves (qiwei_site/operations/setup_stamp.py, standard library only, ~50 ms).
if inputs=$($PY qiwei_site/operations/setup_stamp.py check); then
  echo "准备已是最新，跳过 (setup current; skipped): 迁移、静态文件、知识库与演示数据自上次准备后均未变"
else
  QIWEI_SETUP_INPUTS=$inputs $PY manage.py setup
fi

pids=()

# QIWEI_DEMO_WECOM=1: the demo account talks to a WeCom stand-in on 127.0.0.1:4330 (WeCom's kf API,
# signed and encrypted callbacks) instead of the loopback, so a customer's WeCom message arrives and
# the reply leaves through kf/send_msg. Demo credentials only; a real corp is connected with
# `manage.py wecom_connect` (README "Connecting WeCom 微信客服").
demo_marker="${QIWEI_DATA_DIR:-var}/demo-wecom-connected"
if [ "${QIWEI_DEMO_WECOM:-0}" != 1 ] && [ -e "$demo_marker" ]; then
  # The last run connected the demo account to the stand-in: this one runs without it, so the demo
  # account goes back to the loopback (its demo credentials must never be tried on WeCom itself).
  $PY manage.py wecom_connect demo --disconnect --reason "演示结束：断开企业微信替身" >/dev/null && rm -f "$demo_marker"
fi
if [ "${QIWEI_DEMO_WECOM:-0}" = 1 ]; then
  standin_port=${QIWEI_DEMO_WECOM_PORT:-4330}
  export QIWEI_WECOM_API_BASE="http://127.0.0.1:$standin_port"
  demo_wecom=(--corp-id wwdemo0000000001 --token DemoToken2026 --aes-key abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG)
  $PY manage.py wecom_connect demo "${demo_wecom[@]}" --secret demo-kf-secret --open-kfid wkdemo01 \
    --reason "演示：连接企业微信替身" >/dev/null
  touch "$demo_marker"
  $PY manage.py wecom_standin "${demo_wecom[@]}" --secret demo-kf-secret --open-kfid wkdemo01 \
    --port "$standin_port" --callback-url "$base/wecom/demo/callback/" &
  pids+=($!)
fi

stop() {
  trap - INT TERM EXIT
  echo; echo "正在停止 (stopping)…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Within 5 s: gunicorn's graceful stop (0.5 s here) and celery's warm one; past 2 s celery's cold
  # stop, past 4 s whatever is left, children first (celery's own stop takes about 6 s: it polls the
  # embedded broker 2 s at a time; its jobs are acknowledged late, so the broker hands them out again).
  for tick in $(seq 1 40); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 1 ] || break
    [ "$tick" = 20 ] && [ -n "${celery_pid:-}" ] && kill -QUIT "$celery_pid" 2>/dev/null || true
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  wait 2>/dev/null || true
  exit 0
}
trap stop INT TERM EXIT

# gunicorn first, the worker once the server answers: started together they share the cores while
# each imports Django, and the first page waits for both (jobs queued meanwhile wait on the durable
# broker). --preload: the app is imported once, in the master, and the workers fork from it instead
# of importing it four times at once (it opens no connection and starts no thread at import).
.venv/bin/gunicorn qiwei_site.wsgi:application -c qiwei_site/gunicorn.conf.py --preload &
pids+=($!)
for _ in $(seq 1 600); do
  if $PY -c "import urllib.request; urllib.request.urlopen('$base/healthz', timeout=1)" 2>/dev/null; then
    echo "后台已启动: $base/ （登录 $base/login/，管理后台 $base/admin/，接口文档 $base/api/docs/），按 Ctrl-C 停止"
    if [ "${QIWEI_DEMO_WECOM:-0}" = 1 ]; then
      echo "企业微信替身：$QIWEI_WECOM_API_BASE；让模拟客户发消息：" \
        "$PY manage.py wecom_standin --port $standin_port --say '你好，我想租浦东的两居室' --from wmDemoCustomer01"
    fi
    break
  fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "gunicorn 未能启动，请查看上面的日志 (gunicorn failed to start)" >&2
    exit 1
  fi
  sleep 0.2
done
.venv/bin/celery -A qiwei_site worker --beat --loglevel=INFO --concurrency=2 \
  --schedule "${QIWEI_DATA_DIR:-var}/celerybeat-schedule" &
celery_pid=$!
pids+=("$celery_pid")
wait -n "${pids[@]}"
