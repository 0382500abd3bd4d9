"""The model's answer for make advise, one kind for every load: a burst (ltsuite.advise) or a
steady load (ltsuite.steady), each with its own prediction of the recommended setting."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from .advise import Prediction
    from .steady import SteadyPrediction


@dataclass
class Plan:
    """The settings (None when no setting of TUNE can meet the goal, with `cannot` saying why), one
    reason per knob of TUNE, the knobs changed from the file's values, the cheaper value of each
    raised knob and whether the model says it must fail there (`sure`; else it only may), and
    the prediction of the settings (a burst's or a steady load's)."""

    settings: dict[str, int] | None
    reasons: dict[str, str] = field(default_factory=dict)
    cannot: str | None = None
    cheaper: dict[str, int] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    prediction: Union["Prediction", "SteadyPrediction", None] = None
    sure: dict[str, bool] = field(default_factory=dict)
    #: Knobs kept at the file's value that still get a boundary cell one below it (a steady load's
    #: threads, where the file's pool already suffices: steady._plan).
    kept_boundary: list[str] = field(default_factory=list)
