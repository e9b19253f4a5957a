"""The `Literal` types of string options name exactly the values their run-time checks accept:
a value added to one of the tuples (or to FORMS) and not to its type, or the other way round, fails here."""

from typing import get_args

from meta_eval.robustness import FORMS, FormName
from uds.api import Parity
from uds_core.arch import COMPONENTS, Component
from uds_core.engine import LOGPROB_DTYPES, LogprobDtype
from uds.commands.score import SCORE_PARITY
from uds_core.parity import MODES, ParityMode


def test_each_literal_type_equals_the_values_its_check_accepts():
    assert get_args(Component) == COMPONENTS
    assert get_args(LogprobDtype) == LOGPROB_DTYPES
    assert get_args(ParityMode) == MODES
    assert get_args(FormName) == tuple(FORMS)


def test_uds_score_from_python_offers_the_parity_modes_of_the_command():
    # open-unlearning has no UDS of its own: neither `uds score --parity` nor `uds.score` takes it
    assert get_args(Parity) == SCORE_PARITY
