#!/usr/bin/env node
// Checks the TextMate grammar against tapec's lexer.
//
//   node test/agreement.js TOKENS.json [--grammar GRAMMAR.json]
//
// TOKENS.json is written by `tests/grammar.rs`: for each .tape file of the
// repository, the text the lexer read and every token it made (comments
// too), as [kind, start, end] with byte offsets into the UTF-8 text. This
// script tokenises the same text with the grammar under vscode-textmate and
// Oniguruma, as VS Code does, line by line, and checks that every token lies
// in a scope of its kind:
//
//   identifier   variable, entity.name.function, support.function,
//                storage.type, constant.language (Inf)
//   keyword      keyword, storage (function, procedure, var),
//                constant.language (true, false)
//   integer      constant.numeric.integer
//   real         constant.numeric.float
//   string       string.quoted.single (open_string: one never closed)
//   symbol       keyword.operator, punctuation
//   line_comment comment.line.double-slash
//   block_comment, open_comment   comment.block
//
// A token of a word, a number or a symbol must be exactly one token of the
// grammar; a string or a comment may be several (its quotes, its escapes),
// all of its scope, the opening punctuation only at its start and the
// closing only at its end. No token but a comment may lie in a comment,
// none but a string in a string, and none in an invalid scope. What the
// lexer rejects (kind `error`) is left out. Every disagreement is printed as
// path:line:column (1-based, the column in UTF-16 units as VS Code counts),
// and the exit status is 1 if there is one.

'use strict';

const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const EXPECTED = {
  identifier: [
    'variable',
    'entity.name.function',
    'support.function',
    'storage.type',
    'constant.language',
  ],
  keyword: ['keyword', 'storage', 'constant.language'],
  integer: ['constant.numeric.integer'],
  real: ['constant.numeric.float'],
  string: ['string.quoted.single'],
  open_string: ['string.quoted.single'],
  symbol: ['keyword.operator', 'punctuation'],
  line_comment: ['comment.line.double-slash'],
  block_comment: ['comment.block'],
  open_comment: ['comment.block'],
};
const ONE_TOKEN = new Set(['identifier', 'keyword', 'integer', 'real', 'symbol']);
const STRINGS = new Set(['string', 'open_string']);
const COMMENTS = new Set(['line_comment', 'block_comment', 'open_comment']);

function has(scopes, prefix) {
  return scopes.some((s) => s === prefix || s.startsWith(prefix + '.'));
}

function parseArgs(argv) {
  const args = { tokens: null, grammar: path.join(__dirname, '..', 'syntaxes', 'tape.tmLanguage.json') };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--grammar') {
      args.grammar = argv[++i];
    } else {
      args.tokens = argv[i];
    }
  }
  if (!args.tokens) {
    console.error('usage: agreement.js TOKENS.json [--grammar GRAMMAR.json]');
    process.exit(2);
  }
  return args;
}

async function loadGrammar(grammarPath) {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== 'source.tape') return null;
      return vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath);
    },
  });
  return registry.loadGrammar('source.tape');
}

// The UTF-16 index of every byte offset that starts a character (and of the
// end), so the lexer's byte spans can be laid on JavaScript's string.
function utf16Offsets(text) {
  const at = new Map();
  let bytes = 0;
  let units = 0;
  for (const ch of text) {
    at.set(bytes, units);
    const cp = ch.codePointAt(0);
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    units += cp > 0xffff ? 2 : 1;
  }
  at.set(bytes, units);
  return at;
}

// Lines as VS Code makes them: broken at \r\n, \r or \n; each [start, end)
// in UTF-16 units, without its break.
function lines(text) {
  const out = [];
  const re = /\r\n|\r|\n/g;
  let start = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    out.push([start, m.index]);
    start = m.index + m[0].length;
  }
  out.push([start, text.length]);
  return out;
}

function lineOf(lineList, index) {
  let lo = 0;
  let hi = lineList.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineList[mid][0] <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function describe(grammarTokens) {
  return grammarTokens
    .map((t) => `[${t.startIndex},${t.endIndex}) ${t.scopes.filter((s) => s !== 'source.tape').join(' ') || 'source.tape'}`)
    .join(' | ');
}

// The problems with one lexer token's part on one line, [from, to) in the
// line's units; `first` and `last` say whether the token starts and ends on
// this line.
function problems(kind, from, to, first, last, lineTokens) {
  const inside = lineTokens.filter((t) => t.startIndex < to && t.endIndex > from);
  const found = [];
  if (inside.length === 0) return ['no grammar token'];
  if (first && inside[0].startIndex !== from) found.push('a grammar token starts before it');
  if (last && inside[inside.length - 1].endIndex !== to) found.push('a grammar token runs past its end');
  if (ONE_TOKEN.has(kind) && inside.length !== 1) found.push(`split into ${inside.length} grammar tokens`);
  inside.forEach((t, i) => {
    const scopes = t.scopes;
    if (!EXPECTED[kind].some((p) => has(scopes, p))) found.push(`not in a scope of its kind (${EXPECTED[kind].join(', ')})`);
    if (!COMMENTS.has(kind) && has(scopes, 'comment')) found.push('inside a comment');
    if (!STRINGS.has(kind) && has(scopes, 'string')) found.push('inside a string');
    if (has(scopes, 'invalid')) found.push('marked invalid');
    const opens = has(scopes, 'punctuation.definition.string.begin') || has(scopes, 'punctuation.definition.comment.begin');
    const closes = has(scopes, 'punctuation.definition.string.end') || has(scopes, 'punctuation.definition.comment.end');
    if (opens && !(first && i === 0)) found.push('opened again inside');
    if (closes && !(last && i === inside.length - 1)) found.push('closed before its end');
  });
  if (first && (kind === 'string' || kind === 'open_string') && !has(inside[0].scopes, 'punctuation.definition.string.begin')) {
    found.push('its quote does not open the string');
  }
  if (last && kind === 'string' && !has(inside[inside.length - 1].scopes, 'punctuation.definition.string.end')) {
    found.push('its last quote does not close the string');
  }
  if (last && kind === 'block_comment' && !has(inside[inside.length - 1].scopes, 'punctuation.definition.comment.end')) {
    found.push('its closer does not close the comment');
  }
  return [...new Set(found)];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const input = JSON.parse(fs.readFileSync(args.tokens, 'utf8'));
  const grammar = await loadGrammar(args.grammar);
  if (!grammar) throw new Error(`cannot load the grammar ${args.grammar}`);

  let checked = 0;
  let comments = 0;
  let leftOut = 0;
  const disagreements = [];
  for (const file of input.files) {
    const text = file.text;
    const lineList = lines(text);
    const tokensOfLine = [];
    let stack = vsctm.INITIAL;
    for (const [start, end] of lineList) {
      const result = grammar.tokenizeLine(text.slice(start, end), stack);
      tokensOfLine.push(result.tokens);
      stack = result.ruleStack;
    }
    const at = utf16Offsets(text);
    for (const [kind, startByte, endByte] of file.tokens) {
      if (kind === 'error') {
        leftOut++;
        continue;
      }
      if (!(kind in EXPECTED)) throw new Error(`unknown token kind ${kind}`);
      const start = at.get(startByte);
      const end = at.get(endByte);
      if (start === undefined || end === undefined) {
        throw new Error(`${file.path}: bytes ${startByte}..${endByte} do not fall between characters`);
      }
      checked++;
      if (COMMENTS.has(kind)) comments++;
      const firstLine = lineOf(lineList, start);
      const lastLine = lineOf(lineList, Math.max(start, end - 1));
      for (let n = firstLine; n <= lastLine; n++) {
        const [ls, le] = lineList[n];
        const from = Math.max(start, ls) - ls;
        const to = Math.min(end, le) - ls;
        const first = n === firstLine;
        const last = end <= le;
        if (from >= to && !(first && last)) continue; // only a line break of it here
        const found = problems(kind, from, to, first, last, tokensOfLine[n]);
        if (found.length > 0) {
          const shown = text.slice(start, end);
          disagreements.push(
            `${file.path}:${n + 1}:${from + 1}: lexer ${kind} ${JSON.stringify(shown.length > 60 ? shown.slice(0, 57) + '...' : shown)}: ` +
              `${found.join('; ')}; grammar: ${describe(tokensOfLine[n].filter((t) => t.startIndex < Math.max(to, from + 1) && t.endIndex > from))}`,
          );
        }
      }
    }
  }
  for (const d of disagreements) console.log(d);
  console.log(
    `agreement: ${checked} tokens (${comments} of them comments) in ${input.files.length} files checked, ` +
      `${leftOut} the lexer rejects left out, ${disagreements.length} disagreements`,
  );
  process.exit(disagreements.length === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(2);
});
