"""``"module:attribute"`` targets: how registries name an implementation without importing it.

Registries (rules, extractors, backends, protocols) hold targets so that listing them costs
nothing and an implementation's dependencies load only when it is used.
"""

from __future__ import annotations

import importlib

from trex_eval.errors import ConfigError


def load_target(target: str, *, what: str) -> object:
    """The attribute a ``"module:attribute"`` target names.

    Raises:
        ConfigError: the target is malformed, or its module or attribute is missing from this
            installation (``what`` names the registry entry in the message).
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"{what}: malformed target {target!r}", hint="write it as 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is None or not module_name.startswith(error.name):
            raise
        raise ConfigError(
            f"{what} is not available: module {module_name} is missing",
            hint="reinstall trex-eval; the installation is incomplete",
        ) from error
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{what}: {module_name} has no attribute {attribute!r}") from None
