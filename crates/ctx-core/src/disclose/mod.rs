//! The one disclosure operation: every door that hands context to a consumer —
//! `ctx resolve`, `bundle`, `export`, `get`, `list`, `search`, `ctx mcp`, `ctx serve`
//! and the Context Layer's issue step — asks here, with the typed options of an
//! [`Ask`], and gets what that consumer may be given:
//!
//! resolve (authorized, in scope, current, ranked, redacted) → output gate
//! (error-level findings: refuse, allow, or withhold before ranking) → approval
//! withholding (tiers ↔ classification, before ranking) → compile → evidence
//! ([`deliver`]: receipt and audit events, committed with the product).
//!
//! No front end builds resolve options, calls the gate or records evidence
//! itself, so a rule added here holds at every door at once, and no door can
//! show more than `ctx resolve` gives the same consumer.

pub mod deliver;
mod reads;
mod target;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::error::Result;
use crate::load::{LoadOptions, Repo};
use crate::model::Classification;
use crate::personal::Tier;
use crate::resolve::{self, Request, Resolution, ResolveOptions};
use crate::time::Instant;
use crate::view::Who;

pub use deliver::{Delivery, Sink};
pub use reads::{document, list, record_decision, search, Decision, Listing, Searched, Shown};
pub use target::{target, Target};

/// What to do when error-level findings (a committed secret, an invalid object, an
/// id that slips past an exclude) concern objects the answer would carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Findings {
    /// Refuse the whole answer, naming each finding: a person at the command line
    /// can fix the repository.
    Refuse,
    /// Hand it out anyway (`--allow-findings`); the findings come back in
    /// [`Disclosure::let_through`] so the door says so.
    Allow,
    /// Withhold the objects they concern before ranking: an agent's door, where
    /// nobody can fix the repository and a refusal would name files.
    Withhold,
}

/// Whether content that needs the user's approval (confidential and restricted,
/// seed 004's sensitive and critical tiers) may leave in this answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Release {
    /// Everything the consumer may read: no approval is asked at this door, or the
    /// user gave it for this answer.
    All,
    /// Withhold approval-gated objects before ranking; the text says why (it is
    /// the detail of their exclusion records).
    WithoutApproval(String),
}

impl Release {
    /// Does this answer withhold `tier`?
    pub fn withholds(&self, tier: Tier) -> bool {
        matches!(self, Release::WithoutApproval(_)) && tier.needs_approval()
    }
}

/// Private (age-encrypted) collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Private {
    /// Opened with these identity files (empty: `$CTX_AGE_IDENTITY`, then the
    /// user's default identity), for objects the consumer may read.
    Identities(Vec<PathBuf>),
    /// Never opened: the Context Layer stores what it discloses, and plaintext of
    /// an encrypted collection never touches disk.
    Closed,
}

/// One disclosure request, as every door states it.
#[derive(Debug, Clone)]
pub struct Ask {
    pub who: Who,
    pub at: Instant,
    pub task: Option<String>,
    /// Id patterns that narrow the scope (never widen it).
    pub include: Vec<String>,
    pub include_historical: bool,
    pub limit: Option<usize>,
    pub min_relevance: Option<f64>,
    /// Keep the most relevant objects that fit this many estimated tokens.
    pub max_tokens: Option<usize>,
    /// Never reach the network.
    pub offline: bool,
    pub private: Private,
    pub findings: Findings,
    pub release: Release,
    /// The most sensitive classification this answer may carry, whatever the
    /// consumer may read (an export into a file meant for git); objects above it
    /// are withheld before ranking and listed as `classification-denied`.
    pub ceiling: Option<Classification>,
}

impl Ask {
    /// A person's request at the command line: findings refuse, nothing needs approval.
    pub fn person(who: Who, at: Instant) -> Ask {
        Ask {
            who,
            at,
            task: None,
            include: Vec::new(),
            include_historical: false,
            limit: None,
            min_relevance: None,
            max_tokens: None,
            offline: false,
            private: Private::Identities(Vec::new()),
            findings: Findings::Refuse,
            release: Release::All,
            ceiling: None,
        }
    }

    /// An agent's request (MCP, HTTP, the Context Layer): objects that findings
    /// concern are withheld, never handed out and never named by file.
    pub fn agent(who: Who, at: Instant) -> Ask {
        Ask {
            findings: Findings::Withhold,
            ..Ask::person(who, at)
        }
    }

    /// The resolver's plain options: built here only.
    fn options(&self) -> ResolveOptions {
        let mut o = ResolveOptions::new(self.who.clone(), self.at);
        o.task = self.task.clone();
        o.include = self.include.clone();
        o.include_historical = self.include_historical;
        o.limit = self.limit;
        o.min_relevance = self.min_relevance;
        o.max_tokens = self.max_tokens;
        o.offline = self.offline;
        if let Private::Identities(files) = &self.private {
            o.identities = files.clone();
        }
        o
    }
}

/// What one consumer is given for one [`Ask`], before it is compiled.
#[derive(Debug, Clone)]
pub struct Disclosure {
    pub ask: Ask,
    pub resolution: Resolution,
    /// Findings handed out anyway ([`Findings::Allow`]); the door names them.
    pub let_through: Vec<Diagnostic>,
    /// Ids withheld for findings ([`Findings::Withhold`]): for the door's operator
    /// (a server's log), never for the consumer, to whom they look like objects
    /// outside its scope.
    pub withheld_for_findings: Vec<String>,
    /// Ids withheld because approval was not given ([`Release::WithoutApproval`]).
    pub withheld_for_approval: Vec<String>,
    /// Ids withheld above the answer's ceiling ([`Ask::ceiling`]), with each one's
    /// classification.
    pub withheld_for_ceiling: Vec<(String, Classification)>,
}

/// Find the repository from `dir` or `cwd` and load it for `ask`: content is kept
/// only for the objects its consumer may read.
pub fn open(dir: Option<&Path>, cwd: &Path, load: &LoadOptions, ask: &Ask) -> Result<Repo> {
    resolve::open(dir, cwd, load, &ask.options())
}

/// The objects a load for `ask` may keep the content of (for a repository kept in
/// memory, whose load is shared by many asks: None, keep all).
pub fn content_filter(
    m: &crate::manifest::Manifest,
    ask: &Ask,
) -> Option<crate::load::ContentFilter> {
    resolve::content_filter(m, &ask.options())
}

/// Resolve `ask` against `repo`: the one disclosure decision.
pub fn resolve(repo: &Repo, ask: &Ask) -> Result<Disclosure> {
    let mut req = Request::build(&repo.manifest, &ask.options())?;
    if ask.private == Private::Closed {
        req.identities = None;
    }
    let mut withheld_for_findings = Vec::new();
    let mut withheld_for_approval = Vec::new();
    let mut withheld_for_ceiling = Vec::new();
    let withhold = withheld(repo, ask, &req)?;
    for (i, why) in &withhold {
        let o = &repo.objects[*i];
        match why {
            Withheld::Findings => withheld_for_findings.push(o.id.clone()),
            Withheld::Approval => withheld_for_approval.push(o.id.clone()),
            Withheld::Ceiling => withheld_for_ceiling.push((o.id.clone(), o.meta.classification)),
        }
    }
    req.withhold = withhold
        .into_iter()
        .map(|(i, why)| (i, why.detail(ask)))
        .collect();
    let resolution = resolve::resolve(repo, req)?;
    let let_through = match ask.findings {
        Findings::Withhold => Vec::new(),
        Findings::Refuse | Findings::Allow => {
            crate::lint::output_gate(repo, &resolution, ask.findings == Findings::Allow)?
        }
    };
    withheld_for_findings.sort();
    withheld_for_approval.sort();
    withheld_for_ceiling.sort();
    Ok(Disclosure {
        ask: ask.clone(),
        resolution,
        let_through,
        withheld_for_findings,
        withheld_for_approval,
        withheld_for_ceiling,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Withheld {
    Findings,
    Approval,
    Ceiling,
}

impl Withheld {
    /// The detail of its exclusion record; None: counted as out of scope instead,
    /// since the object's existence (its id may have slipped past an exclude) is
    /// not the consumer's to learn.
    fn detail(self, ask: &Ask) -> Option<(&'static str, String)> {
        match (self, &ask.release) {
            (Withheld::Findings, _) => None,
            (Withheld::Ceiling, _) => Some((
                "classification-denied",
                format!(
                    "withheld: above this output's ceiling ({})",
                    ask.ceiling.unwrap_or(Classification::Restricted)
                ),
            )),
            (Withheld::Approval, Release::WithoutApproval(why)) => {
                Some(("permission-denied", format!("withheld: {why}")))
            }
            (Withheld::Approval, Release::All) => unreachable!("nothing is withheld"),
        }
    }
}

/// The objects the consumer may read that this answer must not carry, decided
/// before ranking so they never influence a score, a budget or a count.
fn withheld(repo: &Repo, ask: &Ask, req: &Request) -> Result<BTreeMap<usize, Withheld>> {
    let mut out = BTreeMap::new();
    let gated = matches!(ask.release, Release::WithoutApproval(_));
    if !gated && ask.findings != Findings::Withhold && ask.ceiling.is_none() {
        return Ok(out);
    }
    let view = crate::view::View::of(repo, &req.consumer, req.at)?;
    let readable: Vec<usize> = (0..repo.objects.len())
        .filter(|&i| view.authorize(i).is_ok())
        .collect();
    if ask.findings == Findings::Withhold {
        for i in crate::lint::gate::blocked_objects(repo, readable.iter().copied()).into_keys() {
            out.insert(i, Withheld::Findings);
        }
    }
    if let Some(ceiling) = ask.ceiling {
        for &i in &readable {
            if repo.objects[i].meta.classification > ceiling {
                out.entry(i).or_insert(Withheld::Ceiling);
            }
        }
    }
    if gated {
        for &i in &readable {
            if ask
                .release
                .withholds(Tier::of(repo.objects[i].meta.classification))
            {
                out.entry(i).or_insert(Withheld::Approval);
            }
        }
    }
    Ok(out)
}

impl Disclosure {
    /// Included objects that need the user's approval before they leave (indexes
    /// into `repo.objects`); empty once approval was given or refused.
    pub fn approval_gated(&self, repo: &Repo) -> Vec<usize> {
        self.resolution
            .included
            .iter()
            .map(|s| s.index)
            .filter(|&i| Tier::of(repo.objects[i].meta.classification).needs_approval())
            .collect()
    }

    /// Does the answer hold decrypted private content?
    pub fn holds_private(&self) -> bool {
        self.resolution.holds_private()
    }

    /// Compile the OpenContext bundle (deterministic: its digest is the same at
    /// every door for the same repository, consumer and ask).
    pub fn compile(&mut self, repo: &Repo, generated_at: &str) -> Value {
        crate::bundle::compile(repo, &mut self.resolution, generated_at)
    }

    /// [`Disclosure::compile`] for a caller done with the repository's content: it
    /// is released first, so a whole bundle never sits beside a second copy of it.
    pub fn compile_releasing(&mut self, repo: &mut Repo, generated_at: &str) -> Value {
        repo.release_content();
        self.compile(repo, generated_at)
    }
}

/// Where decrypted private content may be written: refuses a path inside the
/// repository unless `allow`, and never over a file git tracks.
pub fn check_private_output(
    repo: &Repo,
    d: &Disclosure,
    output: Option<&Path>,
    allow: bool,
) -> Result<()> {
    match output {
        Some(path) if d.holds_private() => {
            crate::view::output::check_private_output(&repo.manifest, path, allow, true)
        }
        _ => Ok(()),
    }
}
