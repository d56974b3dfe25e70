// The tape extension's client: starts `tapec lsp` (or the program the
// setting `tape.server.path` names) over stdio for every .tape file, so its
// errors show as you type. The colours come from the grammar alone and need
// no server.

'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function serverPath() {
  return vscode.workspace.getConfiguration('tape').get('server.path', 'tapec') || 'tapec';
}

async function start() {
  const command = serverPath();
  const serverOptions = { command, args: ['lsp'], transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'tape' },
      { scheme: 'untitled', language: 'tape' },
    ],
  };
  client = new LanguageClient('tape', 'tape (tapec lsp)', serverOptions, clientOptions);
  try {
    await client.start();
  } catch (error) {
    client = undefined;
    vscode.window.showErrorMessage(
      `tape: could not start \`${command} lsp\` (${error && error.message ? error.message : error}). ` +
        'Install tapec, or set tape.server.path to where it is.',
    );
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('tape.server.path')) {
        await stop();
        await start();
      }
    }),
  );
  return start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
