#!/usr/bin/env bash
# One command: set up and run the main job — migrations, a demo account, the web server on
# 127.0.0.1:4320 (gunicorn) and a Celery worker with beat on the embedded broker. Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh runtime
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-qiwei_site.settings.local}
PY=.venv/bin/python
$PY manage.py migrate --noinput -v0
$PY manage.py migrate_accounts
$PY manage.py collectstatic --noinput -v0
$PY manage.py index_knowledge
$PY manage.py seed_demo

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "正在停止 (stopping)…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  exit 0
}
trap stop INT TERM EXIT

.venv/bin/celery -A qiwei_site worker --beat --loglevel=INFO --concurrency=2 \
  --schedule "${QIWEI_DATA_DIR:-var}/celerybeat-schedule" &
pids+=($!)
.venv/bin/gunicorn qiwei_site.wsgi:application -c qiwei_site/gunicorn.conf.py &
pids+=($!)
echo "后台已启动: http://127.0.0.1:4320/ （管理后台 /admin/），按 Ctrl-C 停止"
wait -n "${pids[@]}"
