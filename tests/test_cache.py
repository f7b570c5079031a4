"""The persistent compilation cache's folder (:mod:`lcbayes.cache`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _folder(tmp_path: Path, xla_flags: str | None) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    code = ("from lcbayes.cache import enable_compilation_cache; "
            f"print(enable_compilation_cache({str(tmp_path)!r}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    return Path(out.strip())


def test_several_forced_host_devices_get_a_folder_of_their_own(tmp_path):
    assert _folder(tmp_path, None) == tmp_path
    assert _folder(tmp_path, "--xla_force_host_platform_device_count=1") == tmp_path
    two = _folder(tmp_path, "--xla_force_host_platform_device_count=2")
    assert two == tmp_path / "host-devices-2" and two.is_dir()
