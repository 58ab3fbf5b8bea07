//! `ctx approvals list|approve|deny`: answer a running `ctx serve`'s approval
//! questions from another terminal. It reads the server's per-launch control file
//! (or `--url` and `CTX_SERVE_TOKEN`) and speaks plain HTTP to loopback.
//!
//! - `client.rs`: finding the server and asking it;
//! - `render.rs`: the questions as inert text.

mod client;
mod render;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use ctx_core::error::{Exit, Result};

use super::{Global, Printer};
use client::{ask, server};

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// The server (default: from the control file the running `ctx serve` wrote).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,
    #[command(subcommand)]
    pub command: ApprovalsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Questions waiting for an answer, shown as inert text.
    List {
        /// `human` (default) or `json`.
        #[arg(long, default_value = "human", value_parser = ["human", "json"])]
        format: String,
    },
    /// Approve one question (critical fields: --confirm with the ids, or --password-file).
    Approve {
        /// The question's id, as `ctx approvals` lists it.
        id: String,
        /// For critical fields: the field ids, retyped.
        #[arg(long, value_name = "IDS")]
        confirm: Option<String>,
        /// For critical fields: confirm with the profile password read from this file.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Deny one question.
    Deny {
        /// The question's id, as `ctx approvals` lists it.
        id: String,
    },
}

pub fn run(g: &Global, p: &Printer, a: &ApprovalsArgs) -> Result<Exit> {
    let s = server(g, a.url.as_deref())?;
    match &a.command {
        ApprovalsCommand::List { format } => {
            let v = ask(&s, "GET", "/context/approvals", None)?;
            super::io_result(p.out(&render::list(&v, format == "json")))?;
        }
        ApprovalsCommand::Approve {
            id,
            confirm,
            password_file,
        } => {
            let confirm = match (confirm, password_file) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(_)) => Some(
                    super::personal::PasswordArgs {
                        password_file: password_file.clone(),
                    }
                    .read(false)?
                    .to_string(),
                ),
                (None, None) => None,
            };
            ask(
                &s,
                "POST",
                &format!("/context/approvals/{id}"),
                Some(&json!({"decision": "approve", "confirm": confirm})),
            )?;
            super::io_result(p.out(&format!("approved {id}\n")))?;
        }
        ApprovalsCommand::Deny { id } => {
            ask(
                &s,
                "POST",
                &format!("/context/approvals/{id}"),
                Some(&json!({"decision": "deny"})),
            )?;
            super::io_result(p.out(&format!("denied {id}\n")))?;
        }
    }
    Ok(Exit::Ok)
}
