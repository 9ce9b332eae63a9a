"""The project shell (settings, urls, the Celery app, wsgi, gunicorn) and, below it, the floor
(`platform`, `reading`) and two top-floor apps (`workbench`, `operations`).

This package imports nothing: importing the pure reader (`qiwei_site.reading`) must not load Django,
Celery or kombu. The Celery app is loaded where Celery is needed — by `celery -A qiwei_site` (which
finds `qiwei_site.celery`) and, in every Django process, by `qiwei_site.apps.ShellConfig.ready`, so
`shared_task`s bind to it and read its settings (issue 39, item 7)."""
