#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A configuration error is the operator's to fix: say what and exit, no traceback.
        sys.stderr.write(f"配置错误 (configuration error): {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
