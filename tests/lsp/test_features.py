"""`pytest-lsp` drives the real `ignite lsp` binary ($IGNITE_BIN) through
every feature, once as VS Code and once as Neovim (their recorded client
capabilities)."""

import asyncio
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

PROGRAM = '''\
type Ticket {
  email: string
  subject: string
}

tool Lookup {
  description "The account of an email"
  param email: string "The address"
  requires_capability accounts
  returns {email: email, tier: "vip"}
}

agent Writer {
  provider anthropic
  model "claude-x"
  tools Lookup
  capabilities accounts
  input subject: string
  prompt "Reply about {subject}"
}

contract Echo {
  input ticket: Ticket
  compute account = Lookup(email: ticket.email)
  compute subject = ticket.subject
  output account
  output subject
}

test "echo" {
  run Echo(ticket: {email: "a@b.c", subject: "hi"})
  expect subject == "hi"
}
'''


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"],
    config=ClientServerConfig(server_command=[os.environ["IGNITE_BIN"], "lsp"]),
)
async def client(request, lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities(request.param))
    )
    yield
    await lsp_client.shutdown_session()


def open_file(client: LanguageClient, path: pathlib.Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="ignite", version=1, text=text)
        )
    )
    return uri


async def diagnostics_of(client: LanguageClient, uri: str, wanted):
    """Waits until the diagnostics published for `uri` satisfy `wanted`."""
    for _ in range(200):
        if uri in client.diagnostics and wanted(client.diagnostics[uri]):
            return client.diagnostics[uri]
        await asyncio.sleep(0.05)
    raise AssertionError(f"diagnostics of {uri}: {client.diagnostics.get(uri)}")


def at(uri: str, line: int, character: int):
    return dict(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, character))


async def test_diagnostics_are_published_changed_and_cleared(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "broken.ign", "contract C {\n  compute y = missing\n  output y\n}\n")
    found = await diagnostics_of(client, uri, lambda d: len(d) > 0)
    assert found[0].code == "ignite::lower::unknown_name"
    assert found[0].range.start == types.Position(1, 14)
    assert found[0].source == "ignite"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="contract C {\n  compute y = 1\n  output y\n}\n")],
        )
    )
    await diagnostics_of(client, uri, lambda d: len(d) == 0)


async def test_navigation(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "program.ign", PROGRAM)
    await diagnostics_of(client, uri, lambda d: True)
    # `Lookup` in the call of `account` (line 23).
    definition = await client.text_document_definition_async(types.DefinitionParams(**at(uri, 23, 22)))
    assert definition.range.start == types.Position(5, 5)
    references = await client.text_document_references_async(
        types.ReferenceParams(**at(uri, 5, 6), context=types.ReferenceContext(include_declaration=True))
    )
    assert sorted(r.range.start.line for r in references) == [5, 15, 23]
    prepared = await client.text_document_prepare_rename_async(types.PrepareRenameParams(**at(uri, 24, 10)))
    assert prepared is not None
    edit = await client.text_document_rename_async(types.RenameParams(**at(uri, 24, 10), new_name="topic"))
    lines = sorted(e.range.start.line for e in edit.changes[uri])
    assert lines == [24, 26, 31]
    refused = None
    try:
        await client.text_document_rename_async(types.RenameParams(**at(uri, 24, 10), new_name="if"))
    except Exception as error:  # the server answers with an error response
        refused = error
    assert refused is not None


async def test_hover(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "program.ign", PROGRAM)
    await diagnostics_of(client, uri, lambda d: True)
    node = await client.text_document_hover_async(types.HoverParams(**at(uri, 24, 10)))
    assert "subject: string" in node.contents.value
    tool = await client.text_document_hover_async(types.HoverParams(**at(uri, 15, 9)))
    assert '"input_schema"' in tool.contents.value and "accounts" in tool.contents.value
    agent = await client.text_document_hover_async(types.HoverParams(**at(uri, 12, 7)))
    assert "capability closure" in agent.contents.value
    record = await client.text_document_hover_async(types.HoverParams(**at(uri, 22, 18)))
    assert "subject: string" in record.contents.value


async def test_completion(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "program.ign", PROGRAM)
    await diagnostics_of(client, uri, lambda d: True)
    labels = lambda result: {i.label for i in (result.items if hasattr(result, "items") else result)}
    fields = await client.text_document_completion_async(types.CompletionParams(**at(uri, 23, 41)))
    assert {"email", "subject"} <= labels(fields)
    statements = await client.text_document_completion_async(types.CompletionParams(**at(uri, 25, 2)))
    assert {"compute", "output", "guard"} <= labels(statements)
    items = await client.text_document_completion_async(types.CompletionParams(**at(uri, 34, 0)))
    assert {"contract", "tool", "test"} <= labels(items)


async def test_outline_tokens_lenses_and_hints(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "program.ign", PROGRAM)
    await diagnostics_of(client, uri, lambda d: True)
    doc = types.TextDocumentIdentifier(uri=uri)
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc))
    assert [s.name for s in symbols] == ["Ticket", "Lookup", "Writer", "Echo", "echo"]
    tokens = await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc))
    assert len(tokens.data) % 5 == 0 and len(tokens.data) > 0
    whole = types.Range(types.Position(0, 0), types.Position(40, 0))
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc, range=whole))
    assert ": string" in [h.label for h in hints]
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
    titles = sorted(lens.command.title for lens in lenses)
    assert titles == ["Run", "Run test"]
    run_test = next(lens.command for lens in lenses if lens.command.title == "Run test")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=run_test.command, arguments=run_test.arguments)
    )
    for _ in range(400):
        if client.messages:
            break
        await asyncio.sleep(0.05)
    assert client.messages, "the test run reported nothing"
    assert "passed" in client.messages[0].message, client.messages[0].message


async def test_run_lens_reports_a_failed_run(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "program.ign", PROGRAM)
    await diagnostics_of(client, uri, lambda d: True)
    doc = types.TextDocumentIdentifier(uri=uri)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
    run = next(lens.command for lens in lenses if lens.command.title == "Run")
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=run.command, arguments=run.arguments)
    )
    for _ in range(400):
        if client.messages:
            break
        await asyncio.sleep(0.05)
    # `Echo` needs its `ticket` input and there is no `program.inputs.json`.
    message = client.messages[0]
    assert message.type == types.MessageType.Error, message
    assert "contract `Echo` failed" in message.message and "ticket" in message.message, message.message


async def test_formatting(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "messy.ign", "contract   C {\n compute x=1+2\n   output x\n}\n")
    await diagnostics_of(client, uri, lambda d: True)
    options = types.FormattingOptions(tab_size=2, insert_spaces=True)
    doc = types.TextDocumentIdentifier(uri=uri)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(text_document=doc, options=options)
    )
    assert [e.new_text for e in edits] == ["contract C {\n  compute x = 1 + 2\n  output x\n}\n"]
