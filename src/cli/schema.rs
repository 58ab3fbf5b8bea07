//! `ctx schema [NAME]`: list the embedded schemas or print one.

use clap::Args;

use ctx_core::error::{Error, Exit, Result};
use ctx_core::schema::Kind;

use super::Printer;

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Schema to print (manifest, object, role, provenance, decision, diagnostic, bundle, audit-event).
    pub name: Option<String>,
    /// Write the output to this file (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(p: &Printer, args: &SchemaArgs) -> Result<Exit> {
    let text = match &args.name {
        None => Kind::ALL
            .iter()
            .map(|k| {
                let v: serde_json::Value =
                    serde_json::from_str(k.text()).expect("embedded schema is JSON");
                let id = v.get("$id").and_then(|x| x.as_str()).unwrap_or("");
                format!("{:<12} {id}\n", k.name())
            })
            .collect::<String>(),
        Some(name) => {
            let kind = Kind::parse(name).ok_or_else(|| {
                Error::NotFound(format!(
                    "no schema named `{name}`; available: {}",
                    Kind::ALL
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            let mut t = kind.text().to_string();
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t
        }
    };
    super::io_result(p.product(&text, args.output.as_deref()))?;
    Ok(Exit::Ok)
}
