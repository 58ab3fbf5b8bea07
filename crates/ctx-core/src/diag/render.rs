//! Renderers: one data model, four views (people, JSON, SARIF, GitHub annotations).

use std::fmt::Write as _;
use std::path::Path;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
use serde_json::{json, Map, Value};

use super::{Code, Diagnostic, Severity, Tally};

/// Options for the human renderer.
#[derive(Debug, Clone, Copy)]
pub struct HumanStyle {
    pub color: bool,
    pub width: usize,
}

/// A miette view of one finding, with the offending line as context when the file is readable.
#[derive(Debug)]
struct Pretty<'a> {
    d: &'a Diagnostic,
    source: Option<NamedSource<String>>,
    span: Option<SourceSpan>,
    help: Option<String>,
}

impl std::fmt::Display for Pretty<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A message may quote repository text (a misspelt key, a title).
        let message = crate::lint::invisible::reveal(&self.d.message);
        match &self.d.id {
            Some(id) => write!(f, "{}: {}", id, message),
            None => f.write_str(&message),
        }
    }
}

impl std::error::Error for Pretty<'_> {}

impl miette::Diagnostic for Pretty<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.d.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        let label = self.d.field.as_ref().map(|f| format!("here: `{f}`"));
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label, span,
        ))))
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Byte span of a 1-based line in `text` (without its newline). A line just past
/// the end (a parser reporting "unexpected end of file") frames the last line.
/// Widest line a code frame quotes; longer lines are cut (a 400 KB one-line file
/// must not turn into megabytes of diagnostics).
const FRAME_COLUMNS: usize = 160;

/// The part of `text` a frame around 1-based `line` shows (that line and one on
/// each side), with every other line left empty so line numbers stay true. Lines
/// that hold a detected secret (`withheld`, or found by the scanner) are replaced,
/// control characters are escaped and long lines cut, so a frame never prints a
/// secret or drives the terminal.
fn excerpt(text: &str, line: u32, withheld: &[u32]) -> Option<(String, SourceSpan)> {
    let target = line as usize;
    let lines: Vec<&str> = text.split('\n').collect();
    // One past the end is where "missing at end of file" points.
    let target = target.min(lines.len());
    if target == 0 {
        return None;
    }
    let mut out = String::new();
    let mut span = None;
    for (i, raw) in lines.iter().enumerate().take(target + 1) {
        let n = i + 1;
        if n + 1 >= target {
            let shown = if withheld.contains(&(n as u32))
                || !crate::load::secrets::scan(raw, "", "").is_empty()
            {
                "‹line withheld: it holds a detected secret›".to_string()
            } else {
                printable(raw.trim_end_matches('\r'))
            };
            if n == target {
                span = Some(SourceSpan::new(out.len().into(), shown.len()));
            }
            out.push_str(&shown);
        }
        out.push('\n');
    }
    span.map(|s| (out, s))
}

/// `line` with control and hidden characters escaped (as [`terminal_safe`] does,
/// tabs as spaces) and cut to [`FRAME_COLUMNS`] characters.
fn printable(line: &str) -> String {
    let mut out = String::new();
    for (i, piece) in people_pieces(line).enumerate() {
        if i == FRAME_COLUMNS {
            out.push('…');
            break;
        }
        match piece {
            Piece::Char('\t') => out.push(' '),
            p => p.write(&mut out),
        }
    }
    out
}

/// Control characters (but tab), the invisible or bidirectional formatting
/// characters and Unicode tag characters: in text shown to people they could move
/// the cursor, recolour the terminal, reorder what is displayed or hide text.
pub fn moves_the_terminal(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c as u32, 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2069 | 0xFEFF)
        || crate::lint::invisible::kind_of(c).is_some()
}

/// One character of repository text as people are shown it.
enum Piece {
    Char(char),
    /// A control character, as a `\u{…}` escape.
    Control(char),
    /// A hidden character, by its code point (`<U+E0041>`), as findings name it.
    Hidden(char),
}

impl Piece {
    fn write(&self, out: &mut String) {
        match *self {
            Piece::Char(c) => out.push(c),
            Piece::Control(c) => out.extend(c.escape_unicode()),
            Piece::Hidden(c) => {
                out.push('<');
                out.push_str(&crate::lint::invisible::notation(c));
                out.push('>');
            }
        }
    }
}

/// `s` character by character, each marked as [`terminal_safe`] shows it. The
/// hidden characters are the ones `ctx validate` reports; a legitimate use (a
/// joiner inside an emoji) passes unchanged.
fn people_pieces(s: &str) -> impl Iterator<Item = Piece> + '_ {
    let mut hidden = crate::lint::invisible::find(s).into_iter().peekable();
    s.char_indices().map(move |(at, c)| {
        if hidden.next_if(|h| h.at == at).is_some() {
            Piece::Hidden(c)
        } else if moves_the_terminal(c) && crate::lint::invisible::kind_of(c).is_none() {
            Piece::Control(c)
        } else {
            Piece::Char(c)
        }
    })
}

/// Repository text (an id, a title, a value) for human output: control
/// characters and line breaks become `\u{…}` escapes, so one value stays on one
/// line and cannot drive the terminal; hidden characters (tag characters,
/// bidirectional controls, zero-width characters) become `<U+XXXX>`, so a person
/// sees what an agent would read.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    // (A run of variation selectors is hidden though none of them moves the terminal.)
    if !s.chars().any(moves_the_terminal) && crate::lint::invisible::find(s).is_empty() {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for p in people_pieces(s) {
        p.write(&mut out);
    }
    std::borrow::Cow::Owned(out)
}

/// Render findings for people, with file snippets read from `root` (the manifest folder).
/// Files larger than 1 MiB are not quoted.
pub fn human(diags: &[Diagnostic], root: &Path, style: HumanStyle) -> String {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_context_lines(1);
    let mut out = String::new();
    let secret_lines = |file: &str| -> Vec<u32> {
        diags
            .iter()
            .filter(|d| d.code == Code::SecretDetected && d.file.as_deref() == Some(file))
            .filter_map(|d| d.line)
            .collect()
    };
    for d in diags {
        let mut help = String::new();
        if let Some(f) = &d.field {
            let _ = writeln!(help, "field:    {f}");
        }
        if let Some(e) = &d.expected {
            let _ = writeln!(help, "expected: {}", compact(e));
        }
        if let Some(a) = &d.actual {
            let _ = writeln!(help, "actual:   {}", compact(a));
        }
        if let Some(r) = &d.remediation {
            let _ = write!(help, "fix:      {r}");
        }
        let help = crate::lint::invisible::reveal(help.trim_end()).into_owned();
        let (source, span) = match (&d.file, d.line) {
            // A secret's line (or a private file's plaintext) is never quoted: the
            // finding names the file and line only.
            (Some(file), Some(line)) if d.code != Code::SecretDetected => {
                let path = root.join(file);
                // Regular files up to 1 MiB only: a code frame never waits on a FIFO.
                let text = crate::fs::read_regular(&path, 1 << 20)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok());
                match text.and_then(|t| excerpt(&t, line, &secret_lines(file))) {
                    Some((text, span)) => (Some(NamedSource::new(file.clone(), text)), Some(span)),
                    None => (None, None),
                }
            }
            _ => (None, None),
        };
        let location = match (&d.file, d.line) {
            (Some(f), Some(l)) if source.is_none() => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => String::new(),
        };
        let help = match (location.is_empty(), help.is_empty()) {
            (true, _) => help,
            (false, true) => format!("in {location}"),
            (false, false) => format!("in {location}\n{help}"),
        };
        let pretty = Pretty {
            d,
            source,
            span,
            help: (!help.is_empty()).then_some(help),
        };
        let _ = handler.render_report(&mut out, &pretty);
    }
    out
}

/// Render a fatal error for people the way findings are rendered: the
/// message, then its hint. Lines are not wrapped: an error often names a long
/// path that must stay one searchable, copyable string.
pub fn error(e: &crate::error::Error, style: HumanStyle) -> String {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_wrap_lines(false);
    let mut out = String::new();
    let _ = handler.render_report(&mut out, e);
    out
}

/// One-line summary: `2 errors, 1 warning in 42 objects`.
pub fn summary(diags: &[Diagnostic], objects: usize) -> String {
    let t = Tally::of(diags);
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}, {} in {}",
        plural(t.errors, "error"),
        plural(t.warnings, "warning"),
        plural(t.info, "note"),
        plural(objects, "object")
    )
}

/// One line per finding, for grep, editors and terminals that want no frames:
/// `file:line:col: severity[code] id: message`. A finding without a file names the
/// manifest folder (`.`); the fix, when there is one, follows after ` — fix: `.
pub fn concise(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(d.file.as_deref().unwrap_or("."));
        if let Some(l) = d.line {
            let _ = write!(out, ":{l}");
            if let Some(c) = d.column {
                let _ = write!(out, ":{c}");
            }
        }
        let _ = write!(out, ": {}[{}] ", d.severity.as_str(), d.code.as_str());
        if let Some(id) = &d.id {
            let _ = write!(out, "{id}: ");
        }
        // One finding, one line: embedded newlines would split it.
        out.push_str(&terminal_safe(&d.message.replace('\n', " ")));
        if let Some(r) = &d.remediation {
            out.push_str(" — fix: ");
            out.push_str(&terminal_safe(&r.replace('\n', " ")));
        }
        out.push('\n');
    }
    out
}

/// The diagnostic document (valid against the diagnostic schema).
pub fn report_value(
    diags: &[Diagnostic],
    ok: bool,
    namespace: Option<&str>,
    objects: usize,
    extra_counts: Option<Map<String, Value>>,
) -> Value {
    let t = Tally::of(diags);
    let mut counts = Map::new();
    counts.insert("objects".into(), json!(objects));
    counts.insert("errors".into(), json!(t.errors));
    counts.insert("warnings".into(), json!(t.warnings));
    counts.insert("info".into(), json!(t.info));
    if let Some(extra) = extra_counts {
        counts.extend(extra);
    }
    let mut doc = Map::new();
    doc.insert("opencontext".into(), json!(crate::SPEC_VERSION));
    doc.insert("ok".into(), json!(ok));
    if let Some(ns) = namespace.filter(|ns| is_namespace(ns)) {
        doc.insert("namespace".into(), json!(ns));
    }
    doc.insert("counts".into(), Value::Object(counts));
    doc.insert(
        "findings".into(),
        serde_json::to_value(diags).expect("serializable"),
    );
    Value::Object(doc)
}

fn is_namespace(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(x) if x.is_ascii_lowercase() || x.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-')
}

/// SARIF 2.1.0 for code-scanning uploads.
pub fn sarif(diags: &[Diagnostic]) -> Value {
    let mut rules: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    let results: Vec<Value> = diags
        .iter()
        .map(|d| {
            let level = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "note",
            };
            let mut text = d.message.clone();
            if let Some(r) = &d.remediation {
                text.push_str(" Fix: ");
                text.push_str(r);
            }
            let mut result = json!({
                "ruleId": d.code.as_str(),
                "level": level,
                "message": { "text": text },
            });
            if let Some(file) = &d.file {
                let mut region = Map::new();
                region.insert("startLine".into(), json!(d.line.unwrap_or(1)));
                if let Some(c) = d.column {
                    region.insert("startColumn".into(), json!(c));
                }
                result["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": { "uri": file },
                        "region": region,
                    }
                }]);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "ctx",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|r| json!({"id": r})).collect::<Vec<_>>(),
            }},
            "results": results,
        }]
    })
}

/// GitHub Actions workflow commands (`::error file=…,line=…::message`).
pub fn github(diags: &[Diagnostic]) -> String {
    fn escape_data(s: &str) -> String {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    }
    fn escape_prop(s: &str) -> String {
        escape_data(s).replace(':', "%3A").replace(',', "%2C")
    }
    let mut out = String::new();
    for d in diags {
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut props = vec![format!("title={}", escape_prop(d.code.as_str()))];
        if let Some(f) = &d.file {
            props.push(format!("file={}", escape_prop(f)));
        }
        if let Some(l) = d.line {
            props.push(format!("line={l}"));
        }
        if let Some(c) = d.column {
            props.push(format!("col={c}"));
        }
        let mut msg = match &d.id {
            Some(id) => format!("{id}: {}", d.message),
            None => d.message.clone(),
        };
        if let Some(r) = &d.remediation {
            msg.push_str(" — fix: ");
            msg.push_str(r);
        }
        let _ = writeln!(out, "::{level} {}::{}", props.join(","), escape_data(&msg));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;

    fn sample() -> Vec<Diagnostic> {
        vec![Diagnostic::error(
            Code::SchemaInvalid,
            "value is not one of the allowed values",
        )
        .id("policies.refunds")
        .file("context/policies/refunds.md")
        .line(3)
        .field("authority")
        .expected(json!(["canonical", "approved"]))
        .actual("gospel")
        .fix("Use one of the listed values.")]
    }

    #[test]
    fn github_annotations_escape_and_locate() {
        let text = github(&sample());
        assert!(text.starts_with("::error title=schema-invalid,file=context/policies/refunds.md,line=3::policies.refunds: value"));
    }

    #[test]
    fn human_names_file_line_field_expected_actual_fix() {
        let text = human(
            &sample(),
            Path::new("/nonexistent"),
            HumanStyle {
                color: false,
                width: 100,
            },
        );
        for needle in [
            "schema-invalid",
            "context/policies/refunds.md:3",
            "authority",
            "gospel",
            "Use one of the listed values.",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }

    #[test]
    fn concise_is_one_line_per_finding() {
        let mut d = sample();
        d.push(Diagnostic::error(Code::ManifestInvalid, "two\nlines"));
        let text = concise(&d);
        assert_eq!(
            text,
            "context/policies/refunds.md:3: error[schema-invalid] policies.refunds: value is not one \
             of the allowed values — fix: Use one of the listed values.\n\
             .: error[manifest-invalid] two lines\n"
        );
    }

    #[test]
    fn people_see_hidden_characters_by_code_point() {
        assert_eq!(terminal_safe("a\u{E0041}\u{202E}b"), "a<U+E0041><U+202E>b");
        assert_eq!(
            terminal_safe("x\u{AD}y\u{1b}[0m\n"),
            "x<U+00AD>y\\u{1b}[0m\\u{a}"
        );
        assert_eq!(terminal_safe("😀\u{FE00}\u{FE01}"), "😀<U+FE00><U+FE01>");
        // Legitimate uses pass: an emoji sequence, a variation selector.
        assert_eq!(
            terminal_safe("👩\u{200D}💻 ❤\u{FE0F}"),
            "👩\u{200D}💻 ❤\u{FE0F}"
        );
        assert_eq!(printable("\tkey: \"v\u{200B}\""), " key: \"v<U+200B>\"");
        let d = vec![Diagnostic::error(
            Code::SchemaInvalid,
            "unknown field `a\u{E0041}`",
        )];
        assert!(concise(&d).contains("`a<U+E0041>`"));
        let text = human(
            &d,
            Path::new("/nonexistent"),
            HumanStyle {
                color: false,
                width: 100,
            },
        );
        assert!(text.contains("`a<U+E0041>`"), "{text}");
    }

    #[test]
    fn sarif_has_results() {
        let v = sarif(&sample());
        assert_eq!(v["runs"][0]["results"][0]["ruleId"], "schema-invalid");
        assert_eq!(
            v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }
}
