"""The one registry shape (``trex_eval.targets.Registry``): lazy, type-checked on load, versioned
where the kind is, did-you-mean on an unknown name; and the seams that use it (backends,
protocols, extractors, rules, reward policies) listing their names without importing one
implementation."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest

from trex_eval.backends.base import (
    BACKENDS,
    BackendKind,
    BackendSpec,
    ReportsEndpoints,
    create_backend,
    dry_run,
    register_backend,
)
from trex_eval.errors import ConfigError
from trex_eval.grading.objective.tolerance import TOLERANCE_RULE_VERSION
from trex_eval.grading.registry import RULES, RuleFamily, families, get_rule, register_rule
from trex_eval.records import GraderKind, SamplingParams
from trex_eval.reward.policy import get_policy
from trex_eval.targets import Entry, Registry, takes_arguments

Shout = Callable[[str], str]


def _as_shout(value: object) -> Shout | None:
    return cast(Shout, value) if takes_arguments(value, 1) else None


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real module on ``sys.path`` that nothing has imported yet, named uniquely per test."""
    name = f"registry_plugin_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "VERSION = 1\n"
        "def shout(text):\n    return text.upper()\n"
        "def two(a, b):\n    return a + b\n"
        "NOT_A_FUNCTION = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _shouts(*entries: Entry, versioned: bool = False) -> Registry[Shout]:
    return Registry(
        "shouter", entries, accept=_as_shout, expects="a function of one text", versioned=versioned
    )


def test_listing_imports_nothing_and_the_first_get_loads_once(plugin: str) -> None:
    registry = _shouts(Entry("shout", f"{plugin}:shout", "upper case"), Entry("other", f"{plugin}:two"))
    assert registry.names() == ("shout", "other") and list(registry) == ["shout", "other"]
    assert registry.describe() == "shout, other" and "shout" in registry and len(registry) == 2
    assert [entry.summary for entry in registry.entries()] == ["upper case", ""]
    assert plugin not in sys.modules
    function = registry.get("shout")
    assert function("abc") == "ABC" and plugin in sys.modules
    assert registry.get("shout") is function  # cached


def test_a_target_that_is_not_what_the_registry_holds_is_refused_naming_the_entry(plugin: str) -> None:
    registry = _shouts(Entry("constant", f"{plugin}:NOT_A_FUNCTION"), Entry("pair", f"{plugin}:two"))
    for name, target in (("constant", "NOT_A_FUNCTION"), ("pair", "two")):
        with pytest.raises(
            ConfigError, match=f"shouter '{name}': {plugin}:{target} is not a function of one"
        ):
            registry.get(name)
    registry.register("gone", "registry_no_such_module_anywhere:shout")
    with pytest.raises(ConfigError, match="shouter 'gone' is not available"):
        registry.get("gone")
    registry.register("typo", f"{plugin}:shuot")
    with pytest.raises(ConfigError, match="has no attribute 'shuot'"):
        registry.get("typo")


def test_an_unknown_name_says_the_close_matches_and_lists_every_name() -> None:
    registry = _shouts(Entry("default", "m:a"), Entry("raw", "m:b"), Entry("trex-compat-solver", "m:c"))
    with pytest.raises(ConfigError) as raised:
        registry.get("defualt", where="bench.yaml:3")
    assert raised.value.message == "unknown shouter 'defualt' (did you mean 'default'?)"
    assert raised.value.where == "bench.yaml:3"
    assert raised.value.hint == "choose one of: default, raw, trex-compat-solver"
    with pytest.raises(ConfigError, match=r"^unknown shouter 'zzz'\n  -> choose one of"):
        registry.entry("zzz")


def test_a_version_other_than_the_entrys_is_refused_before_anything_loads(plugin: str) -> None:
    registry = _shouts(Entry("shout", f"{plugin}:shout", version="1"), versioned=True)
    assert registry.describe() == "shout@1"
    for asked in ("shout@2", "shout @ 2"):
        with pytest.raises(ConfigError, match="implemented at version 1; version 2 was asked for") as raised:
            registry.get(asked)
        assert raised.value.hint is not None and "use shout@1 (or no version)" in raised.value.hint
    with pytest.raises(ConfigError, match="version 2 was asked for"):
        registry.get("shout", version="2")
    assert plugin not in sys.modules
    assert registry.get("shout@1")("x") == "X" and registry.get("shout") is registry.get("shout@1")
    # A versioned kind's line must say its version; another kind's must not.
    with pytest.raises(ConfigError, match="a shouter needs a version"):
        registry.register("bare", f"{plugin}:shout")
    with pytest.raises(ConfigError, match="a shouter takes no version"):
        _shouts(Entry("shout", f"{plugin}:shout", version="1"))


def test_an_implementation_whose_own_version_is_not_its_lines_is_refused(plugin: str) -> None:
    def version_of(value: object) -> str:
        return str(sys.modules[plugin].VERSION)

    registry: Registry[object] = Registry(
        "thing", (Entry("x", f"{plugin}:VERSION", version="2"),), accept=lambda v: v,
        expects="anything", versioned=True, version_of=version_of,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=f"thing 'x': {plugin}:VERSION implements version 1, its registry"):
        registry.get("x")


def test_register_replaces_and_reloads_unregister_forgets(plugin: str) -> None:
    registry = _shouts(Entry("s", f"{plugin}:shout"))
    assert registry.get("s")("a") == "A"
    registry.register("s", "builtins:str")
    assert registry.get("s")("a") == "a"
    registry.unregister("s")
    registry.unregister("s")  # twice: nothing to do
    assert registry.names() == ()
    with pytest.raises(ConfigError, match="unknown shouter 's'"):
        registry.get("s")


def test_the_seams_list_their_names_without_importing_an_implementation() -> None:
    """What ``--help`` and every hint read: six seams' names, one fresh interpreter, no
    implementation module loaded (not a backend, protocol, extractor, rule or their solvers)."""
    script = (
        "import json, sys\n"
        "import trex_eval.cli\n"
        "from trex_eval.backends.base import BACKENDS\n"
        "from trex_eval.protocols import PROTOCOLS\n"
        "from trex_eval.extract import EXTRACTORS\n"
        "from trex_eval.grading.registry import RULES, families\n"
        "from trex_eval.reward.policy import POLICIES\n"
        "listed = [r.describe() for r in (BACKENDS, PROTOCOLS, EXTRACTORS, RULES, POLICIES)]\n"
        "listed.append(' '.join(f.kind.value for f in families()))\n"
        "print(json.dumps({'listed': listed, 'modules': sorted(sys.modules)}))\n"
    )
    answer = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found = json.loads(answer.stdout)
    assert found["listed"][0] == "openai, vllm, local, replay, reference, sglang"
    assert found["listed"][3].startswith(f"strict@{TOLERANCE_RULE_VERSION}, rel@")
    assert found["listed"][4] == "binary@1, staged@2, sirl@1"
    implementations = {
        *(entry.target.partition(":")[0] for registry in (BACKENDS, RULES) for entry in registry.entries()),
        "trex_eval.protocols.base", "trex_eval.protocols.default", "trex_eval.protocols.trex_compat",
        "trex_eval.protocols.trex_compat.extract", "trex_eval.protocols.orlm.extract",
    }  # fmt: skip
    assert implementations & set(found["modules"]) == set()


def _spec(backend: str, **options: str | int | float | bool | None) -> BackendSpec:
    return BackendSpec(name="p", backend=backend, model="m", options=options, sampling=SamplingParams())


def test_a_backend_declares_its_dry_run_and_its_endpoint_counters() -> None:
    # vllm declares a dry run (its server command line); reference does not: the spec is shown.
    # argv[0] is TREX_VLLM_EXECUTABLE where one is set (CI's vllm virtualenv), else "vllm".
    argv = dry_run(_spec("vllm"))["argv"]
    assert Path(argv[0]).name == "vllm" and argv[1:3] == ["serve", "m"]  # type: ignore[index]
    assert dry_run(_spec("reference")) == {"backend": "reference", "model": "m", "options": {}}
    assert BACKENDS.get("reference").dry_run is None and BACKENDS.get("vllm").dry_run is not None
    # The optional capability is declared (a runtime-checkable protocol), not found by name.
    assert isinstance(create_backend(_spec("openai", base_url="http://127.0.0.1:9/v1")), ReportsEndpoints)
    assert not isinstance(create_backend(_spec("reference")), ReportsEndpoints)
    with pytest.raises(ConfigError, match=r"model preset 'p': unknown backend 'vlm' \(did you mean 'vllm'"):
        create_backend(_spec("vlm"))


def test_a_backend_registered_by_its_bare_factory_is_refused_naming_the_record() -> None:
    register_backend("bare-factory", "trex_eval.backends.reference:create")
    try:
        with pytest.raises(
            ConfigError, match=r"backend 'bare-factory': .*reference:create is not a BackendKind"
        ):
            create_backend(_spec("bare-factory"))
        register_backend("bare-factory", "trex_eval.backends.reference:BACKEND")
        assert isinstance(BACKENDS.get("bare-factory"), BackendKind)
    finally:
        BACKENDS.unregister("bare-factory")


def test_rules_and_policies_keep_their_versions_and_messages() -> None:
    current = f"'strict' is implemented at version {TOLERANCE_RULE_VERSION}; version 1 was asked for"
    with pytest.raises(ConfigError, match=current) as raised:
        get_rule("strict@1:rtol=1e-6")
    assert raised.value.where == "strict@1:rtol=1e-6"
    with pytest.raises(
        ConfigError, match=r"unknown grading rule 'stirct' \(did you mean 'strict' or 'sirl'\?\)"
    ):
        get_rule("stirct")
    assert get_policy(" staged@2 ").spec == "staged@2"
    with pytest.raises(ConfigError, match=r"unknown reward policy 'binry' \(did you mean 'binary'\?\)"):
        get_policy("binry")


def test_a_rule_line_whose_version_its_rules_do_not_carry_is_refused() -> None:
    register_rule(
        RuleFamily(
            "fixed-at-7",
            "trex_eval.grading.structure.fixed:build",
            "x",
            version="7",
            kind=GraderKind.STRUCTURE,
        )
    )
    try:
        assert "fixed-at-7" in {f.name for f in families(GraderKind.STRUCTURE)}
        with pytest.raises(ConfigError, match="built orgeval-fixed@1, its registry line says version 7"):
            get_rule("fixed-at-7")
    finally:
        RULES.unregister("fixed-at-7")
        get_rule.cache_clear()
