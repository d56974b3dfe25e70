"""A second client of `tapec lsp`, independent of the one in tests/lsp.rs:
pygls's LanguageClient, with lsprotocol's types, as a Python editor plugin
would use them. It starts the server, opens a broken program, and checks
that the diagnostic arrives with the right range (UTF-16 columns, after an
`é`) and that hovering over a builtin shows its doc line; then shuts the
server down and checks that it exits with status 0.

    python tests/lsp_client.py TAPEC 'DOC LINE OF WriteLn'

tests/lsp.rs runs it, passing the doc line from the declarations. It exits
0 when every check holds, else 1 with what went wrong.
"""

import asyncio
import sys

from lsprotocol import types
from pygls.lsp.client import LanguageClient

URI = "file:///work/broken.tape"
# `y` is never assigned; `WriteLn('é', ` is 13 UTF-16 units (and 14 bytes).
BROKEN = "x := 1;\nWriteLn('é', y);\n"
WAIT = 30


async def check(tapec: str, doc_line: str) -> list[str]:
    failures = []
    client = LanguageClient("tapec-lsp-test", "1")
    published: asyncio.Future = asyncio.get_running_loop().create_future()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if not published.done():
            published.set_result(params)

    await client.start_io(tapec, "lsp")
    result = await asyncio.wait_for(
        client.initialize_async(
            types.InitializeParams(
                process_id=None,
                root_uri=None,
                capabilities=types.ClientCapabilities(),
            )
        ),
        WAIT,
    )
    if result.server_info is None or result.server_info.name != "tapec":
        failures.append(f"server info: {result.server_info}")
    client.initialized(types.InitializedParams())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=URI, language_id="tape", version=1, text=BROKEN
            )
        )
    )
    params = await asyncio.wait_for(published, WAIT)
    expected = types.Range(
        start=types.Position(line=1, character=13),
        end=types.Position(line=1, character=14),
    )
    if len(params.diagnostics) != 1:
        failures.append(f"diagnostics: {params.diagnostics}")
    else:
        d = params.diagnostics[0]
        if d.range != expected:
            failures.append(f"range {d.range}, not {expected}")
        if "unknown variable `y`" not in d.message:
            failures.append(f"message: {d.message!r}")
        if d.severity != types.DiagnosticSeverity.Error or d.source != "tapec":
            failures.append(f"severity {d.severity}, source {d.source}")

    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=URI),
                position=types.Position(line=1, character=3),
            )
        ),
        WAIT,
    )
    text = getattr(hover.contents, "value", None) if hover else None
    if text is None or doc_line not in text or not text.startswith("WriteLn("):
        failures.append(f"hover on WriteLn: {text!r}")

    await asyncio.wait_for(client.shutdown_async(None), WAIT)
    client.exit(None)
    server = client._server
    status = await asyncio.wait_for(server.wait(), WAIT) if server else None
    if status != 0:
        failures.append(f"exit status {status}")
    await client.stop()
    return failures


def main() -> int:
    tapec, doc_line = sys.argv[1], sys.argv[2]
    failures = asyncio.run(check(tapec, doc_line))
    for f in failures:
        print(f"lsp_client.py: {f}", file=sys.stderr)
    if not failures:
        print("lsp_client.py: diagnostics, hover and exit as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
