"""The Celery workers' settings: `celery -A dagster_celery.app worker` imports this module when it is on the
worker's PYTHONPATH (dagster_celery.make_app). It must agree with run_launcher.config in dagster.yaml."""

import os

broker_url = os.environ["AWP_CELERY_BROKER"]
# A result backend every host reads (not rpc://, whose states only the sender sees): run monitoring asks it for
# the task's state, and reads PENDING as an unknown worker and fails the run.
result_backend = os.environ["AWP_CELERY_BACKEND"]
# The worker reports STARTED while the run executes; without it a healthy run reads PENDING and is failed
# at the next run monitoring poll, mid-Attempt.
task_track_started = True
worker_prefetch_multiplier = 1
task_acks_late = False
broker_transport_options = {"visibility_timeout": 691200}  # 8 days: above the longest Attempt (7 days)
