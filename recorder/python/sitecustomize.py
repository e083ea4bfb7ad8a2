"""memtrace request capture for Python programs.

Python imports this module at startup (sitecustomize). It changes nothing
until the program imports a framework:

- torch: before torch loads, the PyTorch bridge (torch-bridge.cpp, the path
  in MEMTRACE_TORCH_BRIDGE) is found in the cache or compiled against this
  PyTorch in a separate process (torch.utils.cpp_extension; cached per
  PyTorch version under $MEMTRACE_CACHE_DIR or ~/.cache/memtrace). After
  torch has loaded, the bridge is attached to the caching allocator's trace
  hook from torch.cuda's lazy-init queue: after the allocator exists, before
  the first allocation. If no bridge can be had, PyTorch is switched to
  backend:cudaMallocAsync so that CUPTI sees every request (slower; said on
  stderr).
  With --stacks python the bridge names each request's Python call site, and
  torch.autograd.backward and torch.autograd.grad are wrapped so that
  allocations made by autograd's own threads (which hold no Python frames)
  are attributed to the Python line that started the work.
- jax / tensorflow have no such hook: their platform allocators
  (XLA_PYTHON_CLIENT_ALLOCATOR=platform, TF_GPU_ALLOCATOR=cuda_malloc_async)
  are switched on, unless the program chose one, and that is said on stderr.

Each process tells its own recorder (memtrace_set_capture in
libmemtrace-inject.so) what its trace holds -- the hook attached or refused,
or the driver-level allocator -- once CUDA has started (for JAX and
TensorFlow, when the framework is imported); that becomes the process's
capture label (processes.capture). Nothing of it is inherited: a child
decides its own. MEMTRACE_PYTHON_HOOK=<pid> tells the recorder that this
hook ran in that process (a torch process without it was started in a way
that skipped it, and its label says so).

`memtrace record` puts this folder on PYTHONPATH for every program it runs,
so every Python process the program starts, however it is started (a shell,
env, make, torchrun, accelerate, uv run), gets here; a sitecustomize of the
program's own further down PYTHONPATH or in site-packages runs afterwards.
"""

# Only what every Python process already has is imported here: this runs in
# each one the recorded program starts. The rest is imported where a
# framework is prepared.
import os
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_BRIDGE = {"so": None, "why": ""}


def _say(msg):
    # One line per recorded program; children of a recorded process stay quiet.
    if not os.environ.get("MEMTRACE_PARENT_ROW"):
        sys.stderr.write("memtrace: " + msg + "\n")
        sys.stderr.flush()


def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k not in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != _HERE]
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def _torch_version(spec):
    for loc in spec.submodule_search_locations or []:
        try:
            with open(os.path.join(loc, "version.py")) as f:
                m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
                if m:
                    return m.group(1)
        except OSError:
            pass
    return None


# The bridge's sources, beside torch-bridge.cpp (MEMTRACE_TORCH_BRIDGE); the
# header is not compiled but is part of what the cached build is keyed by.
_BRIDGE_FILES = ("torch-bridge.cpp", "site-table.c", "site-table-private.h")

_BUILD = r"""
import sys
import torch.utils.cpp_extension as ce
ce.load(name="memtrace_torch_bridge", sources=sys.argv[2:], build_directory=sys.argv[1],
        with_cuda=True, is_python_module=False, extra_cflags=["-O2"], verbose=False)
"""


def _bridge_for(spec):
    """Path of the bridge library for this PyTorch, building it if needed."""
    src = os.environ.get("MEMTRACE_TORCH_BRIDGE", "")
    version = _torch_version(spec)
    files = [os.path.join(os.path.dirname(src), f) for f in _BRIDGE_FILES]
    if not src or not all(os.path.isfile(f) for f in files):
        return None, "torch-bridge.cpp not found"
    if not version:
        return None, "cannot tell the PyTorch version"
    import hashlib
    digest = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            digest.update(fh.read())
    digest = digest.hexdigest()[:12]
    cache = os.environ.get("MEMTRACE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memtrace")
    # the bridge reads CPython's frames: one build per PyTorch and Python version
    tag = "torch-%s-py%d.%d%s-%s" % (version, sys.version_info[0], sys.version_info[1],
                                     getattr(sys, "abiflags", ""), digest)
    out = os.path.join(cache, re.sub(r"[^A-Za-z0-9.+_-]", "_", tag))
    so = os.path.join(out, "memtrace_torch_bridge.so")
    if os.path.isfile(so):
        return so, ""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        return None, "cannot create %s (%s)" % (out, e.strerror)
    _say("building the PyTorch bridge for torch %s (once, cached in %s)" % (version, out))
    sources = [f for f in files if f.endswith((".cpp", ".c"))]
    import subprocess
    r = subprocess.run([sys.executable, "-c", _BUILD, out] + sources, env=_clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not os.path.isfile(so):
        last = [l for l in r.stdout.splitlines() if l.strip()][-1:] or ["unknown error"]
        return None, "building the bridge failed: " + last[0][:200]
    return so, ""


def _declare(label):
    """Tells this process's recorder (libmemtrace-inject.so) what its trace
    holds of the framework's requests: the process's capture label. Said in
    this process only; a child decides its own."""
    import ctypes
    try:
        ctypes.CDLL(os.environ.get("CUDA_INJECTION64_PATH") or "libmemtrace-inject.so") \
            .memtrace_set_capture(label.encode())
    except (OSError, AttributeError):
        pass


def _declare_when_cuda_starts(label):
    """An `after` for _Finder: declares LABEL from torch.cuda's lazy-init
    queue, once CUDA (and so the recorder) has started."""
    def after(torch):
        try:
            torch.cuda._lazy_call(lambda: _declare(label))
        except Exception as e:  # a PyTorch without lazy init queue
            _say("cannot tell the recorder how PyTorch is captured (%s)" % e)
    return after


_ASYNC = "requests (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)"


def _torch_fallback(why):
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if "backend" in conf:
        # the program chose its backend: memtrace does not override it
        _say("no PyTorch allocator hook (%s): PYTORCH_CUDA_ALLOC_CONF=%s keeps its allocator, "
             "so only its segments are recorded" % (why, conf))
        return _declare_when_cuda_starts(
            "segments only (no PyTorch allocator hook: %s; PYTORCH_CUDA_ALLOC_CONF=%s)"
            % (why, conf))
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = (conf + "," if conf else "") + "backend:cudaMallocAsync"
    _say("no PyTorch allocator hook (%s): recording requests with "
         "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, which is slower" % why)
    return _declare_when_cuda_starts(_ASYNC)


def _attach():
    import ctypes
    inject = os.environ.get("CUDA_INJECTION64_PATH", "")
    python = os.environ.get("MEMTRACE_STACKS") == "python"
    try:
        lib = ctypes.CDLL(inject)
        bridge = ctypes.CDLL(_BRIDGE["so"])
        event = ctypes.cast(lib.memtrace_torch_event, ctypes.c_void_p)
        intern = ctypes.cast(lib.memtrace_intern_site, ctypes.c_void_p)
        clock = ctypes.cast(lib.memtrace_torch_clock, ctypes.c_void_p)
        bridge.memtrace_torch_bridge_attach.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
        rc = bridge.memtrace_torch_bridge_attach(event, intern, clock, int(python))
    except (OSError, AttributeError) as e:
        rc = -1
        _BRIDGE["why"] = str(e)[:200]
    if rc != 0:
        why = _BRIDGE["why"] or "another backend?"
        _say("PyTorch's allocator refused the hook (%s): only what reaches the driver is "
             "recorded" % why)
        _declare("segments only (PyTorch's allocator refused the hook: %s)" % why)
        return
    _declare("requests (PyTorch allocator hook)")
    if python and not bridge.memtrace_torch_bridge_python_sites():
        _say("no Python call sites: they need CPython 3.11 to 3.13 (this is %d.%d)"
             % sys.version_info[:2])


def _work_site_wrapper(fn, begin, end):
    """fn, telling the recorder which Python line started the work it runs
    on other threads."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        previous = begin()
        try:
            return fn(*args, **kwargs)
        finally:
            end(previous)
    return wrapper


def _wrap_autograd(torch):
    import ctypes
    try:
        bridge = ctypes.PyDLL(_BRIDGE["so"])
        begin, end = bridge.memtrace_torch_bridge_work_begin, bridge.memtrace_torch_bridge_work_end
    except (OSError, AttributeError, TypeError):
        return
    begin.restype = ctypes.c_uint32
    begin.argtypes = []
    end.restype = None
    end.argtypes = [ctypes.c_uint32]
    for name in ("backward", "grad"):
        fn = getattr(torch.autograd, name, None)
        if callable(fn):
            setattr(torch.autograd, name, _work_site_wrapper(fn, begin, end))


def _torch_loaded(torch):
    try:
        torch.cuda._lazy_call(_attach)
    except Exception as e:  # a PyTorch without lazy init queue
        _say("cannot attach the PyTorch bridge (%s)" % e)
    if os.environ.get("MEMTRACE_STACKS") == "python" and _BRIDGE["so"]:
        _wrap_autograd(torch)


def _prepare_torch(spec):
    if os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").find("backend:cudaMallocAsync") >= 0:
        return _declare_when_cuda_starts(_ASYNC)
    so, why = _bridge_for(spec)
    if not so:
        return _torch_fallback(why)
    _BRIDGE["so"] = so
    _say("capturing PyTorch's requests through its allocator hook")
    return _torch_loaded


def _prepare_env_switch(var, value, framework):
    def prepare(spec):
        if not os.environ.get(var):
            os.environ[var] = value
            _say("%s has no allocator hook: recording its requests with %s=%s" % (framework, var, value))
        _declare("requests (%s=%s)" % (var, os.environ[var]))
        return None
    return prepare


_WATCH = {
    "torch": _prepare_torch,
    "jax": _prepare_env_switch("XLA_PYTHON_CLIENT_ALLOCATOR", "platform", "JAX"),
    "tensorflow": _prepare_env_switch("TF_GPU_ALLOCATOR", "cuda_malloc_async", "TensorFlow"),
}


class _Finder:
    """A meta path finder (importlib.abc.MetaPathFinder's protocol) that
    prepares a framework just before it is imported."""

    def find_spec(self, name, path=None, target=None):
        prepare = _WATCH.pop(name, None)
        if prepare is None:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            if _WATCH:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        after = prepare(spec)
        if after is not None and hasattr(spec.loader, "exec_module"):
            run = spec.loader.exec_module

            def exec_module(module, run=run, after=after):
                run(module)
                after(module)
            spec.loader.exec_module = exec_module
        return spec


def _chain_sitecustomize():
    """Runs the sitecustomize this one shadows, if there is one."""
    mod = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if mod is not None:
            sys.modules["sitecustomize"] = mod


if os.environ.get("MEMTRACE_CAPTURE", "requests").startswith("requests"):
    # tells the recorder, should CUDA start in this process, that this hook ran here
    os.environ["MEMTRACE_PYTHON_HOOK"] = str(os.getpid())
    sys.meta_path.insert(0, _Finder())
_chain_sitecustomize()
