"""``python -m neardup.plan``: one :func:`~neardup.plan.measure.measure_run` of the job pickled on
standard input (written by :func:`~neardup.plan.measure.measure`), its result as JSON on standard
output. The job carries the engine's rules, pickled by name: unpickling them imports the engine."""

import json
import pickle
import sys

from .measure import measure_run

job = pickle.load(sys.stdin.buffer)
result = measure_run(job.pop("engine"), job.pop("paths"), job.pop("config"), **job)
sys.stdout.write(json.dumps(result))
