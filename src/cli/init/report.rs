//! What `ctx init` asks and prints: the prompts, and one line per step taken.

use std::io::{BufRead, Write};
use std::path::Path;

use ctx_core::init::{Outcome, Step};

/// Ask on stderr; an empty answer takes the default.
pub fn ask(question: &str, default: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr().lock();
    write!(err, "{question} [{default}]: ")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let line = line.trim();
    Ok(if line.is_empty() {
        default.to_string()
    } else {
        line.to_string()
    })
}

/// One line of the report, paths relative to the current folder.
pub fn render_step(step: &Step, cwd: &Path) -> String {
    let verb = |o: &Outcome| match o {
        Outcome::Created => "created ",
        Outcome::Replaced => "replaced",
        Outcome::Updated => "updated ",
        Outcome::Kept => "kept    ",
    };
    let (outcome, shown) = match step {
        Step::GitInit => return "  created   a git work tree (git init)\n".into(),
        Step::Template { rel, outcome } => (outcome, rel.to_string()),
        Step::Workflow { path, outcome } | Step::GitIgnore { path, outcome } => {
            (outcome, display(path, cwd))
        }
    };
    match outcome {
        Outcome::Kept => format!("  kept     {shown} (exists; --force replaces it)\n"),
        o => format!("  {}  {shown}\n", verb(o)),
    }
}

/// `dir` relative to the current folder, as people typed it.
pub fn display(dir: &Path, cwd: &Path) -> String {
    match dir.strip_prefix(cwd) {
        Ok(r) if r.as_os_str().is_empty() => ".".into(),
        Ok(r) => r.display().to_string(),
        Err(_) => dir.display().to_string(),
    }
}
