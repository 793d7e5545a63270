# -*- coding: utf-8 -*-
"""Run a module of this collection as Ansible does on a node: a separate Python process fed ANSIBLE_MODULE_ARGS."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def run_module(module, tmp_path, check_mode=False, **args):
    """Run ``module`` (an imported module object) with ``args``; return its JSON result."""
    path = module.__file__.replace(".pyc", ".py")
    # .../ansible_collections/repro/vllm/plugins/modules/<name>.py -> the folder holding ansible_collections
    coll_parent = os.path.abspath(os.path.join(os.path.dirname(path), *([os.pardir] * 5)))
    args["_ansible_check_mode"] = check_mode
    args["_ansible_tmpdir"] = str(tmp_path)
    args_file = tmp_path / ("args-%d.json" % len(os.listdir(str(tmp_path))))
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([coll_parent] + [p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, path, str(args_file)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("module printed no JSON: rc=%s stdout=%r stderr=%r"
                             % (proc.returncode, proc.stdout, proc.stderr))
