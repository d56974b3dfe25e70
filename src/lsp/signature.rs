//! Signature help while a call's arguments are typed: the call is found on
//! the tokens before the cursor (the text is usually unfinished there, so
//! the tree may not hold the call yet), the innermost `(` still open after
//! a name; its active parameter is the number of commas at that depth.

use lsp_types::{
    Documentation, ParameterInformation, ParameterLabel, SignatureHelp, SignatureInformation,
};

use crate::declarations;
use crate::diagnostic::Span;
use crate::syntax::lexer::Token;

use super::analysis::Document;

/// The name of the call whose arguments hold `offset`, how many commas of
/// it come before, and the index of the name's token. (A routine's header,
/// `procedure P(a: `, reads as a call of `P` here.)
pub(super) fn open_call(tokens: &[(Token, Span)], offset: usize) -> Option<(String, u32, usize)> {
    // (is a parenthesis, index of its token, commas so far)
    let mut open: Vec<(bool, usize, u32)> = Vec::new();
    for (i, (token, span)) in tokens.iter().enumerate() {
        if span.end > offset {
            break;
        }
        match token {
            Token::LParen => open.push((true, i, 0)),
            Token::LBracket => open.push((false, i, 0)),
            Token::RParen | Token::RBracket => {
                open.pop();
            }
            Token::Comma => {
                if let Some(top) = open.last_mut() {
                    top.2 += 1;
                }
            }
            // No call spans a statement's end or a block's edge.
            Token::Semi
            | Token::Begin
            | Token::End
            | Token::Then
            | Token::Do
            | Token::Else
            | Token::Tape
            | Token::Repeat
            | Token::Until => open.clear(),
            _ => {}
        }
    }
    open.iter().rev().find_map(|&(paren, i, commas)| {
        let before = i.checked_sub(1).map(|b| &tokens[b].0);
        match (paren, before) {
            (true, Some(Token::Ident(name))) => Some((name.clone(), commas, i - 1)),
            _ => None,
        }
    })
}

/// `Name(a, b)` with the place of each parameter in it, the parameters
/// apart by `separator`: `, ` as a builtin is called, `; ` as a routine's
/// header declares them.
fn label(name: &str, params: &[String], separator: &str) -> (String, Vec<ParameterInformation>) {
    let mut text = format!("{name}(");
    let mut infos = Vec::new();
    for (k, p) in params.iter().enumerate() {
        if k > 0 {
            text.push_str(separator);
        }
        let start = text.encode_utf16().count() as u32;
        text.push_str(p);
        let end = text.encode_utf16().count() as u32;
        infos.push(ParameterInformation {
            label: ParameterLabel::LabelOffsets([start, end]),
            documentation: None,
        });
    }
    text.push(')');
    (text, infos)
}

pub fn signature_help(doc: &Document, offset: usize) -> Option<SignatureHelp> {
    let (name, commas, _) = open_call(&doc.tokens, offset)?;
    let (text, params, documentation, active) = if let Some(b) = declarations::find(&name) {
        let first_optional = b.params.len() - b.optional;
        let shown: Vec<String> = b
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                if k >= first_optional {
                    format!("[{}]", p.name)
                } else {
                    p.name.to_string()
                }
            })
            .collect();
        let (text, mut infos) = label(b.name, &shown, ", ");
        for (info, p) in infos.iter_mut().zip(b.params) {
            info.documentation = Some(Documentation::String(p.kind.describe().to_string()));
        }
        // Every argument of `WriteLn` is one of its `values`.
        let active = if b.variadic { 0 } else { commas };
        (text, infos, Some(b.doc.to_string()), active)
    } else {
        let entry = doc
            .names
            .routines
            .iter()
            .find(|r| *r.routine.name.text == *name)?;
        let r = &entry.routine;
        let shown: Vec<String> = r
            .params
            .iter()
            .map(|p| {
                let by_ref = if p.by_ref { "var " } else { "" };
                match p.ty {
                    Some((t, _)) => format!("{by_ref}{}: {}", p.name.text, t.name()),
                    None => format!("{by_ref}{}", p.name.text),
                }
            })
            .collect();
        let (text, infos) = label(&r.name.text, &shown, "; ");
        let text = match r.result {
            Some((t, _)) => format!("{text}: {}", t.name()),
            None => text,
        };
        (text, infos, doc.comment_above(entry.span.start), commas)
    };
    // An argument past the last parameter (a call with too many, which
    // the diagnostics mark) keeps the last one active: the protocol reads
    // an index out of range as the first parameter. No parameter, none.
    let active = match params.len() as u32 {
        0 => None,
        n => Some(active.min(n - 1)),
    };
    Some(SignatureHelp {
        signatures: vec![SignatureInformation {
            label: text,
            documentation: documentation.map(Documentation::String),
            parameters: Some(params),
            active_parameter: active,
        }],
        active_signature: Some(0),
        active_parameter: active,
    })
}
