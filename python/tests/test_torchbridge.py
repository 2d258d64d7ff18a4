"""Tests of the torchbridge Python package against a real `torchbridge serve`.

    PYTHONPATH=python python -m unittest discover -s python/tests -v

They need torch and the `torchbridge` binary: `TORCHBRIDGE_BIN`, else the repository's
`build/bridge/cli/torchbridge` (set here when it exists), else the tests that run the host are
skipped, saying so. Compiling an AOTInductor package takes tens of seconds, so the class makes
one package (and one TorchScript module) of the same small MLP and every test reuses them.
"""

import gc
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
from unittest import mock

from support import (Raises, Varargs, VarargsRaises, alive, child_env, healthz, mlp,
                     needs_binary, needs_torch, torch)

import torchbridge
from torchbridge import ExportError, ServeError, TorchbridgeError


@needs_torch
class TorchbridgeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="torchbridge-test-")
        cls.module = mlp()
        cls.x = torch.linspace(-1, 1, 6).reshape(2, 3)
        cls.pt2 = torchbridge.export(cls.module, (cls.x,), os.path.join(cls.dir, "mlp.pt2"))
        cls.pt = torchbridge.export(cls.module, (cls.x,), os.path.join(cls.dir, "mlp.pt"),
                                    training=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    # export ----------------------------------------------------------------------------------

    def test_export_writes_an_aoti_package(self):
        self.assertTrue(self.pt2.endswith("mlp.pt2"))
        with zipfile.ZipFile(self.pt2) as z:
            self.assertTrue(any(n.endswith(".wrapper.cpp") for n in z.namelist()),
                            "the host reads input shapes from the wrapper source")
        self.assertEqual([f for f in os.listdir(self.dir) if "partial" in f], [])
        self.assertTrue(self.module.training, "export restores the mode it found")

    def test_export_writes_a_torchscript_module(self):
        loaded = torch.jit.load(self.pt)
        with torch.no_grad():
            torch.testing.assert_close(loaded(self.x), self.module(self.x))

    def test_export_restores_the_training_mode(self):
        module = Varargs().train()
        path = torchbridge.export(module, (self.x,), os.path.join(self.dir, "varargs.pt"),
                                  training=True)
        self.assertTrue(module.training)
        traced = torch.jit.load(path)
        # Traced in eval mode: dropout off, so the module doubles its input.
        torch.testing.assert_close(traced(self.x), self.x * 2)

    def test_export_refuses_a_path_of_the_other_format(self):
        with self.assertRaisesRegex(ValueError, r"\.pt2"):
            torchbridge.export(self.module, (self.x,), os.path.join(self.dir, "m.pt"))
        with self.assertRaisesRegex(ValueError, r"\.pt\b"):
            torchbridge.export(self.module, (self.x,), os.path.join(self.dir, "m.pt2"),
                               training=True)

    def test_export_errors_name_the_model_and_the_cause(self):
        path = os.path.join(self.dir, "raises.pt2")
        with self.assertRaises(ExportError) as caught:
            torchbridge.export(Raises(), (self.x,), path)
        self.assertIn(path, str(caught.exception))
        self.assertIn("boom in forward", str(caught.exception))
        self.assertFalse(os.path.exists(path))
        with self.assertRaises(ExportError) as caught:
            torchbridge.serve({"untraceable": VarargsRaises()}, {"untraceable": (self.x,)},
                              training=["untraceable"])
        message = str(caught.exception)
        self.assertIn("'untraceable'", message)
        self.assertIn("torch.jit.script failed", message)
        self.assertIn("boom while tracing", message)
        self.assertEqual(caught.exception.model, "untraceable")

    @needs_binary
    def test_serve_names_a_model_whose_export_fails(self):
        with self.assertRaises(ExportError) as caught:
            torchbridge.serve({"broken": Raises()}, {"broken": (self.x,)})
        self.assertIn("cannot export model 'broken'", str(caught.exception))
        self.assertIn("boom in forward", str(caught.exception))

    @needs_binary
    def test_describe_names_forward(self):
        aoti = torchbridge.describe(self.pt2)
        self.assertIn("forward(", aoti)
        self.assertIn("AOTInductor package", aoti)
        self.assertIn("float32 [2, 3]", aoti)
        script = torchbridge.describe(self.pt)
        self.assertIn("forward(Tensor", script)
        self.assertIn("parameters: 4 (0.weight [4, 3] Float", script)
        self.assertIn("::backward", script)

    @needs_binary
    def test_describe_errors(self):
        bad = os.path.join(self.dir, "not_a_model.pt")
        with open(bad, "wb") as f:
            f.write(b"not a zip archive")
        with self.assertRaisesRegex(TorchbridgeError, r"not_a_model\.pt"):
            torchbridge.describe(bad)
        with self.assertRaises(FileNotFoundError):
            torchbridge.describe(os.path.join(self.dir, "missing.pt"))

    # serve -----------------------------------------------------------------------------------

    @needs_binary
    def test_serve_an_aoti_package_and_a_trainable_module(self):
        models = {"infer": self.pt2, "train": self.module, "plain": mlp()}
        with torchbridge.serve(models, {"train": (self.x,)}, training=["train"]) as server:
            self.assertRegex(server.address, r"^ws://127\.0\.0\.1:\d+$")
            self.assertEqual(server.address, f"ws://127.0.0.1:{server.port}")
            self.assertIn(server.address, server.banner)
            self.assertEqual(set(server.signatures), {"infer", "train", "plain"})
            self.assertTrue(server.signatures["infer"].startswith("forward("))
            self.assertEqual(server.signatures["train"], "forward(Tensor input) -> Tensor")
            self.assertEqual(server.formats, {"infer": "AOTInductor", "train": "TorchScript",
                                              "plain": "TorchScript"})
            self.assertEqual(server.models["infer"], os.path.abspath(self.pt2))
            self.assertTrue(server.models["train"].endswith("train.pt"))
            self.assertEqual(healthz(server.port), "ok")
            self.assertIn("Custom op train:", server.logs())
            self.assertTrue(server.running())
            exported = os.path.dirname(server.models["train"])
        self.assertIsNotNone(server.process.returncode)
        self.assertFalse(alive(server.process.pid))
        self.assertFalse(os.path.exists(exported), "the temporary exports go with the host")
        self.assertTrue(os.path.exists(self.pt2), "a file given by path stays")
        self.assertEqual(server.stop(), server.process.returncode)  # twice is fine

    @needs_binary
    def test_stop_and_wait(self):
        workdir = os.path.join(self.dir, "work")
        server = torchbridge.serve({"m": self.module}, workdir=workdir,
                                   extra_args=("--log-level", "warn"))
        self.assertTrue(os.path.isfile(os.path.join(workdir, "m.pt")))
        pid = server.process.pid
        self.assertTrue(alive(pid))
        self.assertEqual(server.stop(timeout=10), 0)  # SIGTERM is a clean stop
        self.assertEqual(server.wait(), 0)
        self.assertFalse(alive(pid))
        self.assertTrue(os.path.isfile(os.path.join(workdir, "m.pt")), "workdir is the caller's")

    @needs_binary
    def test_a_collected_server_stops_its_host(self):
        server = torchbridge.serve({"m": self.pt})
        process = server.process
        del server
        gc.collect()
        self.assertIsNotNone(process.wait(10))

    @needs_binary
    def test_a_port_in_use(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            with self.assertRaises(ServeError) as caught:
                torchbridge.serve({"m": self.pt}, port=port)
        error = caught.exception
        self.assertEqual(error.returncode, 1)
        self.assertIn(f"cannot listen on 127.0.0.1:{port}: Address already in use", str(error))
        self.assertIn("exited with code 1", str(error))

    @needs_binary
    def test_a_corrupt_model_file(self):
        bad = os.path.join(self.dir, "corrupt_model.pt")
        with open(bad, "wb") as f:
            f.write(b"\x00garbage, not TorchScript")
        with self.assertRaises(ServeError) as caught:
            torchbridge.serve({"bad": bad})
        self.assertEqual(caught.exception.returncode, 2)
        self.assertIn("corrupt_model.pt", str(caught.exception))
        self.assertIn("cannot load TorchScript module", str(caught.exception))

    @needs_binary
    def test_a_host_too_slow_to_start(self):
        with self.assertRaises(ServeError) as caught:
            torchbridge.serve({"m": self.pt}, startup_timeout=0.01)
        self.assertIsNone(caught.exception.returncode)
        self.assertIn("printed no address within 0.01 s", str(caught.exception))

    def test_serve_checks_its_arguments_before_starting_anything(self):
        with self.assertRaises(FileNotFoundError):
            torchbridge.serve({"m": os.path.join(self.dir, "missing.pt")})
        with self.assertRaisesRegex(ValueError, "inference only"):
            torchbridge.serve({"m": self.pt2}, training=["m"])
        with self.assertRaisesRegex(ValueError, "not among the models"):
            torchbridge.serve({"m": self.pt}, training=["other"])
        with self.assertRaisesRegex(ValueError, "without '='"):
            torchbridge.serve({"a=b": self.pt})

    @needs_binary
    def test_the_host_dies_with_the_python_process_that_started_it(self):
        script = (
            "import sys, time, torchbridge\n"
            f"server = torchbridge.serve({{'m': {self.pt!r}}})\n"
            "print(server.process.pid, server.port, flush=True)\n"
            "time.sleep(600)\n"
        )
        env = child_env()
        parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        try:
            line = parent.stdout.readline().decode()
            self.assertRegex(line, r"^\d+ \d+$", parent.stderr.read().decode() if not line else "")
            pid, port = map(int, line.split())
            self.assertEqual(healthz(port), "ok")
            parent.kill()  # SIGKILL: no atexit, no finalizer; only the closed stdin pipe
            parent.wait()
            deadline = time.monotonic() + 10
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertFalse(alive(pid), "the host outlived the Python process that started it")
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
            parent.stdout.close()
            parent.stderr.close()


class PackageTest(unittest.TestCase):
    """What needs neither an export nor a running host."""

    def test_version(self):
        self.assertEqual(torchbridge.__version__, "0.1.0")

    @needs_torch
    def test_torch_version(self):
        self.assertEqual(torchbridge.torch_version(), torch.__version__)

    def test_binary_lookup_order(self):
        with mock.patch.dict(os.environ, {"TORCHBRIDGE_BIN": "/nonexistent/torchbridge"}):
            with self.assertRaisesRegex(TorchbridgeError, "TORCHBRIDGE_BIN=/nonexistent"):
                torchbridge.binary()
        env = {k: v for k, v in os.environ.items() if k != "TORCHBRIDGE_BIN"}
        bundled = os.path.join(os.path.dirname(torchbridge.__file__), "bin", "torchbridge")
        with tempfile.TemporaryDirectory() as empty, \
                mock.patch.dict(os.environ, dict(env, PATH=empty), clear=True):
            if os.path.isfile(bundled):  # the installed wheel's: it comes before PATH
                self.assertEqual(torchbridge.binary(), bundled)
                return
            with self.assertRaisesRegex(TorchbridgeError, "install the torchbridge wheel"):
                torchbridge.binary()
            on_path = os.path.join(empty, "torchbridge")
            with open(on_path, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(on_path, 0o755)
            self.assertEqual(torchbridge.binary(), on_path)

    def test_the_console_script_is_never_its_own_binary(self):
        # TORCHBRIDGE_BIN=$(which torchbridge) names the wheel's console script, which runs this
        # package again: taken as the binary, it would exec itself until the environment burst.
        with tempfile.TemporaryDirectory() as folder:
            script = os.path.join(folder, "torchbridge")
            with open(script, "w") as f:
                f.write("#!/usr/bin/python3\nimport sys\nfrom torchbridge.__main__ import main\n"
                        "sys.exit(main())\n")
            os.chmod(script, 0o755)
            env = dict(os.environ, TORCHBRIDGE_BIN=script, PATH=folder)
            with mock.patch.dict(os.environ, env, clear=True):
                try:
                    self.assertNotEqual(torchbridge.binary(), script)
                except TorchbridgeError as e:  # no other binary here: an error, never a loop
                    self.assertIn("install the torchbridge wheel", str(e))

    def test_main_execs_the_binary_with_the_arguments(self):
        from torchbridge import __main__ as entry

        with mock.patch.dict(os.environ, {"TORCHBRIDGE_BIN": sys.executable}), \
                mock.patch.object(entry.os, "execve") as execve:
            entry.main(["serve", "--port", "0"])
        execve.assert_called_once()
        path, argv, env = execve.call_args.args
        self.assertEqual(path, sys.executable)
        self.assertEqual(argv, [sys.executable, "serve", "--port", "0"])
        self.assertEqual(env["TORCHBRIDGE_BIN"], sys.executable)
        with mock.patch.dict(os.environ, {"TORCHBRIDGE_BIN": "/nonexistent"}), \
                self.assertRaises(SystemExit) as caught:
            entry.main(["--version"])
        self.assertIn("/nonexistent", str(caught.exception.code))

    @needs_binary
    def test_python_m_torchbridge(self):
        env = child_env()
        result = subprocess.run([sys.executable, "-m", "torchbridge", "--version"],
                                capture_output=True, env=env, timeout=60, check=True)
        self.assertTrue(re.match(rb"torchbridge 0\.1\.0 ", result.stdout), result.stdout)


if __name__ == "__main__":
    unittest.main()
