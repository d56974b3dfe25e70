"""The Tape kernel under Jupyter's own conformance suite, jupyter_kernel_test,
with every case it offers that the language has, and beside it what the suite
does not cover: interrupts by signal and by message, errors and
stop_on_error, and messages signed with the wrong key, which must never run.

Run by tests/jupyter.rs, which installs the kernelspec into a temporary prefix
and points JUPYTER_PATH at it (TAPE_KERNEL names the kernel, TAPE_SCRATCH a
folder to write in).
"""

import os
import time
import unittest
import uuid

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel
from jupyter_client.session import Session

KERNEL = os.environ.get("TAPE_KERNEL", "tape")
SCRATCH = os.environ.get("TAPE_SCRATCH", "/tmp")


class TapeKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL
    language_name = "tape"
    file_extension = ".tape"

    code_hello_world = "WriteLn('hello, world');"

    # The language has no statement that writes to stderr; tapec writes its
    # warnings there, so a warning is the cell's stderr.
    code_stderr = "n := 1;\nn = 2;"

    completion_samples = [
        {"text": "Tra", "matches": {"Transpose"}},
        {"text": "x := RowS", "matches": {"RowSoftmax", "RowSum"}},
        {"text": ":bl", "matches": {"blame"}},
    ]

    complete_code_samples = [
        "x := 1;",
        "WriteLn('a');",
        ":vars",
        "tape",
        "tape\n  s := Sum([[1, 2]]);\nend;",
        "for i := 1 to 3 do\n  WriteLn(i);",
    ]
    incomplete_code_samples = [
        "for i := 1 to 3 do",
        "x := [1,",
        "begin\n  x := 1;",
        "procedure P(a: Real);",
        "{ a comment not closed",
    ]
    invalid_code_samples = ["x := ;", "x := 1 +* 2;", "end end;"]

    # No pager: tapec's help is plain text in the cell (`:help NAME`).

    code_generate_error = "x := [[1, 2]] * [[3, 4]];"

    code_execute_result = [
        {"code": "1 + 2;", "result": "3"},
        {"code": "Sqrt(16.0);", "result": "4.000000"},
        {"code": "[[1, 2], [3, 4]];", "result": "  row 1: 1.000000 2.000000\n  row 2: 3.000000 4.000000"},
    ]

    code_display_data = [
        {"code": "Plot([[1, 3, 2]]);", "mime": "image/svg+xml"},
        {"code": "x := [[1, 2]];\ntape\n  y := Sum(x * 2);\nend;\n:graph", "mime": "image/svg+xml"},
        {"code": "x := [[1, 2]];\ntape\n  y := Sum(x * 2);\nend;\n:walk", "mime": "text/html"},
    ]

    code_history_pattern = "1 + ?;"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "Sqrt"

    # No clear_output: nothing in the language clears a cell's output.


class TapeIopubWelcomeTests(jupyter_kernel_test.IopubWelcomeTests):
    kernel_name = KERNEL
    support_iopub_welcome = True


def run_cell(kc, code, timeout=30, **options):
    """Runs a cell; its reply's content and its outputs' (type, content)."""
    msg_id = kc.execute(code, **options)
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        outputs.append((msg["msg_type"], msg["content"]))
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"], outputs


def stdout_of(outputs):
    return "".join(c["text"] for t, c in outputs if t == "stream" and c["name"] == "stdout")


class InterruptTests(unittest.TestCase):
    """A `while true do` stops, the kernel lives and keeps what completed,
    whether the interrupt comes as SIGINT or as an interrupt_request."""

    def interrupt(self, kernel_name):
        km, kc = start_new_kernel(kernel_name=kernel_name)
        try:
            msg_id = kc.execute("n := 0;\nwhile true do\n  n := n + 1;")
            # Wait until the loop runs.
            while True:
                msg = kc.get_iopub_msg(timeout=30)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
                    break
            time.sleep(0.5)
            km.interrupt_kernel()
            while True:
                reply = kc.get_shell_msg(timeout=30)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
            self.assertEqual(reply["content"]["status"], "error")
            self.assertEqual(reply["content"]["ename"], "interrupted")
            self.assertEqual(reply["content"]["evalue"], "interrupted: what completed is kept")
            self.assertTrue(km.is_alive())
            content, outputs = run_cell(kc, "n > 0;")
            self.assertEqual(content["status"], "ok")
            results = [c["data"]["text/plain"] for t, c in outputs if t == "execute_result"]
            self.assertEqual(results, ["true"])
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

    def test_interrupt_by_signal(self):
        self.interrupt(KERNEL)

    def test_interrupt_by_message(self):
        self.interrupt(KERNEL + "-message")


class OneKernel(unittest.TestCase):
    """Tests that share one kernel, started before the first."""

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name=KERNEL)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)


class ErrorTests(OneKernel):
    """An error names the cell and its line, says that the cell changed
    nothing, and with stop_on_error the cells queued behind it are aborted,
    not run."""

    def reply_to(self, msg_id):
        while True:
            reply = self.kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    def test_the_error_names_the_cell_and_its_line(self):
        content, _ = run_cell(self.kc, "Kept := 1;")
        count = content["execution_count"] + 1
        content, outputs = run_cell(self.kc, "Undone := 1;\n\nbad := [[1, 2]] * [[3, 4]];")
        self.assertEqual(content["status"], "error")
        text = "\n".join(content["traceback"])
        self.assertIn(f"cell [{count}]:3:", text)
        self.assertIn("undone too", content["traceback"][-1])
        content, _ = run_cell(self.kc, "Undone;")
        self.assertEqual(content["status"], "error")

    def test_cells_queued_behind_an_error_are_aborted(self):
        failing = self.kc.execute("x := [[1, 2]] * [[3, 4]];", stop_on_error=True)
        queued = [self.kc.execute(f"Queued{i} := {i};") for i in range(2)]
        self.assertEqual(self.reply_to(failing)["status"], "error")
        for msg_id in queued:
            self.assertEqual(self.reply_to(msg_id)["status"], "aborted")
        content, _ = run_cell(self.kc, "Queued0;")
        self.assertEqual(content["status"], "error")
        self.assertIn("Queued0", content["evalue"])

    def test_without_stop_on_error_queued_cells_run(self):
        failing = self.kc.execute("x := [[1, 2]] * [[3, 4]];", stop_on_error=False)
        queued = self.kc.execute("Ran := 1;")
        self.assertEqual(self.reply_to(failing)["status"], "error")
        self.assertEqual(self.reply_to(queued)["status"], "ok")
        content, outputs = run_cell(self.kc, "Ran;")
        self.assertEqual(content["status"], "ok")


class UserExpressionTests(OneKernel):
    """An execute_request's user_expressions are evaluated after the cell,
    each to its value as the prompt echoes it or to an error, and leave
    the session as it was."""

    def test_each_expression_gets_its_value_or_an_error(self):
        asked = {"double": "Ux * 2", "unknown": "Nope + 1", "statement": "Ux := 1", "row": "[[1, 2]] * 2"}
        content, outputs = run_cell(self.kc, "Ux := 6;", user_expressions=asked)
        self.assertEqual(content["status"], "ok")
        got = content["user_expressions"]
        self.assertEqual(sorted(got), sorted(asked))
        self.assertEqual(got["double"], {"status": "ok", "data": {"text/plain": "12"}, "metadata": {}})
        self.assertEqual(got["row"]["data"]["text/plain"], "  row 1: 2.000000 4.000000")
        self.assertEqual(got["unknown"]["status"], "error")
        self.assertIn("Nope", got["unknown"]["evalue"])
        self.assertEqual(got["statement"]["status"], "error")
        self.assertIn("not an expression", got["statement"]["evalue"])
        content, outputs = run_cell(self.kc, "Ux;")
        results = [c["data"]["text/plain"] for t, c in outputs if t == "execute_result"]
        self.assertEqual(results, ["6"])

    def test_a_failing_cell_evaluates_none(self):
        content, _ = run_cell(self.kc, "Uy := [[1]] * [[1, 2], [3, 4]];", user_expressions={"one": "1"})
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["user_expressions"], {})


class SignatureTests(OneKernel):
    """A message signed with another key, or not signed, is dropped unread."""

    def send_forged(self, session, code):
        shell = self.km.connect_shell(identity=uuid.uuid4().bytes)
        try:
            content = {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            }
            session.send(shell, "execute_request", content)
            # Long enough for a kernel that ran it to have answered.
            answered = shell.poll(2000)
            self.assertEqual(answered, 0, "the kernel answered a forged message")
        finally:
            shell.close()

    def test_wrong_key_is_not_run(self):
        path = os.path.join(SCRATCH, "forged.svg")
        forged = Session(key=b"not-the-connection-files-key", username="forger")
        self.send_forged(forged, f"Secret := 42;\nPlot([[1, 2]], '{path}');")
        self.assertFalse(os.path.exists(path), "the forged cell wrote its file")
        content, outputs = run_cell(self.kc, "Secret;")
        self.assertEqual(content["status"], "error")
        self.assertIn("Secret", content["evalue"])

    def test_missing_signature_is_not_run(self):
        unsigned = Session(key=b"", username="forger")
        self.send_forged(unsigned, "Unsigned := 1;")
        content, outputs = run_cell(self.kc, "Unsigned;")
        self.assertEqual(content["status"], "error")

    def test_right_key_runs(self):
        content, outputs = run_cell(self.kc, "Signed := 7;\nSigned * 6;")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(stdout_of(outputs), "Signed = 7\n")
        results = [c["data"]["text/plain"] for t, c in outputs if t == "execute_result"]
        self.assertEqual(results, ["42"])


if __name__ == "__main__":
    unittest.main()
