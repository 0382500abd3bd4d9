"""ltsuite.cellfiles: the readers of a cell's files."""
from pathlib import Path

from ltsuite import cellfiles


def test_env_text_is_the_one_reader_of_key_value_text(tmp_path: Path) -> None:
    """Split at the first "=", a line without one or with an empty key left out, the last of a key winning."""
    text = "A=1\nB=x=y\nno equals\n=orphan\nA=2\nC=\n"
    assert cellfiles.env_text(text) == {"A": "2", "B": "x=y", "C": ""}
    (tmp_path / "cell.env").write_text(text)
    assert cellfiles.read_cell_env(tmp_path / "cell.env") == cellfiles.env_text(text)
    assert cellfiles.read_cell_env(tmp_path / "missing.env") is None
