"""Config errors in words: what Hydra and OmegaConf refuse, and what they let through.

Hydra refuses a misspelt option, key or type at compose time, but its messages
come with a search path, internal type names and a hint (``+key=value``) that
would add the key silently. :func:`describe_config_error` turns those errors
into one message naming the key or group, the value and the valid choices.

Some mistakes pass composition: a key added with ``+`` to a structured node
(struct mode is lifted for ``+``), a required value left ``???``, a value out of
its range. :func:`check_config` finds them before anything is read.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Iterator
from typing import Any

from hydra.errors import (
    ConfigCompositionException,
    HydraException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError

from gpureplay.errors import CONFIG, InputError, Problem

__all__ = ["check_config", "describe_config_error", "unknown_key_message"]

#: What a required key holds, for the message when it is missing.
_REQUIRED_HINTS = {
    "trace.path": "the trace file to replay: add trace.path=FILE",
    "cluster.path": "the node list to read: add cluster.path=FILE",
}
#: What the file of a required path is, by the group option that asks for it (``trace=kubectl``).
_REQUIRED_FILES = {
    ("trace.path", "csv"): "the CSV or Parquet file to replay",
    ("trace.path", "kubectl"): "the `kubectl get <kind> -A -o json` export of the jobs to replay",
    ("cluster.path", "kubectl"): "the `kubectl get nodes -o json` export of the nodes",
}


def _required_hint(cfg: DictConfig, key: str) -> str:
    group = key.split(".", 1)[0]
    option = OmegaConf.select(cfg, f"{group}.name", default=None)
    what = _REQUIRED_FILES.get((key, str(option)))
    if what is not None:
        return f"{what}: add {key}=FILE"
    return _REQUIRED_HINTS.get(key, f"give it on the command line: {key}=...")


def _fields(schema: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)] if dataclasses.is_dataclass(schema) else []


def _suggest(word: str, choices: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or nothing."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_message(full_key: str, schema: Any) -> str:
    """Message for a key that the structured node it was given to does not have.

    Examples
    --------
    >>> from gpureplay.config import HomogeneousClusterConf
    >>> print(unknown_key_message("cluster.node", HomogeneousClusterConf))  # doctest: +ELLIPSIS
    no such key (did you mean 'cluster.nodes'?); cluster has: name, kind, topology, topology_match, ...
    """
    parent, _, name = full_key.rpartition(".")
    fields = _fields(schema)
    close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
    hint = f" (did you mean {(parent + '.' if parent else '') + close[0]!r}?)" if close else ""
    if not fields:
        return f"no such key{hint}"
    return f"no such key{hint}; {parent or 'the top level'} has: {', '.join(fields)}"


def _unknown_keys(node: DictConfig, prefix: str) -> Iterator[tuple[str, Any]]:
    """(full key, schema) of every key of ``node`` (recursively) that its dataclass schema lacks."""
    schema = OmegaConf.get_type(node)
    fields = set(_fields(schema))
    for key in node:
        key = str(key)
        full = f"{prefix}{key}"
        if fields and key not in fields:
            yield full, schema
            continue
        if OmegaConf.is_missing(node, key) or OmegaConf.is_interpolation(node, key):
            continue
        child = node[key]
        if isinstance(child, DictConfig):
            yield from _unknown_keys(child, f"{full}.")


def check_config(cfg: DictConfig) -> None:
    """Refuse what composition lets through: added keys, missing required values, values out of range, and
    scheduler settings the engine refuses (alone or together).

    Parameters
    ----------
    cfg
        The composed run config (without the ``hydra`` node).

    Raises
    ------
    InputError
        Listing every problem, each naming its config key.
    """
    problems: list[Problem] = []
    for key, schema in _unknown_keys(cfg, ""):
        problems.append(Problem(unknown_key_message(key, schema), CONFIG, key=key))
    for key in sorted(OmegaConf.missing_keys(cfg)):
        hint = _required_hint(cfg, key)
        problems.append(Problem(f"is required and has no default; {hint}", CONFIG, key=key))
    if problems:  # the range checks below read values that may be the ones missing
        raise InputError(problems)
    interval = cfg.get("sample_interval")
    if interval is not None and not (math.isfinite(interval) and interval > 0):
        problems.append(
            Problem(f"must be a number of seconds > 0 (found {interval!r})", CONFIG, key="sample_interval")
        )
    for key in ("max_manifest_mib", "memory_budget_gib"):
        limit = cfg.get(key)
        if limit is not None and not (math.isfinite(limit) and limit > 0):
            problems.append(Problem(f"must be a number > 0 (found {limit!r})", CONFIG, key=key))
    horizon = cfg.get("horizon")
    if horizon is not None and not (horizon >= 0):
        problems.append(
            Problem(
                f"must be a time >= 0 in seconds, or null for none (found {horizon!r})", CONFIG, key="horizon"
            )
        )
    problems.extend(_time_problems(cfg))
    problems.extend(_usage_problems(cfg))
    problems.extend(_packing_problems(cfg))
    problems.extend(_policy_problems(cfg))
    if problems:
        raise InputError(problems)


def _policy_problems(cfg: DictConfig) -> list[Problem]:
    """The scheduler's own problems (:func:`gpureplay.replay.policy_checks.policy_problems`).

    Found from the config before any input is read or numba is imported: a setting out of range or a
    combination the engine refuses is reported in a second, not after a large trace has loaded.
    """
    scheduler = cfg.get("scheduler")
    if scheduler is None:
        return []
    from gpureplay.replay.policy_checks import policy_problems
    from gpureplay.schedulers.policy import Policy

    policy = OmegaConf.to_object(scheduler)
    if not isinstance(policy, Policy):  # a config built without the schema: the replay checks it later
        return []
    return policy_problems(policy)


#: Config keys that hold a time of the replay, in seconds.
TIME_KEYS = (
    "max_time",
    "horizon",
    "measure.start",
    "measure.end",
    "workload.window_start",
    "workload.window_end",
)


def _time_problems(cfg: DictConfig) -> list[Problem]:
    """Times too large for float64 to hold to the second (a max_time there would let such trace times in)."""
    from gpureplay.traces.schema import SECOND_RESOLUTION_LIMIT, too_coarse

    problems = []
    for key in TIME_KEYS:
        value = OmegaConf.select(cfg, key, default=None)
        if isinstance(value, int | float) and math.isfinite(value) and value > SECOND_RESOLUTION_LIMIT:
            problems.append(
                Problem(f"is too large to replay to the second; {too_coarse(value)}", CONFIG, key=key)
            )
    return problems


def _usage_problems(cfg: DictConfig) -> list[Problem]:
    """The idle alert's threshold and window out of range (:func:`gpureplay.results.gpu_usage.
    alert_rule_problems`); prices are checked against the cluster's node types once it is built."""
    alert = cfg.get("idle_alert")
    if alert is None:
        return []
    from gpureplay.results.gpu_usage import IdleAlertRule, alert_rule_problems

    return alert_rule_problems(IdleAlertRule(float(alert.threshold), float(alert.window)))


def _packing_problems(cfg: DictConfig) -> list[Problem]:
    """Packing settings out of range, or given to a timed replay (which would ignore them)."""
    packing = cfg.get("packing")
    if packing is None:
        return []
    problems = []
    tune = packing.get("tune")
    if tune is not None and not (math.isfinite(tune) and tune > 0):
        problems.append(
            Problem(f"must be a number > 0, or null (found {tune!r})", CONFIG, key="packing.tune")
        )
    if packing.get("max_pct", 0) < 0:
        problems.append(Problem(f"must be >= 0 (found {packing.max_pct!r})", CONFIG, key="packing.max_pct"))
    mode = cfg.get("mode", "replay")
    if getattr(mode, "name", str(mode)) == "packing":
        problems.extend(_unused_in_packing(cfg))
    else:
        defaults = {"tune": None, "shuffle": True, "max_pct": 130}
        for key, default in defaults.items():
            if packing.get(key) != default:
                problems.append(
                    Problem(
                        f"is a packing-mode setting, but mode is {getattr(mode, 'name', mode)}: "
                        "add mode=packing, or leave it out",
                        CONFIG,
                        key=f"packing.{key}",
                    )
                )
    return problems


#: What a packing run reads of the scheduler: the placement and the GPU-sharing settings. Every
#: other scheduler key, and the top-level and workload keys of timed replays below, must stay at
#: their defaults there.
_PACKING_SCHEDULER_KEYS = frozenset(
    {"name", "node_placement", "gpu_placement", "node_ties", "device_split_count", "shared_gpu_memory"}
)
_REPLAY_ONLY_KEYS = (
    "sample_interval",
    "max_samples",
    "horizon",
    "measure.start",
    "measure.end",
    "idle_alert.threshold",
    "idle_alert.window",
    "cluster.prices",
)
# workload.load compresses submit times, which packing replaces by the tuned arrival order.
_REPLAY_ONLY_WORKLOAD_KEYS = (
    "load",
    "priority_classes",
    "priority_override",
    "checkpoint",
    "checkpoint_by_queue",
)


def _unused_in_packing(cfg: DictConfig) -> list[Problem]:
    """Keys a packing run would ignore (queueing, preemption, timeline sampling...) set away from default."""
    from gpureplay.config import Config, IdleAlertConf, MeasureConf, WorkloadConf
    from gpureplay.schedulers.policy import Policy

    found: list[str] = []
    policy = Policy()
    for f in dataclasses.fields(Policy):
        if f.name in _PACKING_SCHEDULER_KEYS or f.name not in cfg.scheduler:
            continue
        if _text(cfg.scheduler.get(f.name)) != _text(getattr(policy, f.name)):
            found.append(f"scheduler.{f.name}")
    defaults: dict[str, Any] = {
        "sample_interval": Config.sample_interval,
        "max_samples": Config.max_samples,
        "horizon": Config.horizon,
        "measure.start": MeasureConf.start,
        "measure.end": MeasureConf.end,
        "idle_alert.threshold": IdleAlertConf.threshold,
        "idle_alert.window": IdleAlertConf.window,
        "cluster.prices": {},
    }
    for key in _REPLAY_ONLY_KEYS:
        if _text(OmegaConf.select(cfg, key)) != _text(defaults[key]):
            found.append(key)
    workload = OmegaConf.to_container(cfg.workload, resolve=True, enum_to_str=True)
    blank = dataclasses.asdict(WorkloadConf())
    for key in _REPLAY_ONLY_WORKLOAD_KEYS:
        if isinstance(workload, dict) and workload.get(key) != blank[key]:
            found.append(f"workload.{key}")
    return [
        Problem(
            "is not used by a packing run (pods are placed once in arrival order: no queue, gang, "
            "backfill, preemption, timeline sampling, GPU usage or cost); leave it at its default, or use "
            "mode=replay",
            CONFIG,
            key=key,
        )
        for key in found
    ]


def _text(value: Any) -> str:
    """A config value as comparable text (enums by name)."""
    return str(getattr(value, "name", value))


_CONVERT = re.compile(r"Value '(?P<value>.*)' of type '\w+' could not be converted to (?P<type>\w+)")
_ARTICLE = {"Integer": "an integer", "Float": "a number", "Boolean": "true or false", "String": "a string"}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _compose_cause(err: ConfigCompositionException) -> str | None:
    cause = err.__cause__
    full_key = getattr(cause, "full_key", None)
    if not full_key:
        return None
    if isinstance(cause, ConfigKeyError | ConfigAttributeError):
        schema = getattr(cause, "object_type", None)
        return f"config key {full_key!r}: {unknown_key_message(str(full_key), schema)}"
    if isinstance(cause, ValidationError):
        text = _first_line(str(getattr(cause, "msg", "") or cause))
        converted = _CONVERT.match(text)
        if converted:
            wanted = _ARTICLE.get(converted["type"], converted["type"].lower())
            text = f"{converted['value']!r} is not {wanted}"
        return f"config key {full_key!r}: {text}"
    return None


def _strip_hydra_noise(text: str) -> str:
    """Hydra's message without its search path, internal type lines and its ``+key`` hint."""
    kept = []
    for line in text.strip().splitlines():
        if line.startswith(("Config search path", "Search path", "\tprovider=")):
            break
        stripped = line.strip()
        if stripped.startswith(("full_key:", "object_type=", "reference_type=", "To append to your config")):
            continue
        kept.append(line)
    return "\n".join(kept)


#: Hydra's page on the override grammar (where quoting is explained), as its own message links it.
OVERRIDE_GRAMMAR_URL = "https://hydra.cc/docs/advanced/override_grammar/basic/"
_LEXER = "LexerNoViableAltException: "


def _override_message(override: str, message: str) -> str:
    """Hydra's refusal of an override in one line, keeping its point: where it stopped, and to quote.

    The lexer's message is the override and a caret under the character it cannot read (a letter
    outside ASCII, in a path or a name, is the usual one): the character is named instead, and how
    to quote the value, which is what Hydra's linked page says.
    """
    lines = [line for line in message.splitlines() if not line.startswith("See https://")]
    key, sep, value = override.partition("=")
    quoted = f"\"{key}='{value}'\"" if sep and "'" not in value else None
    hint = f"quote the value: {quoted} ({OVERRIDE_GRAMMAR_URL})" if quoted else f"see {OVERRIDE_GRAMMAR_URL}"
    if len(lines) >= 2 and lines[0].startswith(_LEXER) and lines[1].strip() == "^":
        at = len(lines[1]) - len(_LEXER) - 1  # Hydra right-aligns the caret under the override
        if 0 <= at < len(override):
            return (
                f"cannot read the override {override!r}: {override[at]!r} (character {at + 1}) is not "
                f"allowed in an unquoted value; {hint}"
            )
    detail = " ".join(lines[1:]) if len(lines) > 1 and lines[1].strip() != "^" else lines[0] if lines else ""
    return f"cannot read the override {override!r}: {detail.removeprefix(_LEXER)}; {hint}"


def describe_config_error(err: BaseException) -> str | None:
    """A short message for a config error raised by Hydra or OmegaConf, or None if ``err`` is not one.

    Parameters
    ----------
    err
        The exception that stopped composition.

    Returns
    -------
    str or None
        E.g. ``config group 'scheduler' has no option 'fiffo' (did you mean 'fifo'?); options: ...``
        or ``config key 'cluster.nodes': 'abc' is not an integer``.
    """
    if isinstance(err, MissingConfigException) and err.options is not None and err.missing_cfg_file:
        group, _, option = str(err.missing_cfg_file).rpartition("/")
        options = sorted(str(o) for o in err.options)
        return (
            f"config group {group!r} has no option {option!r}{_suggest(option, options)}; "
            f"options: {', '.join(options)}"
        )
    if isinstance(err, OverrideParseException):
        return _override_message(str(err.override), str(err.message))
    if isinstance(err, ConfigCompositionException):
        described = _compose_cause(err)
        if described is not None:
            return described
    if isinstance(err, HydraException | OmegaConfBaseException):
        text = _strip_hydra_noise(str(err))
        cause = err.__cause__
        if isinstance(cause, OmegaConfBaseException):
            text = f"{text}\n{_strip_hydra_noise(str(cause))}"
        return text or type(err).__name__
    return None
