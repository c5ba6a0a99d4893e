from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "cicero" / "golden.npz"


@pytest.fixture(scope="session")
def golden():
    with np.load(GOLDEN) as f:
        return {k: f[k] for k in f.files}
