# One launch's metrics from Nsight Compute's CSV output (ncu --csv --metrics ...), as
# fwd_heads.sh and fwd_counters.sh write it: read(path) -> (kernel name, {metric: (value, unit)}),
# the value as ncu prints it (thousands separated by commas). Lines before the header (ncu's
# ==PROF== lines, a program's own output) are skipped. Raises when the file holds no metrics.
import csv


def read(path):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if len(rows) < 2:
        raise ValueError(f"{path}: no metric rows")
    head, name, vals = rows[0], "", {}
    for r in rows[1:]:
        rec = dict(zip(head, r))
        name = rec.get("Kernel Name", "")
        vals[rec["Metric Name"]] = (rec["Metric Value"], rec["Metric Unit"])
    return name, vals


def number(value):
    """A value as read() returns it, as a float."""
    return float(value.replace(",", ""))
