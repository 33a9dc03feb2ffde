"""The notebooks are stored without outputs (their ctest runs execute them from a fresh kernel)."""
import json
import pathlib

NOTEBOOKS = sorted((pathlib.Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_the_four_notebooks():
    assert [p.stem for p in NOTEBOOKS][:4] == ["01-online-softmax", "02-io-complexity", "03-puzzles", "04-backward"]


def test_stored_without_outputs():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name
