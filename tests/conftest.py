import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
