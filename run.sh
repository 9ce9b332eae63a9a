#!/usr/bin/env bash
# One command: set up and run the main job — migrations, a demo account, the web server on
# 127.0.0.1:4320 (gunicorn) and a Celery worker with beat on the embedded broker. Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh runtime
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-qiwei_site.settings.local}
PY=.venv/bin/python
# Every set-up step in one process, each skipping what is current; it ends by saying whether a
# model is connected (the offline default makes placeholder drafts).
$PY manage.py setup

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "正在停止 (stopping)…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
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
bind=${QIWEI_BIND:-127.0.0.1:4320}
for _ in $(seq 1 120); do
  if $PY -c "import sys, urllib.request; urllib.request.urlopen('http://$bind/healthz', timeout=1)" 2>/dev/null; then
    echo "后台已启动: http://$bind/ （管理后台 /admin/，接口文档 /api/docs/），按 Ctrl-C 停止"
    break
  fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "gunicorn 未能启动，请查看上面的日志 (gunicorn failed to start)" >&2
    exit 1
  fi
  sleep 0.5
done
.venv/bin/celery -A qiwei_site worker --beat --loglevel=INFO --concurrency=2 \
  --schedule "${QIWEI_DATA_DIR:-var}/celerybeat-schedule" &
pids+=($!)
wait -n "${pids[@]}"
