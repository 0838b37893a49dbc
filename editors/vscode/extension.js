// The Ignite extension: starts `ignite lsp` (the binary named by the
// `ignite.path` setting) over stdio for `.ign` files; everything else
// (diagnostics, formatting, navigation, completion, lenses) comes from
// the server.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function start() {
  const command = vscode.workspace.getConfiguration("ignite").get("path") || "ignite";
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "ignite",
    "Ignite language server",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "ignite" }] }
  );
  return client.start().catch((error) => {
    vscode.window.showErrorMessage(
      `Ignite: cannot start \`${command} lsp\` (${error.message}); set \`ignite.path\` to the ignite binary`
    );
  });
}

async function restart() {
  if (client) {
    await client.stop();
  }
  await start();
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("ignite.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("ignite.path")) {
        restart();
      }
    })
  );
  return start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
