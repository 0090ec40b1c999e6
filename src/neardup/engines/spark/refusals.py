"""What the Spark engine does not honour, refused in one line naming the option and the engine."""

from __future__ import annotations

from ...config import DedupConfig
from ...errors import ConfigError


def check_config(config: DedupConfig) -> None:
    if not isinstance(config, DedupConfig):
        raise ConfigError(f"config must be a neardup.DedupConfig, got {type(config).__name__}")
    if config.method in ("simhash", "broder", "greedy"):
        raise ConfigError(f"--method {config.method} is not supported by the Spark engine (--engine spark): it runs "
                          "minhash or exact; use --engine local")
