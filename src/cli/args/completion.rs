//! Dynamic completion of role, agent and object ids from the repository the shell
//! is in (`source <(COMPLETE=bash ctx)`; see README "Shell completion"). A folder
//! without a repository completes nothing, silently.

use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

use ctx_core::manifest::Manifest;

fn manifest() -> Option<Manifest> {
    let cwd = std::env::current_dir().ok()?;
    Manifest::discover(None, &cwd).ok().map(|(m, _)| m)
}

fn candidates(names: Vec<String>) -> Vec<CompletionCandidate> {
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// The roles the manifest declares.
pub fn roles() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        candidates(manifest().map_or_else(Vec::new, |m| m.roles.into_keys().collect()))
    })
}

/// The agents the manifest declares.
pub fn agents() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        candidates(manifest().map_or_else(Vec::new, |m| m.agents.into_keys().collect()))
    })
}

/// The ids of the repository's objects.
pub fn objects() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let Some(m) = manifest() else {
            return Vec::new();
        };
        let repo = ctx_core::load::load(m, Vec::new(), &Default::default());
        let mut ids: Vec<String> = repo.objects.into_iter().map(|o| o.id).collect();
        ids.sort();
        ids.dedup();
        candidates(ids)
    })
}
