"""The compatibility stage's judgement: profiles, the matrix and the check of every host and of the job.

Controller side (the ``repro.vllm.compatibility`` action plugin), standard library only: the caller loads the YAML
(``profiles/*.yml``, the user's profile file) and hands dictionaries in. The answer is the ``compatibility.json``
document of docs/compatibility.md::

    {"profile": <name>, "verdict": "pass"|"fail",
     "violations": [{"host": <name>|None, "fact": <FACTS>, "required": str, "found": str, "fix": str}],
     "notes": [{"host": <name>|None, "fact": <FACTS>, "note": str}]}
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.
from __future__ import annotations

import re

# The closed vocabulary of `fact` (docs/compatibility.md). Add, never rename.
FACTS = ("driver_branch", "kernel_module", "cuda_driver", "gpu_model", "gpu_count", "gpus_per_host",
         "compute_capability", "fabric", "imex", "image_cuda", "image_digest", "visible_devices", "driver_in_use",
         "foreign_processes")

CONFIDENCE = ("primary", "secondary", "uncertain")
REQUIRED_OR_OPTIONAL = ("required", "optional")
KERNEL_MODULE = ("open", "any")

# profile key -> (fact it is judged as, required key?)
PROFILE_KEYS = {
    "name": (None, True),
    "description": (None, False),
    "gpu_models": ("gpu_model", True),
    "gpu_count_min": ("gpu_count", True),
    "gpus_per_host": ("gpus_per_host", False),
    "image_cuda": ("image_cuda", True),
    "driver_branch_min": ("driver_branch", False),
    "fabric": ("fabric", False),
    "imex": ("imex", False),
    "kernel_module": ("kernel_module", False),
    "image_by_digest": ("image_digest", False),
    "sources": (None, False),
}

CUDA_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ZERO_UUID_RE = re.compile(r"^[0-]+$")
FABRIC_OK_STATE = "completed"
FABRIC_OK_STATUS = "success"


class ProfileError(ValueError):
    """A profile or matrix that cannot be used; ``key`` names the offending key (None: the document)."""

    def __init__(self, origin, key, msg):
        self.origin = origin
        self.key = key
        where = "%s: key %r" % (origin, key) if key else origin
        super().__init__("%s: %s" % (where, msg))


# ---------------------------------------------------------------------------------------------------------------
# small parsers

class JudgeError(ValueError):
    """A host's parts are in the run but cannot be judged (a fact of the wrong shape); names the host and the fact."""

    def __init__(self, host, detail):
        self.host = host
        super().__init__("host %s: its parts cannot be judged (%s)" % (host, detail))


def version_tuple(text):
    """'580.159.04' -> (580, 159, 4); None when no leading number."""
    parts = []
    for word in re.split(r"[.\-]", str(text or "").strip()):
        if not word.isdigit():
            break
        parts.append(int(word))
    return tuple(parts) or None


def cuda_tuple(text):
    """'13.0' / '13.0.2' -> (13, 0) / (13, 0, 2); None when not a CUDA version."""
    m = CUDA_RE.match(str(text or "").strip())
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def _cuda_text(tup):
    return ".".join(str(p) for p in tup)


def words(text):
    """Upper-case alphanumeric words of a GPU name: 'NVIDIA GB200 NVL' -> ['NVIDIA', 'GB200', 'NVL']."""
    return re.findall(r"[A-Z0-9]+", str(text or "").upper())


def model_matches(gpu_name, token):
    """True when ``token`` (one or more words) appears as whole words in ``gpu_name``.

    'B200' matches 'NVIDIA B200' but never 'NVIDIA GB200'; 'RTX PRO 6000' matches
    'NVIDIA RTX PRO 6000 Blackwell Server Edition'."""
    name, tok = words(gpu_name), words(token)
    if not tok:
        return False
    return any(name[i:i + len(tok)] == tok for i in range(len(name) - len(tok) + 1))


# ---------------------------------------------------------------------------------------------------------------
# matrix and profiles

def _row_meta(row, origin, key):
    if not isinstance(row, dict):
        raise ProfileError(origin, key, "each row must be a mapping, got %r" % (row,))
    if not row.get("source"):
        raise ProfileError(origin, key, "row %r has no source" % (row,))
    if row.get("confidence") not in CONFIDENCE:
        raise ProfileError(origin, key, "row %r: confidence must be one of %s" % (row, ", ".join(CONFIDENCE)))


def validate_matrix(matrix, origin="matrix.yml"):
    """Check the matrix shape (every row with source and confidence); returns it."""
    if not isinstance(matrix, dict):
        raise ProfileError(origin, None, "not a mapping")
    for key in ("cuda_family_rules", "cuda_release_minimums", "image_tags", "compute_capabilities", "gpus"):
        rows = matrix.get(key)
        if not isinstance(rows, list) or not rows:
            raise ProfileError(origin, key, "must be a non-empty list")
        for row in rows:
            _row_meta(row, origin, key)
    for key in ("forward_compat", "foreign_memory_tolerance_mib"):
        _row_meta(matrix.get(key), origin, key)
    for row in matrix["image_tags"]:
        try:
            re.compile(row["tag_regex"])
        except (KeyError, re.error) as exc:
            raise ProfileError(origin, "image_tags", "bad tag_regex in %r: %s" % (row, exc))
    return matrix


def _int(origin, key, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ProfileError(origin, key, "must be an integer >= %d, got %r" % (minimum, value))
    return value


def validate_profile(data, origin, builtin=False):
    """Validate one profile document; returns a normalised copy.

    Raises ProfileError naming the key for an unknown key, a missing required key or a value of the wrong kind.
    Built-in profiles must give a source and confidence for the keys they set (``sources``)."""
    if not isinstance(data, dict):
        raise ProfileError(origin, None, "a profile is a YAML mapping, got %s" % type(data).__name__)
    for key in data:
        if key not in PROFILE_KEYS:
            raise ProfileError(origin, key, "unknown key (known: %s)" % ", ".join(sorted(PROFILE_KEYS)))
    for key, (_fact, required) in PROFILE_KEYS.items():
        if required and key not in data:
            raise ProfileError(origin, key, "missing (required keys: %s)" % ", ".join(
                k for k, v in PROFILE_KEYS.items() if v[1]))
    out = {"description": None, "gpus_per_host": None, "driver_branch_min": None, "fabric": "optional",
           "imex": "optional", "kernel_module": None, "image_by_digest": False, "sources": {}}
    name = data["name"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ProfileError(origin, "name", "must be a word of letters, digits, '.', '_' or '-', got %r" % (name,))
    out["name"] = name
    if data.get("description") is not None:
        if not isinstance(data["description"], str):
            raise ProfileError(origin, "description", "must be text")
        out["description"] = data["description"]
    models = data["gpu_models"]
    if not isinstance(models, list) or not all(isinstance(m, str) and words(m) for m in models):
        raise ProfileError(origin, "gpu_models", "must be a list of GPU model tokens such as [H200], got %r" % (models,))
    out["gpu_models"] = list(models)
    out["gpu_count_min"] = _int(origin, "gpu_count_min", data["gpu_count_min"], 0)
    if models and out["gpu_count_min"] < 1:
        raise ProfileError(origin, "gpu_count_min", "must be at least 1 when gpu_models are given")
    if data.get("gpus_per_host") is not None:
        out["gpus_per_host"] = _int(origin, "gpus_per_host", data["gpus_per_host"], 1)
    cuda = data["image_cuda"]
    if cuda is not None:
        if isinstance(cuda, float):
            raise ProfileError(origin, "image_cuda", "write it quoted (\"13.0\"): YAML reads 13.0 as a number")
        if not isinstance(cuda, str) or not cuda_tuple(cuda):
            raise ProfileError(origin, "image_cuda", "must be a CUDA version such as \"13.0\", got %r" % (cuda,))
    out["image_cuda"] = cuda
    if data.get("driver_branch_min") is not None:
        out["driver_branch_min"] = _int(origin, "driver_branch_min", data["driver_branch_min"], 1)
    for key in ("fabric", "imex"):
        if key in data:
            if data[key] not in REQUIRED_OR_OPTIONAL:
                raise ProfileError(origin, key, "must be 'required' or 'optional', got %r" % (data[key],))
            out[key] = data[key]
    if data.get("kernel_module") is not None:
        if data["kernel_module"] not in KERNEL_MODULE:
            raise ProfileError(origin, "kernel_module", "must be 'open' or 'any', got %r" % (data["kernel_module"],))
        out["kernel_module"] = data["kernel_module"]
    if "image_by_digest" in data:
        if not isinstance(data["image_by_digest"], bool):
            raise ProfileError(origin, "image_by_digest", "must be true or false")
        out["image_by_digest"] = data["image_by_digest"]
    sources = data.get("sources") or {}
    if not isinstance(sources, dict):
        raise ProfileError(origin, "sources", "must map profile keys to {source, confidence}")
    for key, row in sources.items():
        if key not in PROFILE_KEYS or PROFILE_KEYS[key][0] is None:
            raise ProfileError(origin, "sources", "names %r, which is not a judged profile key" % (key,))
        _row_meta(row, origin, "sources.%s" % key)
    if builtin:
        for key in ("gpu_models", "gpu_count_min", "image_cuda", "driver_branch_min", "gpus_per_host", "fabric"):
            if data.get(key) not in (None, [], 0, "optional") and key not in sources:
                raise ProfileError(origin, "sources", "a shipped profile must give the source of %r" % key)
    out["sources"] = dict(sources)
    out["origin"] = origin
    return out


DEFAULT_PROFILE = "cpu-smoke"


def profile_needs_gpu(profile):
    """Whether a (validated) profile asks for any GPU: GPU models named or a GPU count above 0. A profile that does
    not (cpu-smoke) judges nothing GPU-related, and the baseline score leaves its GPU items out."""
    return bool(profile.get("gpu_models")) or int(profile.get("gpu_count_min") or 0) > 0


def _stripped(value):
    return value.strip() if isinstance(value, str) else value


def choose_profile(name, path):
    """Which of ``repro_vllm_profile``/``repro_vllm_profile_file`` applies: ('name', n) or ('file', p); neither
    means the documented default profile. A file always wins over a name: the shipped inventories set
    ``repro_vllm_profile`` in group_vars, so ``-e repro_vllm_profile_file=...`` must be enough (issue 32)."""
    name, path = _stripped(name), _stripped(path)
    if path:
        return "file", path
    return "name", name or DEFAULT_PROFILE


def choice_line(name, path):
    """The console's line saying which profile variable was used and why, or None when only one (or none) was set."""
    name, path = _stripped(name), _stripped(path)
    if name and path:
        return ("compatibility | profile file %s used (repro_vllm_profile_file); it wins over repro_vllm_profile=%s "
                "(set in the inventory or on the command line), which is ignored" % (path, name))
    return None


def unknown_profile(name, known):
    return ProfileError("variables", "repro_vllm_profile", "unknown profile %r (shipped: %s; or give your own with "
                                                           "repro_vllm_profile_file)" % (name, ", ".join(sorted(known))))


# ---------------------------------------------------------------------------------------------------------------
# matrix look-ups

def family_rule(matrix, cuda):
    """The family rule row of a CUDA version (its major), or None."""
    tup = cuda_tuple(cuda)
    for row in matrix["cuda_family_rules"]:
        if tup and row["cuda_major"] == tup[0]:
            return row
    return None


def release_minimum(matrix, cuda):
    """The per-release toolkit driver row for a CUDA version (by major.minor), or None."""
    tup = cuda_tuple(cuda)
    for row in matrix["cuda_release_minimums"]:
        if tup and cuda_tuple(row["cuda"])[:2] == tup[:2]:
            return row
    return None


def gpu_row(matrix, gpu_name):
    """The matrix row of the GPU model a name belongs to (the longest matching token wins), or None."""
    hits = [r for r in matrix["gpus"] if model_matches(gpu_name, r["model"])]
    hits.sort(key=lambda r: len(words(r["model"])), reverse=True)
    return hits[0] if hits else None


def cc_row(matrix, cc):
    for row in matrix["compute_capabilities"]:
        if str(row["cc"]) == str(cc):
            return row
    return None


def image_cuda_from_tag(matrix, reference):
    """(cuda, row) the matrix gives for an image reference by its repository and tag, or (None, None)."""
    ref = str(reference or "")
    if "@" in ref:
        ref = ref.split("@", 1)[0]
    repo, tag = ref, "latest"
    if ":" in ref.rsplit("/", 1)[-1]:
        repo, tag = ref.rsplit(":", 1)
    repo = re.sub(r"^(docker\.io/|index\.docker\.io/)", "", repo)
    repo = re.sub(r"^library/", "", repo)
    for row in matrix["image_tags"]:
        if row["repo"] == repo and re.search(row["tag_regex"], tag):
            return row["cuda"], row
    return None, None


def required_driver_branch(profile, matrix):
    """(branch, why, confidence) the profile needs: explicit, else the family rule of its image CUDA."""
    if profile.get("driver_branch_min"):
        src = profile["sources"].get("driver_branch_min") or {}
        return (profile["driver_branch_min"], "profile %s" % profile["name"],
                src.get("confidence", "user"))
    if profile.get("image_cuda"):
        row = family_rule(matrix, profile["image_cuda"])
        if row:
            return (row["min_driver_branch"], "a CUDA %s image needs r%s+: %s" % (
                profile["image_cuda"], row["min_driver_branch"], row["source"]), row["confidence"])
    return None, None, None


# ---------------------------------------------------------------------------------------------------------------
# the check

class _Answer:
    def __init__(self):
        self.violations = []
        self.notes = []

    def violation(self, host, fact, required, found, fix):
        if fact not in FACTS:
            raise ValueError("compatibility fact %r is not in the documented vocabulary" % fact)
        self.violations.append({"host": host, "fact": fact, "required": str(required), "found": str(found),
                                "fix": str(fix)})

    def note(self, host, fact, note):
        if fact not in FACTS:
            raise ValueError("compatibility fact %r is not in the documented vocabulary" % fact)
        entry = {"host": host, "fact": fact, "note": str(note)}
        if entry not in self.notes:
            self.notes.append(entry)

    def unknown(self, host, fact, why):
        self.note(host, fact, "unknown: %s" % why)


def _driver_version(drv):
    for key, what in (("kernel_module_version", "kernel module"), ("userspace_version", "userspace"),
                      ("reported_version", "nvidia-smi")):
        if drv.get(key):
            return drv[key], what
    return None, None


def _image_cuda_found(container, matrix):
    """(cuda text, where) of the image the host has, from its env, the in-image probe or its tag; (None, why)."""
    if not isinstance(container, dict) or container.get("skipped") or not container.get("reference"):
        return None, "no image given (repro_vllm_image)"
    for name in container.get("found_in") or []:
        env = ((container.get("runtimes") or {}).get(name) or {}).get("image") or {}
        cuda = (env.get("env") or {}).get("CUDA_VERSION")
        if cuda_tuple(cuda):
            return cuda, "CUDA_VERSION in the image's environment (%s)" % name
    probe = container.get("probe") or {}
    if cuda_tuple(probe.get("torch_cuda")):
        return probe["torch_cuda"], "torch.version.cuda inside the image"
    cuda, row = image_cuda_from_tag(matrix, container["reference"])
    if cuda:
        return cuda, "the image's tag (%s; %s)" % (row["source"], row["confidence"])
    return None, "the image %s was not found on the host and its tag names no CUDA" % container["reference"]


def _forward_compat(container, matrix):
    """True when the image opts into the cuda-compat forward path (VLLM_ENABLE_CUDA_COMPATIBILITY=1)."""
    env_key = matrix["forward_compat"]["env"]
    if not isinstance(container, dict):
        return False
    for name in container.get("found_in") or []:
        env = ((((container.get("runtimes") or {}).get(name) or {}).get("image") or {}).get("env") or {})
        if str(env.get(env_key, "")).strip() in ("1", "true", "True"):
            return True
    return False


def _visible(gpu_facts):
    """The GPUs of a host the server would use: all of them, or those CUDA_VISIBLE_DEVICES names."""
    gpus = gpu_facts.get("gpus") or []
    vis = (gpu_facts.get("visible_devices") or {}).get("cuda_visible_devices_list")
    if vis is None:
        return gpus, None
    picked = []
    for ident in vis:
        for g in gpus:
            if ident == str(g.get("index")) or (g.get("uuid") and g["uuid"].startswith(ident)):
                picked.append(g)
    return picked, vis


def _attribution(proc):
    if proc.get("attribution") in ("workload", "foreign", "unattributed"):
        return proc["attribution"], proc.get("reason")
    if proc.get("own"):
        return "workload", "pid given as the workload's own"
    return "foreign", None


class _HostCheck:
    """The per-host checks; ``gpus_found`` feeds the job's count."""

    def __init__(self, ans, host, fingerprint, container, profile, matrix, allow_foreign):
        self.ans, self.host, self.profile, self.matrix = ans, host, profile, matrix
        self.fp = fingerprint or {}
        self.gpu = self.fp.get("gpu") or {}
        self.container = container
        self.allow_foreign = allow_foreign
        self.gpus_found = 0
        self.fabric = []

    @property
    def needs_gpu(self):
        return profile_needs_gpu(self.profile)

    def run(self):
        if not self.needs_gpu:
            return
        gpus = self.gpu.get("gpus") or []
        self.gpus_found = len(gpus)
        if not gpus:
            why = self.gpu.get("reason") or ("nvidia-smi timed out" if self.gpu.get("timed_out") else
                                             "gpu_facts listed no GPU")
            self.ans.violation(self.host, "gpu_model", self._models_text(), "no NVIDIA GPU: %s" % why,
                               "run on a host with %s GPUs, or check the driver with nvidia-smi" % self._models_text())
        self.check_driver()
        self.check_models(gpus)
        self.check_per_host(gpus)
        self.check_cc(gpus)
        self.check_visible(gpus)
        self.check_in_use()
        self.check_foreign()
        self.check_fabric(gpus)
        self.check_imex()
        self.check_image()

    def _models_text(self):
        return " or ".join(self.profile["gpu_models"]) or "NVIDIA"

    # driver: branch, kernel module, CUDA of the driver
    def check_driver(self):
        drv = self.gpu.get("driver") or {}
        version, what = _driver_version(drv)
        need, why, _conf = required_driver_branch(self.profile, self.matrix)
        branch_failed = False
        if need:
            if not version_tuple(version):
                self.ans.unknown(self.host, "driver_branch", "no driver version was read (%s)" % (
                    self.gpu.get("reason") or "nvidia-smi and /proc/driver/nvidia gave none"))
            elif version_tuple(version)[0] < need:
                branch_failed = True
                self.ans.violation(
                    self.host, "driver_branch", ">= r%d (%s)" % (need, why),
                    "r%d (%s, %s)" % (version_tuple(version)[0], version, what),
                    "install an r%d or newer datacenter driver on %s and reboot (or use an image built for the CUDA "
                    "this driver supports)" % (need, self.host))
            rel = release_minimum(self.matrix, self.profile.get("image_cuda"))
            if rel and version_tuple(version) and not branch_failed and (
                    version_tuple(version) < version_tuple(rel["min_driver"])):
                self.ans.note(self.host, "driver_branch", "driver %s is below CUDA %s's toolkit driver %s: the image "
                              "runs through minor-version compatibility (limited feature set; %s, %s)" % (
                                  version, rel["cuda"], rel["min_driver"], rel["source"], rel["confidence"]))
        self.check_kernel_module(drv)
        if not branch_failed:
            self.check_cuda_driver(drv)

    def check_kernel_module(self, drv):
        if drv.get("mismatch"):
            self.ans.violation(
                self.host, "kernel_module", "the loaded kernel module and the userspace driver are one version",
                "; ".join(drv.get("mismatch_evidence") or []) or "kernel module %s, userspace %s" % (
                    drv.get("kernel_module_version"), drv.get("userspace_version")),
                "reboot %s (or unload and reload the nvidia modules) so the loaded module matches the installed "
                "driver %s" % (self.host, drv.get("userspace_version") or ""))
        elif not drv.get("kernel_module_version"):
            self.ans.unknown(self.host, "kernel_module", "/proc/driver/nvidia/version was not read")
        want = self.profile.get("kernel_module")
        source = "profile %s" % self.profile["name"]
        if not want:
            for g in self.gpu.get("gpus") or []:
                row = gpu_row(self.matrix, g.get("name"))
                if row and row.get("kernel_module") == "open":
                    want, source = "open", "%s (%s, %s)" % (row["model"], row["source"], row["confidence"])
                    break
        if want == "open":
            flavor = drv.get("kernel_module_flavor")
            if flavor == "proprietary":
                self.ans.violation(self.host, "kernel_module", "the open GPU kernel module (%s)" % source,
                                   "proprietary kernel module (%s)" % (drv.get("kernel_module_line") or ""),
                                   "install the open flavor of the driver (nvidia-open / --kernel-module-type=open) "
                                   "on %s and reboot" % self.host)
            elif flavor is None:
                self.ans.unknown(self.host, "kernel_module", "kernel module flavor not read; this GPU needs the "
                                                             "open module")

    def check_cuda_driver(self, drv):
        image = self.profile.get("image_cuda")
        if not image:
            return
        have = cuda_tuple(drv.get("cuda_driver_version"))
        want = cuda_tuple(image)
        if not have:
            self.ans.unknown(self.host, "cuda_driver", "the driver's CUDA version was not read (nvidia-smi --version)")
            return
        if have[0] < want[0]:
            if _forward_compat(self.container, self.matrix):
                self.ans.note(self.host, "cuda_driver", "driver supports CUDA %s, image CUDA %s: the cuda-compat "
                              "forward path is in use (%s=1; datacenter GPUs only; %s)" % (
                                  drv["cuda_driver_version"], image, self.matrix["forward_compat"]["env"],
                                  self.matrix["forward_compat"]["source"]))
                return
            self.ans.violation(self.host, "cuda_driver", "a driver supporting CUDA %s (the image's CUDA)" % image,
                               "the driver supports CUDA %s" % drv["cuda_driver_version"],
                               "upgrade the driver on %s, or set %s=1 in the image on a datacenter GPU (forward "
                               "compatibility)" % (self.host, self.matrix["forward_compat"]["env"]))
        elif have[:2] < want[:2]:
            self.ans.note(self.host, "cuda_driver", "driver supports CUDA %s, image CUDA %s: minor-version "
                          "compatibility (limited feature set)" % (drv["cuda_driver_version"], image))

    def check_models(self, gpus):
        tokens = self.profile["gpu_models"]
        if not tokens or not gpus:
            return
        wrong = [g for g in gpus if not any(model_matches(g.get("name"), t) for t in tokens)]
        if wrong:
            self.ans.violation(self.host, "gpu_model", self._models_text(),
                               ", ".join("GPU %s %s" % (g.get("index"), g.get("name")) for g in wrong),
                               "run %s on %s GPUs, or choose the profile of this hardware" % (
                                   self.profile["name"], self._models_text()))

    def check_per_host(self, gpus):
        want = self.profile.get("gpus_per_host")
        if not want:
            return
        if len(gpus) != want:
            self.ans.violation(self.host, "gpus_per_host", "exactly %d GPUs on each host" % want,
                               "%d GPUs" % len(gpus), "use hosts with %d GPUs each (check for a GPU that fell off "
                                                      "the bus: nvidia-smi -L, dmesg | grep -i xid)" % want)

    def check_cc(self, gpus):
        image = cuda_tuple(self.profile.get("image_cuda"))
        for g in gpus:
            cc = g.get("compute_cap")
            if not cc:
                self.ans.unknown(self.host, "compute_capability", "GPU %s reported no compute capability" %
                                 g.get("index"))
                continue
            model = gpu_row(self.matrix, g.get("name"))
            if model and str(model["cc"]) != str(cc):
                self.ans.note(self.host, "compute_capability", "GPU %s %s reports compute capability %s; the "
                              "matrix has %s for %s" % (g.get("index"), g.get("name"), cc, model["cc"], model["model"]))
            if model and model["confidence"] == "uncertain":
                self.ans.note(None, "compute_capability", "matrix row %s is uncertain: %s" % (
                    model["model"], model["source"]))
            row = cc_row(self.matrix, cc)
            if image is None:
                continue
            if row is None:
                self.ans.unknown(self.host, "compute_capability", "compute capability %s is not in the matrix" % cc)
                continue
            first = cuda_tuple(row["first_cuda"])
            last = row.get("last_cuda_major")
            if image[:len(first)] < first or (last is not None and image[0] > last):
                need = "CUDA >= %s" % row["first_cuda"] + (" and a CUDA %d.x image" % last if last else "")
                self.ans.violation(self.host, "compute_capability",
                                   "an image whose CUDA supports compute capability %s (%s; %s)" % (
                                       cc, need, row["source"]),
                                   "GPU %s %s (sm_%s) with a CUDA %s image" % (
                                       g.get("index"), g.get("name"), cc.replace(".", ""), _cuda_text(image)),
                                   "use an image built with %s for these GPUs" % need)
                break

    def check_visible(self, gpus):
        vis = self.gpu.get("visible_devices") or {}
        lst = vis.get("cuda_visible_devices_list")
        if lst is None:
            return
        picked = _visible(self.gpu)[0]
        want = self.profile.get("gpus_per_host") or 1
        if len(picked) < len(lst):
            self.ans.violation(self.host, "visible_devices", "CUDA_VISIBLE_DEVICES names GPUs of this host",
                               "CUDA_VISIBLE_DEVICES=%s; the host has GPUs %s" % (
                                   vis.get("cuda_visible_devices"), ", ".join(str(g.get("index")) for g in gpus)),
                               "unset CUDA_VISIBLE_DEVICES on %s or list existing GPU indexes or UUIDs" % self.host)
        elif len(picked) < want:
            self.ans.violation(self.host, "visible_devices", "%d GPUs visible" % want,
                               "CUDA_VISIBLE_DEVICES=%r shows %d" % (vis.get("cuda_visible_devices"), len(picked)),
                               "unset or widen CUDA_VISIBLE_DEVICES in the environment of %s" % self.host)
        else:
            self.ans.note(self.host, "visible_devices", "CUDA_VISIBLE_DEVICES=%s is set in the host's environment" %
                          vis.get("cuda_visible_devices"))

    def check_in_use(self):
        diu = self.gpu.get("driver_in_use")
        if not isinstance(diu, dict):
            self.ans.unknown(self.host, "driver_in_use", "gpu_facts did not report the driver in use (no "
                                                         "driver_in_use section)")
            return
        kernel = diu.get("kernel_module_version")
        bad = []
        for proc in diu.get("processes") or []:
            lib = proc.get("libcuda_version")
            if proc.get("forward_compat"):
                # a cuda-compat libcuda over an older kernel module is the forward path, on purpose
                self.ans.note(self.host, "driver_in_use", "pid %s mapped %s: the cuda-compat forward path is in "
                                                          "use" % (proc.get("pid"), proc.get("libcuda_path")))
            elif lib and kernel and lib != kernel:
                bad.append("pid %s mapped %s (%s)" % (proc.get("pid"), proc.get("libcuda_path"), lib))
        if diu.get("mismatch") or bad:
            found = "; ".join(diu.get("evidence") or bad) or "kernel module %s, userspace %s" % (
                kernel, diu.get("userspace_version"))
            self.ans.violation(self.host, "driver_in_use", "every running process uses the loaded driver %s" % (
                kernel or "(kernel module)"), found,
                "restart the processes (or reboot %s) so they load the driver the kernel runs" % self.host)
        elif not kernel:
            self.ans.unknown(self.host, "driver_in_use", "the kernel module version in use was not read")

    def check_foreign(self):
        gpus = _visible(self.gpu)[0]
        uuids = set(g.get("uuid") for g in gpus)
        status = (self.gpu.get("processes_summary") or {}).get("status")
        if status not in (None, "ok"):
            self.ans.unknown(self.host, "foreign_processes", "the compute process list was not read (%s)" % status)
        foreign = []
        # With no workload process named (the check before vLLM starts), nothing on the GPUs can be the workload's:
        # a process that could not be mapped to a local pid is still someone else's work holding the GPU.
        workload_named = bool((self.gpu.get("processes_summary") or {}).get("own_pids"))
        for proc in self.gpu.get("processes") or []:
            if proc.get("gpu_uuid") not in uuids:
                continue
            who, reason = _attribution(proc)
            text = "pid %s %s on GPU %s (%s MiB)" % (
                proc.get("pid"), proc.get("process_name"), proc.get("gpu_index"), proc.get("used_memory_mib"))
            if who == "foreign":
                foreign.append(text + (": %s" % reason if reason else ""))
            elif who == "unattributed" and not workload_named:
                foreign.append(text + ": no workload process is running, so it is not the workload's (%s)" % (
                    reason or "pid not mapped here"))
            elif who == "unattributed":
                self.ans.note(self.host, "foreign_processes", "could not tell whose process this is: %s%s" % (
                    text, ": %s" % reason if reason else ""))
        tol = self.matrix["foreign_memory_tolerance_mib"]["value"]
        for g in gpus:
            extra = g.get("unaccounted_memory_mib") or 0
            if extra > tol:
                foreign.append("%d MiB in use on GPU %s that no listed process accounts for" % (extra, g.get("index")))
        if not foreign:
            return
        found = "; ".join(foreign)
        if self.allow_foreign:
            self.ans.note(self.host, "foreign_processes", "allowed by repro_vllm_allow_foreign: %s" % found)
            return
        self.ans.violation(self.host, "foreign_processes", "no compute process or memory in use on the GPUs the "
                                                           "server will use", found,
                           "stop those processes on %s (nvidia-smi --query-compute-apps=pid,process_name), choose "
                           "other GPUs, or set repro_vllm_allow_foreign: true to run beside them" % self.host)

    def check_fabric(self, gpus):
        fab = self.gpu.get("fabric") or {}
        by_uuid = dict((f.get("uuid"), f) for f in fab.get("gpus") or [])
        for g in gpus:
            f = by_uuid.get(g.get("uuid")) or {}
            self.fabric.append({"host": self.host, "index": g.get("index"), "state": f.get("state"),
                                "status": f.get("status"), "cluster_uuid": f.get("cluster_uuid"),
                                "clique_id": f.get("clique_id")})
        if self.profile["fabric"] != "required":
            return
        if fab.get("status") not in (None, "ok"):
            self.ans.unknown(self.host, "fabric", "the fabric state was not read (%s)" % fab.get("status"))
            return
        bad = []
        for f in self.fabric:
            state, status = str(f["state"] or "").lower(), str(f["status"] or "").lower()
            uuid = str(f["cluster_uuid"] or "")
            if state != FABRIC_OK_STATE or status != FABRIC_OK_STATUS or not uuid or ZERO_UUID_RE.match(uuid):
                bad.append("GPU %s state %s, status %s, cluster %s" % (f["index"], f["state"], f["status"],
                                                                       f["cluster_uuid"]))
        if bad:
            self.ans.violation(self.host, "fabric", "every GPU attached to the NVLink fabric (state Completed, status "
                                                    "Success, non-zero cluster UUID)", "; ".join(bad),
                               "check the fabric on %s: nvidia-smi -q | grep -A8 Fabric, nvidia-imex-ctl -N, the "
                               "NVLink switch trays; a GPU whose recovery action is GPU_RESET needs a reset" % self.host)

    def check_imex(self):
        if self.profile["imex"] != "required":
            return
        imex = self.gpu.get("imex")
        if not isinstance(imex, dict):
            self.ans.unknown(self.host, "imex", "gpu_facts reported no IMEX section")
            return
        problems = []
        if not imex.get("installed"):
            problems.append("nvidia-imex is not installed")
        elif imex.get("ctl_status") not in ("ok",):
            problems.append("nvidia-imex-ctl -N: %s" % imex.get("ctl_status"))
        if not imex.get("channels"):
            problems.append("no /dev/nvidia-caps-imex-channels/channel*")
        if problems:
            self.ans.violation(self.host, "imex", "IMEX running with a channel (IMEX guide)", "; ".join(problems),
                               "install nvidia-imex of the driver's version on %s, start it (systemctl start "
                               "nvidia-imex) and create channel0 (mknod /dev/nvidia-caps-imex-channels/channel0)"
                               % self.host)

    def check_image(self):
        want = self.profile.get("image_cuda")
        if not want:
            return
        c = self.container if isinstance(self.container, dict) else {}
        cuda, where = _image_cuda_found(c, self.matrix)
        if cuda is None:
            self.ans.unknown(self.host, "image_cuda", where)
        else:
            have, need = cuda_tuple(cuda), cuda_tuple(want)
            if have[0] != need[0] or have[:2] < need[:2]:
                self.ans.violation(self.host, "image_cuda", "a CUDA %s image (profile %s)" % (want, self.profile["name"]),
                                   "CUDA %s (%s) in %s" % (cuda, where, c.get("reference")),
                                   "use the profile's image (a CUDA %s build), or a profile for this image" % want)
            elif have[:2] != need[:2]:
                self.ans.note(self.host, "image_cuda", "image CUDA %s, profile %s: same family" % (cuda, want))
        if c.get("skipped") or not c.get("reference"):
            self.ans.unknown(self.host, "image_digest", "no image given (repro_vllm_image)")
            return
        if not c.get("found_in"):
            self.ans.violation(self.host, "image_digest", "the image %s present on the host" % c["reference"],
                               "not found in any container runtime (%s)" % (", ".join(
                                   sorted((c.get("runtimes") or {}).keys())) or "none"),
                               "pull it by digest on %s (docker pull <repo>@sha256:...)" % self.host)
        elif self.profile.get("image_by_digest") and not c.get("by_digest"):
            self.ans.violation(self.host, "image_digest", "the image referenced by digest (repo@sha256:...)",
                               c["reference"], "pin the image: %s" % (c.get("pinned_reference") or
                                                                      "<repo>@sha256:<digest>"))


def image_digest_of(container):
    """The one digest identifying the host's image (same order as module_utils/container/_container.image_digest)."""
    c = container if isinstance(container, dict) else {}
    for key in ("repo_digests", "config_digests"):
        if c.get(key):
            return c[key][0]
    ref = c.get("reference") or ""
    return ref.split("@", 1)[1] if "@sha256:" in ref else None


def check(profile, matrix, hosts, allow_foreign=False):
    """Judge ``hosts`` ({name: {"fingerprint": dict|None, "container": dict|None, "missing": str|None}}, in job
    order) against ``profile``; returns the compatibility.json document."""
    ans = _Answer()
    for key, row in sorted(profile.get("sources", {}).items()):
        if row.get("confidence") == "uncertain":
            ans.note(None, PROFILE_KEYS[key][0], "profile %s: %s is uncertain: %s" % (
                profile["name"], key, row["source"]))
    checks = []
    missing = []
    for name, part in hosts.items():
        if part.get("missing") or not part.get("fingerprint"):
            missing.append(name)
            ans.note(name, "gpu_count", "unknown: no fingerprint of this host (%s)" % (
                part.get("missing") or "no fingerprint.json"))
            continue
        try:
            if not isinstance(part["fingerprint"], dict) or not isinstance(part.get("container") or {}, dict):
                raise TypeError("fingerprint.json and container.json must each be a JSON object")
            hc = _HostCheck(ans, name, part["fingerprint"], part.get("container"), profile, matrix, allow_foreign)
            hc.run()
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # a fact of the wrong shape (an edited or foreign part): one host named, not a traceback for the job
            raise JudgeError(name, "%s: %s" % (type(exc).__name__, exc)) from exc
        checks.append(hc)
    need = profile["gpu_count_min"]
    total = sum(c.gpus_found for c in checks)
    if need and total < need:
        ans.violation(None, "gpu_count", "at least %d %s GPUs across the job" % (need, " or ".join(
            profile["gpu_models"]) or ""), "%d GPUs on %d host(s)%s" % (
                total, len(checks), "; no fingerprint of %s" % ", ".join(missing) if missing else ""),
            "add hosts to the job (repro_vllm_targets) until it has %d GPUs" % need)
    if profile["fabric"] == "required" and len(checks) > 1:
        clusters = sorted(set(str(f["cluster_uuid"]) for c in checks for f in c.fabric if f["cluster_uuid"]))
        cliques = sorted(set(str(f["clique_id"]) for c in checks for f in c.fabric if f["clique_id"] is not None))
        if len(clusters) > 1 or len(cliques) > 1:
            ans.violation(None, "fabric", "one NVLink domain: the same cluster UUID and clique id on every GPU",
                          "cluster UUIDs %s, cliques %s" % (", ".join(clusters), ", ".join(cliques)),
                          "schedule the job on trays of one NVLink domain and partition (nvidia-smi -q: Fabric)")
    if profile.get("image_cuda"):
        digests = {}
        for c in checks:
            d = image_digest_of(c.container)
            if d:
                digests.setdefault(d, []).append(c.host)
        if len(digests) > 1:
            ans.violation(None, "image_digest", "one image digest on every host of the job",
                          "; ".join("%s on %s" % (d, ", ".join(h)) for d, h in sorted(digests.items())),
                          "pull the same image by digest on every host")
    if not profile["gpu_models"] and not need:
        ans.note(None, "gpu_model", "profile %s checks no GPU boundary" % profile["name"])
    return {"profile": profile["name"], "verdict": "fail" if ans.violations else "pass",
            "violations": ans.violations, "notes": ans.notes}


def console_lines(doc):
    """One line per violation (host | fact | required | found | fix), then the notes."""
    lines = ["compatibility | profile %s: %s, %d violation(s), %d note(s)" % (
        doc["profile"], doc["verdict"].upper(), len(doc["violations"]), len(doc["notes"]))]
    for v in doc["violations"]:
        lines.append("VIOLATION %s | %s | required: %s | found: %s | fix: %s" % (
            v["host"] or "job", v["fact"], v["required"], v["found"], v["fix"]))
    for n in doc["notes"]:
        lines.append("note %s | %s | %s" % (n["host"] or "job", n["fact"], n["note"]))
    return lines
