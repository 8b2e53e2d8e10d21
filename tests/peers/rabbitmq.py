"""The broker's plugins, for the tests that need RabbitMQ's AMQP 1.0 plugin (it shares port 5672)."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def rabbitmq_plugins(*args: str) -> subprocess.CompletedProcess[str]:
    """rabbitmq-plugins as this user, or through `sudo -n` when that alone fails and sudo works."""
    exe = shutil.which("rabbitmq-plugins")
    if exe is None:
        pytest.fail("rabbitmq-plugins is not on PATH: cannot enable rabbitmq_amqp1_0 (is RabbitMQ installed?)")
    cmd = [exe, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    sudo = shutil.which("sudo")
    if proc.returncode != 0 and sudo and subprocess.run([sudo, "-n", "true"], check=False).returncode == 0:
        proc = subprocess.run([sudo, "-n", *cmd], capture_output=True, text=True, timeout=60, check=False)
    return proc
