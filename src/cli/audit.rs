//! `ctx audit show|verify`: read and check the hash-chained audit log the
//! manifest's `audit` block configures.

use clap::{Args, Subcommand};
use ctx_core::audit::repository::{self, Repair};
use ctx_core::audit::{render, Log};
use ctx_core::error::{Exit, Result};
use ctx_core::manifest::Manifest;
use ctx_core::personal::audit as sealed;
use ctx_core::personal::config::PersonalConfig;
use ctx_core::personal::keys::{self, Purpose};

use super::args::TextFormat;
use super::{Global, Printer};

/// `audit show --format`: one line per event, or the stored lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[value(alias = "text")]
    Human,
    /// The stored JSON lines, unchanged.
    #[value(alias = "ndjson")]
    Jsonl,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the most recent audit events.
    Show(ShowArgs),
    /// Check the hash chain, every event's schema, and the head (truncation).
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Show only the last N events.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// `human` (one line per event) or `jsonl` (the stored lines).
    #[arg(long, value_enum, default_value = "human")]
    pub format: LogFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// On a personal vault: ask for the profile password and decrypt the vault's
    /// own sealed log too (`--password-file` does the same from a file).
    #[arg(long)]
    pub unlock: bool,
    /// The vault's secret key file (default: the one in your config folder).
    #[arg(long, value_name = "FILE")]
    pub secret_key_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub password: super::personal::PasswordArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// After a clean chain check, re-anchor a lost head file at the last entry
    /// (truncation before this point can then no longer be detected).
    #[arg(long)]
    pub rehead: bool,
    /// Repair now what killed commands left (a torn final line, entries after
    /// the head, an unanchored receipt suffix, a half-done write), as the next
    /// write would; damage is never repaired.
    #[arg(long)]
    pub repair: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: TextFormat,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

fn log(g: &Global) -> Result<(Manifest, Log)> {
    let (m, _) = Manifest::discover(g.dir.as_deref(), &g.cwd)?;
    let log = Log::for_manifest(&m)?;
    Ok((m, log))
}

pub fn run(g: &Global, p: &Printer, a: &AuditArgs) -> Result<Exit> {
    match &a.command {
        AuditCommand::Show(x) => show(g, p, x),
        AuditCommand::Verify(x) => verify(g, p, x),
    }
}

fn show(g: &Global, p: &Printer, a: &ShowArgs) -> Result<Exit> {
    let (m, log) = log(g)?;
    let entries = log.read()?;
    let mut s = String::new();
    if entries.is_empty() && a.format == LogFormat::Human {
        let rel = log.path().strip_prefix(&m.root).unwrap_or(log.path());
        s.push_str(&format!("no audit events in {}\n", rel.display()));
    }
    s.push_str(&render::entries(
        &entries,
        a.limit,
        a.format == LogFormat::Jsonl,
    ));
    if let Some(cfg) = PersonalConfig::from_manifest(&m)? {
        s.push_str(&vault_log(&m, &cfg, a)?);
    }
    super::io_result(p.product(&s, a.output.as_deref()))?;
    Ok(Exit::Ok)
}

/// A vault's own log (`.ctx/personal/audit.jsonl`), sealed to its audit key:
/// counted without a key; with the password, decrypted and shown as seed 004's lines
/// (`--format jsonl`: the decrypted events).
fn vault_log(m: &Manifest, cfg: &PersonalConfig, a: &ShowArgs) -> Result<String> {
    let file = sealed::path(&cfg.state_dir(m));
    let rel = file
        .strip_prefix(&m.root)
        .unwrap_or(&file)
        .display()
        .to_string();
    let n = sealed::count(&file)?;
    let jsonl = a.format == LogFormat::Jsonl;
    if !(a.unlock || a.password.password_file.is_some()) {
        if jsonl {
            return Ok(String::new());
        }
        return Ok(format!(
            "vault audit log {rel}: {n} entr{}, sealed to the vault's audit key\n  \
             to read them: ctx audit show --unlock (or --password-file FILE), or GET /context/audit with the session token of `ctx serve`\n",
            if n == 1 { "y" } else { "ies" }
        ));
    }
    let secret = super::personal::secret_key(cfg, a.secret_key_file.as_deref())?;
    let password = a.password.read(false)?;
    let k = keys::unlock_keys(cfg, password.as_bytes(), &secret)?;
    let shown = sealed::tail(
        &file,
        a.limit.unwrap_or(usize::MAX),
        &k.keyring(Purpose::Audit),
        Some(&k.mac_key()),
    )?;
    let mut out = String::new();
    if !jsonl {
        out.push_str(&format!(
            "vault audit log {rel}: {n} entr{}{}\n",
            if n == 1 { "y" } else { "ies" },
            if shown.len() < n {
                format!(", the last {}", shown.len())
            } else {
                String::new()
            }
        ));
    }
    for e in &shown {
        if jsonl {
            out.push_str(&serde_json::to_string(e).expect("JSON"));
        } else if let Some(why) = e["error"].as_str() {
            out.push_str(&format!("  entry {}: {why}", e["seq"]));
        } else {
            out.push_str("  ");
            out.push_str(&sealed::line(e));
        }
        out.push('\n');
    }
    Ok(out)
}

fn verify(g: &Global, p: &Printer, a: &VerifyArgs) -> Result<Exit> {
    let (m, log) = log(g)?;
    let how = Repair {
        rehead: a.rehead,
        repair: a.repair,
    };
    let checked = repository::check(&m, how)?;
    let rel = |x: &std::path::Path| x.strip_prefix(&m.root).unwrap_or(x).display().to_string();
    let ok = checked.iter().all(|c| c.report.ok());
    let audit = checked
        .iter()
        .find(|c| c.kind == "audit")
        .expect("the audit log is always checked");
    let others = checked.iter().filter(|c| c.kind != "audit" && !quiet(c));
    let text = if a.format == TextFormat::Json {
        let mut doc = audit.report.json(&rel(log.path()), &rel(log.head_path()));
        doc["ok"] = ok.into();
        doc["logs"] = checked
            .iter()
            .map(|c| {
                let mut d = c.report.json(&rel(&c.path), "");
                d["kind"] = c.kind.into();
                d.as_object_mut().map(|o| o.remove("head"));
                d
            })
            .collect();
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n"
    } else {
        let mut t = audit.report.text(&rel(log.path()));
        for c in others {
            t.push_str(&c.report.text_for(c.kind, &rel(&c.path)));
        }
        t
    };
    super::io_result(p.product(&text, a.output.as_deref()))?;
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}

/// A log with nothing to say (no interrupted write) is not listed.
fn quiet(c: &repository::Checked) -> bool {
    c.kind == "writes" && c.report.problems.is_empty() && c.report.pending.is_empty()
}
