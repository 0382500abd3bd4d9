"""pytest's setup for tests/python: the package under test is scripts/ltsuite."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
