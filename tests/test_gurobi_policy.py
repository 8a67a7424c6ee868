"""The ``--gurobi`` policy names: ``highs`` is the gurobipy_highs layer, ``compat`` its old alias."""

from __future__ import annotations

from typing import get_args

import pytest

from trex_eval.cli.options import gurobi_policy
from trex_eval.errors import ConfigError
from trex_eval.records import GurobiPolicy, canonical_gurobi_policy
from trex_eval.sandbox import Job


def test_policies_name_the_layer_highs() -> None:
    assert get_args(GurobiPolicy) == ("auto", "real", "highs")
    assert Job(code="", gurobi="highs").gurobi == "highs"


@pytest.mark.parametrize(("given", "policy"), [("auto", "auto"), ("real", "real"), ("highs", "highs")])
def test_cli_policies(given: str, policy: str) -> None:
    assert gurobi_policy(given) == policy


def test_cli_accepts_compat_as_an_alias_of_highs() -> None:
    """``--gurobi compat`` (the name before the layer became gurobipy_highs) still works."""
    assert gurobi_policy("compat") == "highs"
    assert canonical_gurobi_policy("compat") == "highs"
    assert canonical_gurobi_policy("real") == "real"


def test_cli_refuses_other_names() -> None:
    with pytest.raises(ConfigError, match="unknown --gurobi policy 'gurobipy_highs'"):
        gurobi_policy("gurobipy_highs")
