"""Celery tasks of the memory app (autodiscovered as `memory.tasks`): capture and governance."""

from memory.tasks.capture import *  # noqa: F403
from memory.tasks.governance import *  # noqa: F403
