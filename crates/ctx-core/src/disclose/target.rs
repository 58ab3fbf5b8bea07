//! Whether a consumer may name an id as the target of a write or a proposal:
//! the same answer for an object it may not read and for one that does not
//! exist, so a write is never an oracle on what a read would hide.

use crate::error::Result;
use crate::load::Repo;
use crate::model::ObjectRef;
use crate::time::Instant;
use crate::view::{View, Who};

/// What a consumer may know about an id it wants to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An object it may read (index into `repo.objects`): a new version of it is
    /// reviewed before it is written.
    Visible(usize),
    /// No object it may read has this id, and one with it would be in its read
    /// scope: missing, or present and hidden from it — the two are not told apart.
    Unseen,
    /// Outside its read scope: a write or proposal is refused, exactly as for any
    /// other id it may not read.
    Forbidden,
}

/// What `who` may know about `id` at `at`.
pub fn target(repo: &Repo, who: &Who, at: Instant, id: &str) -> Result<Target> {
    let v = View::open(repo, who, at)?;
    if let Some(i) = v.find(
        &ObjectRef {
            id: id.to_string(),
            version: None,
        },
        None,
    ) {
        // An object error-level findings concern is withheld from the consumer's
        // reads, so a write sees it as a read does: not there.
        let blocked =
            v.consumer().is_some() && !crate::lint::gate::blocked_objects(repo, [i]).is_empty();
        if !blocked {
            return Ok(Target::Visible(i));
        }
    }
    let Some(scope) = v.scope() else {
        // The repository's author: every id is theirs to write.
        return Ok(Target::Unseen);
    };
    let admitted =
        scope.include.iter().any(|p| p.covers(id)) && !scope.exclude.iter().any(|p| p.covers(id));
    Ok(if admitted {
        Target::Unseen
    } else {
        Target::Forbidden
    })
}
