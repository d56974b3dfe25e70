//! tapec's diagnostics as the protocol's: the primary span as the range,
//! each label as related information, the hints and notes after the
//! message, severity error (or warning), source `tapec`.

use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, PublishDiagnosticsParams, Uri,
};

use crate::diagnostic::Diagnostic;

use super::analysis::{Document, MAX_PUBLISHED};
use super::positions::{Encoding, LineIndex};

/// One diagnostic of the document at `uri`.
pub fn to_protocol(
    d: &Diagnostic,
    lines: &LineIndex,
    uri: &Uri,
    encoding: Encoding,
) -> lsp_types::Diagnostic {
    let mut message = d.message.clone();
    for hint in &d.hints {
        message.push_str("\nHelp: ");
        message.push_str(hint);
    }
    for note in &d.notes {
        message.push_str("\nNote: ");
        message.push_str(note);
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|(span, text)| span.source == d.span.source && !text.is_empty())
        .map(|(span, text)| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), lines.range(*span, encoding)),
            message: text.clone(),
        })
        .collect();
    lsp_types::Diagnostic {
        range: lines.range(visible(d.span, lines.text()), encoding),
        severity: Some(if d.warning {
            DiagnosticSeverity::WARNING
        } else {
            DiagnosticSeverity::ERROR
        }),
        source: Some("tapec".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..lsp_types::Diagnostic::default()
    }
}

/// An empty span after the last text (a `begin` with no `end`, found at
/// the end of the file) as the last character of the text instead: an
/// editor draws nothing under an empty place on a line of its own.
fn visible(span: crate::diagnostic::Span, text: &str) -> crate::diagnostic::Span {
    let rest = text.get(span.start..).unwrap_or("");
    if span.start != span.end || !rest.trim().is_empty() {
        return span;
    }
    match text[..span.start].trim_end().char_indices().next_back() {
        Some((at, c)) => crate::diagnostic::Span::new(span.source, at, at + c.len_utf8()),
        None => span,
    }
}

/// What to publish for a document: all its diagnostics, or the first
/// [`MAX_PUBLISHED`] and one that counts the rest.
pub fn publish(doc: &Document, uri: &Uri, encoding: Encoding) -> PublishDiagnosticsParams {
    let shown = &doc.diagnostics[..doc.diagnostics.len().min(MAX_PUBLISHED)];
    let mut diagnostics: Vec<lsp_types::Diagnostic> = shown
        .iter()
        .map(|d| to_protocol(d, &doc.lines, uri, encoding))
        .collect();
    if let Some(next) = doc.diagnostics.get(MAX_PUBLISHED) {
        let more = crate::diagnostic::not_shown(&doc.diagnostics[MAX_PUBLISHED..]);
        diagnostics.push(lsp_types::Diagnostic {
            range: doc.lines.range(next.span, encoding),
            severity: Some(DiagnosticSeverity::ERROR),
            source: Some("tapec".to_string()),
            message: more,
            ..lsp_types::Diagnostic::default()
        });
    }
    PublishDiagnosticsParams::new(uri.clone(), diagnostics, Some(doc.version))
}

/// Nothing to show: what a closed document publishes.
pub fn cleared(uri: &Uri) -> PublishDiagnosticsParams {
    PublishDiagnosticsParams::new(uri.clone(), Vec::new(), None)
}
