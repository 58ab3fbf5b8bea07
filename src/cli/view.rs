//! The consumer flags (`--agent`, `--role`) of the commands that show objects, and
//! the one way they open the library's authorized view ([`ctx_core::view::View`]).
//! Without `--role`/`--agent` the view is the repository author's.

use clap::Args;

use ctx_core::error::Result;
use ctx_core::load::Repo;
use ctx_core::view::{View, Who};

#[derive(Debug, Args, Clone, Default)]
pub struct ConsumerArgs {
    /// See only what this agent may read.
    #[arg(long, conflicts_with = "role")]
    pub agent: Option<String>,
    /// See only what these roles may read.
    #[arg(long = "role", num_args = 1..)]
    pub role: Vec<String>,
}

impl ConsumerArgs {
    pub fn who(&self) -> Who {
        Who {
            agent: self.agent.clone(),
            roles: self.role.clone(),
        }
    }
}

/// Open the view these flags select (the policy gate runs here).
pub fn open<'r>(
    repo: &'r Repo,
    who: &ConsumerArgs,
    at: ctx_core::time::Instant,
) -> Result<View<'r>> {
    View::open(repo, &who.who(), at)
}
