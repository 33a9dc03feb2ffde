# Shared by the decode device scripts' summaries (decode_tma.sh, decode_sweep.sh):
# a bench-gpu --decode JSON file, or None and one line saying why it is missing.
import json


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:
        print(f"(no {path.split('/')[-1]}: {e})")
        return None
