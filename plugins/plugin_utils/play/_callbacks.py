"""What both stdout-side callbacks (callback/record_log.py, callback/console.py) share in the controller's main process:
the plugins preloaded before the first worker forks, the interrupt watch (SIGINT/SIGTERM stop the play's servers
through their heartbeats, and the interrupt ansible-core loses in a fork hook is raised again), and the run a task
result opens."""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time

from ansible_collections.repro.vllm.plugins.plugin_utils.server import _heartbeat

# plugins/plugin_utils/play/ -> plugins/
_PLUGINS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PRELOADED = []


def preload_plugins(display=None):
    """Load this collection's filter and action plugins once, in the controller's main process, before any task.

    Ansible runs every task in a worker forked from the main process, and a worker finds and loads the plugins it
    templates or runs itself: about 0.3 s for every task that calls one of this collection's filters and for every
    host's ``host_record`` action (docs/performance.md). Loaded through Ansible's own plugin loaders here, before
    the first fork, every worker inherits them. Called by this callback and by the console callback when the
    playbook starts; a plugin that fails to load is left to fail where it is used, with Ansible's own error."""
    if _PRELOADED:
        return
    _PRELOADED.append(True)
    from ansible.plugins.loader import action_loader, filter_loader  # pylint: disable=import-outside-toplevel
    for kind in ("filter", "action"):
        folder = os.path.join(_PLUGINS, kind)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not name.endswith(".py") or name.startswith("_"):
                continue
            try:
                if kind == "action":
                    action_loader.get("repro.vllm." + name[:-3], class_only=True)
                    continue
                module = importlib.import_module("ansible_collections.repro.vllm.plugins.filter." + name[:-3])
                for filter_name in sorted(module.FilterModule().filters()):
                    filter_loader.get("repro.vllm." + filter_name)
            except Exception as exc:  # pylint: disable=broad-exception-caught
                if display is not None:
                    display.vvvv("repro.vllm: %s plugin %s not preloaded: %s" % (kind, name, exc))


# ------------------------------------------------------------------------------------------------ interrupts
LOST_INTERRUPT = (
    "SIGINT (Ctrl-C, a job cancel) reached ansible-playbook while it forked a task's worker, and ansible-core lost "
    "it (its KeyboardInterrupt was raised inside a fork hook, where Python ignores exceptions): the play stops here, "
    "before the next task starts")
_STOPPING = []  # the signal whose stop of the play's servers has begun (once per process)


def interrupt_lost(handler_at_start, handler_now):
    """True when the SIGINT handler the play started with (ansible-core's TaskQueueManager handler, which first puts
    SIGINT back to its default and then raises KeyboardInterrupt) has run, yet the play goes on: the interrupt was
    lost. Only a Python handler at the start counts (a controller that ignores SIGINT, or never had a handler, is
    left alone)."""
    return callable(handler_at_start) and handler_now is signal.SIG_DFL


def _end_after(grace):
    """A daemon thread that ends the process grace seconds from now, with exit code 99 and a line saying why (the
    main thread may be blocked for ever on a lock a dead worker holds; this thread is not)."""
    def run():
        time.sleep(grace)
        try:
            sys.stdout.flush()
            sys.stderr.write("[ERROR]: repro.vllm: ansible-playbook had not ended %ss after the interrupt (SIGINT); "
                             "ending it now. ansible-core's shutdown waits for ever when a worker it stopped was writing "
                             "to the results queue (the dead worker holds the queue's lock)\n" % grace)
            sys.stderr.flush()
        finally:
            os._exit(99)
    threading.Thread(target=run, name="repro-vllm-interrupt-grace", daemon=True).start()


def say_raw(line):
    try:
        os.write(2, (line + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


_LISTENERS = []  # what hears of an interrupt in this process: the record_log callback (say, mark)


def stop_servers(signame):
    """Ask every server heartbeat of this play to stop its server now, and wait for them (plugin_utils/server/_heartbeat.py
    stop_all); first each listener's ``mark(signame)`` (the open run notes the interrupt), then one line per server
    through the listeners' ``say`` (stderr without one). Once per process: a second signal does not wait again."""
    if _STOPPING:
        return []
    _STOPPING.append(signame)
    for listener in _LISTENERS:
        try:
            listener.mark(signame)
        except Exception:  # pylint: disable=broad-except
            pass
    answers = _heartbeat.stop_all(signame)
    for answer in answers:
        for say in [listener.say for listener in _LISTENERS] or [say_raw]:
            say(_heartbeat.stop_line(answer))
    return answers


def watch_interrupt(handler, grace):
    """The SIGINT handler to install over ``handler`` (ansible-core's): stop the play's servers, start the grace
    period (none with grace 0), then run it. None when there is nothing to wrap (no Python handler, or already
    wrapped)."""
    if not callable(handler) or getattr(handler, "repro_vllm_grace", None) is not None:
        return None

    def on_sigint(signum, frame):
        # a second Ctrl-C while the servers stop goes straight to ansible-core (their heartbeats stop them anyway)
        stop_servers("SIGINT")
        if grace and grace > 0:
            _end_after(grace)
        return handler(signum, frame)
    on_sigint.repro_vllm_grace = grace or 0
    return on_sigint


def watch_term(handler):
    """The SIGTERM handler to install over ``handler`` (ansible-core's, which kills the process at once): stop the
    play's servers first. None when there is nothing to wrap."""
    if not callable(handler) or getattr(handler, "repro_vllm_term", False):
        return None

    def on_sigterm(signum, frame):
        stop_servers("SIGTERM")
        return handler(signum, frame)
    on_sigterm.repro_vllm_term = True
    return on_sigterm


def install_interrupt_watch(grace, listener=None):
    """Wrap ansible-core's SIGINT and SIGTERM handlers once (main thread only), whichever callback comes first;
    ``listener`` (say, mark) hears of the interrupt. Returns the SIGINT handler now in place (the one
    ``interrupt_lost`` compares with)."""
    if listener is not None and listener not in _LISTENERS:
        _LISTENERS.append(listener)
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(signal.SIGINT)
    watched = watch_interrupt(signal.getsignal(signal.SIGINT), grace)
    if watched is not None:
        signal.signal(signal.SIGINT, watched)
    term = watch_term(signal.getsignal(signal.SIGTERM))
    if term is not None:
        signal.signal(signal.SIGTERM, term)
    return signal.getsignal(signal.SIGINT)


def raise_if_interrupt_lost(handler_at_start, display):
    """Raise the KeyboardInterrupt ansible-core lost, in the main thread, where the strategy queues tasks (it leaves
    the strategy as ansible-core's own would: 'User interrupted execution', rc 99); True when it would have.
    Callbacks sent from the results thread never raise."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if interrupt_lost(handler_at_start, signal.getsignal(signal.SIGINT)):
        display.warning(LOST_INTERRUPT)
        raise KeyboardInterrupt()
    return False


class InterruptStop:
    """What both callbacks do before every task and host start: raise, once, the KeyboardInterrupt ansible-core lost
    (raise_if_interrupt_lost). ``_sigint_at_start`` is the SIGINT handler the playbook started with
    (install_interrupt_watch), cleared by the raise."""

    _sigint_at_start = None

    def _stop_if_interrupt_lost(self):
        handler = self._sigint_at_start
        if threading.current_thread() is threading.main_thread() and interrupt_lost(handler,
                                                                                    signal.getsignal(signal.SIGINT)):
            self._sigint_at_start = None
            raise_if_interrupt_lost(handler, self._display)


def opened_run(result):
    """The path of the run a task result opens, else None: the record role registers repro.vllm.run_record's
    ``state=create`` result as ``repro_vllm_run``; a role may also set the fact ``repro_vllm_run`` (the attempt role)."""
    res = result._result
    run = (res.get("ansible_facts") or {}).get("repro_vllm_run")
    if isinstance(run, dict) and run.get("path"):
        return run["path"]
    # ansible-core 2.21 keeps ``register`` as {name: projection}, older releases as the name
    register = getattr(result._task, "register", None)
    names = set(register) if isinstance(register, dict) else {register}
    if "repro_vllm_run" in names and not res.get("failed") and res.get("path"):
        return res["path"]
    return None
