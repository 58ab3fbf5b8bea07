//! What `get`, `list` and `search` may show: the consumer's authorized view.
//! Without `--role`/`--agent` the view is the repository author's (every object).

use clap::Args;

use ctx_core::error::{Error, Result};
use ctx_core::load::Repo;
use ctx_core::manifest::roles::{self, Scope};
use ctx_core::model::{Lifecycle, Redaction};
use ctx_core::resolve::authorize::{authorize, Principals};
use ctx_core::resolve::{lifecycle, Consumer};
use ctx_core::validate::{supersession, Index};

#[derive(Debug, Args, Clone, Default)]
pub struct ConsumerArgs {
    /// See only what this agent may read.
    #[arg(long, conflicts_with = "role")]
    pub agent: Option<String>,
    /// See only what these roles may read.
    #[arg(long = "role", num_args = 1..)]
    pub role: Vec<String>,
}

/// The visible objects (indexes into `repo.objects`) with their lifecycle state.
pub struct View {
    pub visible: Vec<(usize, Lifecycle)>,
    pub scope: Option<Scope>,
}

pub fn view(
    repo: &Repo,
    who: &ConsumerArgs,
    at: ctx_core::time::Instant,
    historical: bool,
) -> Result<View> {
    let consumer = if who.agent.is_none() && who.role.is_empty() {
        None
    } else {
        Some(
            Consumer::from_flags(&repo.manifest, who.agent.as_deref(), &who.role)
                .map_err(Error::Usage)?,
        )
    };
    let scope = match &consumer {
        Some(c) => Some(roles::scope(&repo.manifest, &c.roles).map_err(Error::Usage)?),
        None => None,
    };
    let idx = Index::new(&repo.objects);
    let sup = supersession::analyse(&idx);
    let mut visible = Vec::new();
    for (i, o) in repo.objects.iter().enumerate() {
        if let (Some(c), Some(s)) = (&consumer, &scope) {
            if authorize(
                o,
                &Principals {
                    consumer: &c.id,
                    scope: s,
                },
            )
            .is_err()
            {
                continue;
            }
        }
        let state = if sup.superseded.contains(&i) {
            Lifecycle::Superseded
        } else {
            lifecycle::state(o, at, repo.manifest.default_ttl)
        };
        if !historical && matches!(state, Lifecycle::Superseded) {
            continue;
        }
        visible.push((i, state));
    }
    Ok(View { visible, scope })
}

/// Redaction rules that apply to object `i` for this view.
pub fn rules<'a>(
    repo: &'a Repo,
    view: &'a View,
    object_rules: &'a [Redaction],
) -> Vec<&'a Redaction> {
    match &view.scope {
        Some(s) => repo
            .manifest
            .redact
            .iter()
            .chain(s.redact.iter())
            .chain(object_rules.iter())
            .collect(),
        None => Vec::new(),
    }
}
