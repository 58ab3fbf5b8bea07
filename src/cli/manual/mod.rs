//! The hand-written parts of the man pages: EXAMPLES and FILES for each command.
//! Everything else on a page is generated from the clap definition; these two
//! sections say what no flag description can (how commands combine, what they read
//! and write). Examples use the names a `ctx init` repository has (roles `support`
//! and `leads`, agent `support-agent`, `policies.refunds`), and the test suite runs
//! them against one, so they stay true.

/// One example: the command line and what it does.
pub type Example = (&'static str, &'static str);

/// One file a command reads or writes, and why.
pub type File = (&'static str, &'static str);

mod exchange;
mod files;
mod maintenance;
mod reading;
#[cfg(test)]
mod tests;

use files::files;

/// The examples for the command at `path` (e.g. `["keys", "generate"]`; empty for `ctx`).
pub fn examples(path: &[&str]) -> &'static [Example] {
    reading::examples(path)
        .or_else(|| maintenance::examples(path))
        .or_else(|| exchange::examples(path))
        .unwrap_or(&[])
}

/// Escape text for roff: backslashes, hyphens (so they stay ASCII), and a leading
/// `.` or `'` that would be read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The EXAMPLES and FILES sections of the page for `path`, in roff.
pub fn sections(path: &[&str]) -> String {
    let mut out = String::new();
    let examples = examples(path);
    if !examples.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (line, what) in examples {
            out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(line), roff(what)));
        }
    }
    out.push_str(".SH FILES\n");
    for (name, what) in files(path) {
        out.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(name), roff(what)));
    }
    out
}

/// Insert the sections into a page clap_mangen rendered: before VERSION (the
/// conventional place, after the options), else at the end.
pub fn add_sections(page: &str, path: &[&str]) -> String {
    let extra = sections(path);
    match page.find("\n.SH VERSION\n") {
        Some(i) => format!("{}\n{}{}", &page[..i], extra, &page[i + 1..]),
        None => format!("{page}{extra}"),
    }
}
