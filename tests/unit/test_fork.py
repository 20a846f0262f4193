"""A fork while another thread holds one of the package's locks (or is importing numpy for it) leaves a child
that works: the registry's build lock, the shared pool's lock and a half-done numpy import.

Each case runs in a fresh interpreter: a thread takes the lock (or starts the import) and holds it, the main
thread forks, and the child must load an encoding and encode (to a list and to numpy) within the time limit;
a child stuck on a lock is killed and the test fails. (tiktoken's child deadlocks on its registry lock.)
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

SCRIPT = r"""
import os, select, sys, threading, time
import bytebpe
from bytebpe import batching, registry

case = sys.argv[1]
held, release = threading.Event(), threading.Event()

def hold(lock):
    with lock:
        held.set()
        release.wait()

if case == "registry lock":
    threading.Thread(target=hold, args=(registry._build_lock,), daemon=True).start()
elif case == "pool lock":
    threading.Thread(target=hold, args=(batching._pool_lock,), daemon=True).start()
elif case == "numpy import":
    assert "numpy" not in sys.modules
    def first_numpy_call():
        held.set()
        bytebpe.get_encoding("cl100k_base").encode_batch_to_numpy(["hello"] * 3)
    threading.Thread(target=first_numpy_call, daemon=True).start()
held.wait()
if case == "numpy import":
    # Fork while numpy's import is under way on the other thread (importlib marks its spec as initialising).
    sys.setswitchinterval(1e-5)
    deadline = time.monotonic() + 10
    while not getattr(getattr(sys.modules.get("numpy"), "__spec__", None), "_initializing", False):
        assert time.monotonic() < deadline, "never saw numpy's import under way"
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    enc = bytebpe.get_encoding("o200k_base")
    ids = enc.encode_ordinary("hello world")
    flat, offsets = enc.encode_batch_to_numpy(["hello world"] * 50_000)
    os.write(write, b"ok" if ids == flat[:len(ids)].tolist() else b"bad")
    os._exit(0)
os.close(write)
ready, _, _ = select.select([read], [], [], 20)
answer = os.read(read, 2) if ready else b"stuck"
if answer == b"stuck":
    os.kill(pid, 9)
os.waitpid(pid, 0)
release.set()
print(answer.decode())
"""


@pytest.mark.parametrize("case", ["registry lock", "pool lock", "numpy import"])
def test_a_child_forked_while_another_thread_holds_a_lock_works(case, data_dir):
    done = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
