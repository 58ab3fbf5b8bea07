//! `ctx completions <shell>` and the man pages, both generated from the clap
//! definition so they can never drift from the real flags.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};

use ctx_core::error::{Error, Exit, Result};
use ctx_core::fs::{Existing, Mode};

use super::{Cli, Printer};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct GenerateManArgs {
    /// Folder to write the pages into (e.g. `man/`).
    pub dir: PathBuf,
}

pub fn run(p: &Printer, a: &CompletionsArgs) -> Result<Exit> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "ctx", &mut buf);
    super::io_result(p.out(&String::from_utf8_lossy(&buf)))?;
    Ok(Exit::Ok)
}

/// Every man page: `ctx.1` and one `ctx-<command>.1` per visible (sub)command,
/// each with the EXAMPLES and FILES sections of [`super::manual`].
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    fn walk(cmd: clap::Command, path: &mut Vec<String>, out: &mut Vec<(String, Vec<u8>)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            path.push(sub.get_name().to_string());
            walk(sub, path, out);
            path.pop();
        }
        let man = clap_mangen::Man::new(cmd);
        let mut buf = Vec::new();
        man.render(&mut buf)
            .expect("rendering to memory cannot fail");
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let page = super::manual::add_sections(&String::from_utf8_lossy(&buf), &words);
        out.push((man.get_filename(), page.into_bytes()));
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(cmd, &mut Vec::new(), &mut out);
    out.sort();
    out
}

/// `ctx __generate-man <dir>`: write the man pages (how `man/` is regenerated).
pub fn generate_man(p: &Printer, a: &GenerateManArgs) -> Result<Exit> {
    std::fs::create_dir_all(&a.dir).map_err(|e| Error::io(&a.dir, &e))?;
    let pages = man_pages();
    for (name, bytes) in &pages {
        let path: PathBuf = Path::new(&a.dir).join(name);
        ctx_core::fs::write_atomic(&path, bytes, Mode::Preserve, Existing::Replace)
            .map_err(|e| Error::io(&path, &e))?;
    }
    super::io_result(p.out(&format!(
        "wrote {} man pages to {}\n",
        pages.len(),
        a.dir.display()
    )))?;
    Ok(Exit::Ok)
}
