"""The shell package imports nothing (issue 39, item 7): the pure reader loads without Django,
Celery or kombu, and a Django process still has the project's Celery app for its tasks."""

from __future__ import annotations

import subprocess
import sys


def test_reader_imports_without_django_celery_or_kombu():
    # Given a fresh interpreter
    code = (
        "import sys, qiwei_site.reading, qiwei_site.reading.extract, qiwei_site.reading.hypotheses\n"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'celery', 'kombu'})))"
    )
    # When it imports the reader
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    # Then none of them was loaded
    assert loaded == ""


def test_django_process_binds_shared_tasks_to_the_project_celery_app(settings):
    # Given Django started (the test settings: tasks eager)
    from celery import current_app

    from qiwei_site.celery import app
    from qiwei_site.operations.tasks import audit_anchor_all

    # Then the current app is the project's, configured from the settings, and tasks use it
    assert current_app.main == app.main == "qiwei_site"
    assert current_app.conf.task_always_eager is True
    assert audit_anchor_all.app is app
