//! Typed arguments shared by many commands: the consumer flags, `--at`, and the
//! output formats. Nothing downstream of clap sees a flag as a string: a format is
//! an enum, an instant is an [`Instant`], and `--role`/`--include` take one value
//! per flag (repeat the flag), so a positional argument is never swallowed.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ctx_core::time::Instant;
use ctx_core::view::Who;

/// Parse `--at`: an RFC 3339 instant, or a date meaning the end of that day (UTC).
pub fn parse_at(s: &str) -> Result<Instant, String> {
    ctx_core::time::parse_at(s).ok_or_else(|| {
        "expected an RFC 3339 instant (2026-08-09T12:00:00Z) or a date (2026-08-09)".into()
    })
}

/// Parse a flag that takes a full RFC 3339 instant only (no bare dates).
pub fn parse_instant(s: &str) -> Result<Instant, String> {
    ctx_core::time::parse_timestamp(s)
        .ok_or_else(|| "expected an RFC 3339 instant (2026-08-09T12:00:00Z)".into())
}

/// Parse a positive duration flag (`30m`, `90s`, `2h`): the vault's idle timeout,
/// the approval TTL (only the servers take durations).
#[cfg(any(feature = "mcp", feature = "serve"))]
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    ctx_core::time::parse_duration(s)
        .and_then(|d| d.to_std().ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| "expected a duration such as 30m or 90s".into())
}

/// Who is asking: every command that shows, resolves or writes objects flattens this.
/// Without `--role`/`--agent` the view is the repository author's.
#[derive(Debug, Args, Clone, Default)]
pub struct ConsumerArgs {
    /// Act as this agent (through the roles it holds).
    #[arg(long, conflicts_with = "role", value_name = "AGENT", add = completion::agents())]
    pub agent: Option<String>,
    /// Act as this role (repeat the flag for several; the lowest classification ceiling applies).
    #[arg(long = "role", value_name = "ROLE", action = clap::ArgAction::Append, add = completion::roles())]
    pub role: Vec<String>,
}

impl ConsumerArgs {
    pub fn who(&self) -> Who {
        Who {
            agent: self.agent.clone(),
            roles: self.role.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.agent.is_none() && self.role.is_empty()
    }
}

/// What a resolving command (`resolve`, `bundle`, `export`) resolves for: the
/// consumer, the task, the instant, the scope narrowing and the age identities.
#[derive(Debug, Args, Clone, Default)]
pub struct ResolveScopeArgs {
    #[command(flatten)]
    pub who: ConsumerArgs,
    /// What the context is for; drives relevance ranking.
    #[arg(long)]
    pub task: Option<String>,
    /// Resolve as of an RFC 3339 instant, or a date (the end of that day). Default: now.
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// Narrow the scope to this id pattern (repeat the flag for several; never widens it).
    #[arg(long = "include", value_name = "PATTERN", action = clap::ArgAction::Append)]
    pub include: Vec<String>,
    /// age identity for private collections (repeatable; default: $CTX_AGE_IDENTITY,
    /// then ~/.config/ctx/age/identity.txt).
    #[arg(long = "identity", value_name = "FILE")]
    pub identity: Vec<PathBuf>,
}

/// The report flags of the commands that report findings.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// Judge the repository as of this RFC 3339 instant or date (default: now).
    #[arg(long, value_name = "WHEN", value_parser = parse_at)]
    pub at: Option<Instant>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: ReportFormat,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Reports of findings (`validate`, `conflicts`, `stale`, `doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Findings with code frames, and a verdict line.
    #[value(alias = "text")]
    Human,
    /// One line per finding: `file:line:col: severity[code] message`.
    Concise,
    /// The diagnostic document.
    Json,
    /// SARIF 2.1.0, for code-scanning uploads.
    Sarif,
    /// GitHub Actions annotations.
    Github,
}

/// Lists of objects (`list`, `search`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// An aligned table.
    #[value(alias = "table", alias = "text")]
    Human,
    Json,
    /// One JSON object per line.
    Ndjson,
    Yaml,
}

/// Reports with a people view and a JSON document (`diff`, `history`, `verify`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    #[value(alias = "text")]
    Human,
    Json,
}

/// One object (`get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DocumentFormat {
    /// Readable YAML (the people view).
    #[value(alias = "human")]
    Yaml,
    Json,
}

/// The context graph (`graph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    #[value(alias = "text")]
    Human,
    Json,
    /// Graphviz DOT.
    Dot,
}

pub mod completion;

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(any(feature = "mcp", feature = "serve"))]
    fn durations_are_positive_and_typed_by_clap() {
        assert_eq!(
            super::parse_duration("90s"),
            Ok(std::time::Duration::from_secs(90))
        );
        for bad in ["0s", "banana", "5x", ""] {
            assert!(super::parse_duration(bad).is_err(), "{bad}");
        }
    }
}
