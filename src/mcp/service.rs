//! The facade: the one way the MCP server reaches the library.
//!
//! Every tool, resource and prompt calls an operation here; nothing in the
//! server decides what a consumer may see, and nothing here calls into the
//! CLI. Every answer comes from the library's one disclosure operation
//! ([`ctx_core::disclose`]): listings and search through
//! [`disclose::list`] / [`disclose::search`], anything that carries values
//! through [`disclose::resolve`] (what `ctx resolve` runs, for an agent's door:
//! objects that error-level findings concern are withheld, and what the user
//! declined to approve is withheld before ranking), delivered with its evidence
//! by [`disclose::Disclosure::deliver`]. So an MCP client never sees more than
//! `ctx resolve` gives the same consumer. Every load passes the policy gate
//! ([`roles::require_sound`]): a broken role set refuses, it never widens.
//!
//! The repository is kept in memory ([`LiveRepo`]) and brought up to date at
//! the start of every call by a stat sweep: unchanged files keep their parsed
//! objects, changed ones are read again, and a manifest edit reloads everything,
//! so the server never answers from a state older than the files (nor from an
//! older policy). Operations are synchronous; the server runs them on tokio's
//! blocking pool.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use ctx_core::budget;
use ctx_core::bundle::render;
use ctx_core::disclose::{self, Ask, Release};
use ctx_core::error::Result;
use ctx_core::load::live::LiveRepo;
use ctx_core::load::{self, LoadOptions, Repo};
use ctx_core::manifest::{roles, Manifest};
use ctx_core::personal::Tier;
use ctx_core::resolve::Consumer;
use ctx_core::view::{View, Who};

use super::approval::Item;

/// The object extension recording who wrote a value (seed 004 §5 `written_by`).
pub const MEMORY_EXTENSION: &str = "ctx.memory";

/// Where the repository is and how to reach content: plain values the
/// command line collects (`-C`, the working directory, `--offline`).
#[derive(Debug, Clone)]
pub struct Config {
    /// `-C DIR`: where the manifest search starts (else `cwd`).
    pub dir: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Never reach the network.
    pub offline: bool,
}

impl Config {
    /// The manifest, found by searching upward (no objects loaded).
    pub fn manifest(&self) -> Result<Manifest> {
        Ok(Manifest::discover(self.dir.as_deref(), &self.cwd)?.0)
    }
}

/// Who the server answers for: fixed at launch, never widened by a tool argument.
#[derive(Debug, Clone)]
pub struct Identity {
    pub who: Who,
    /// `agent "coding-agent"` / `role "contributor+support"`, for people (escaped: names are data).
    pub shown: String,
    /// The consumer id (`written_by` of what it writes).
    pub id: String,
}

impl Identity {
    pub fn new(who: Who, consumer: &Consumer) -> Identity {
        Identity {
            shown: format!(
                "{} {}",
                consumer.kind.as_str(),
                super::inert::quoted(&consumer.id)
            ),
            id: consumer.id.clone(),
            who,
        }
    }
}

/// The facade. Cheap to share (`Arc`); every operation takes a fresh snapshot.
pub struct Service {
    pub cfg: Config,
    pub who: Identity,
    /// The repository as named at launch (`id` and root), for the server's instructions.
    pub label: String,
    /// The repository in memory, opened at the first call; `None` until then, or
    /// after opening failed (the next call tries again).
    live: Mutex<Option<LiveRepo>>,
}

/// Metadata rows (no values), already recorded as shown.
pub struct Rows {
    pub rows: Vec<Value>,
}

/// A bundle ready to hand out, and what handing it out needs.
pub struct Disclosure {
    pub repo: Arc<Repo>,
    /// The library's disclosure: what delivering it records.
    pub decided: disclose::Disclosure,
    pub bundle: Value,
    /// Included objects that need the user's approval.
    pub sensitive: Vec<Item>,
    /// Included objects written by another agent: (id, writer).
    pub foreign_writes: Vec<(String, String)>,
    pub budget: Option<budget::Report>,
    /// Objects withheld because approval was refused.
    pub withheld: Vec<String>,
    /// The object ids by collection (for `context_context`).
    pub collections: BTreeMap<String, Vec<String>>,
}

impl Disclosure {
    pub fn digest(&self) -> &str {
        self.bundle["digest"].as_str().unwrap_or("")
    }

    /// The Markdown an MCP answer carries (exclusions bounded: a prompt is small).
    pub fn markdown(&self) -> String {
        render::markdown_bounded(&self.bundle, super::answer::LISTED)
    }

    pub fn object_ids(&self) -> Vec<String> {
        self.bundle["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["id"].as_str().map(str::to_string))
            .collect()
    }
}

/// What a resolve-like call asks for (all narrowing; nothing here widens the scope).
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub task: Option<String>,
    pub limit: Option<usize>,
    pub max_tokens: Option<usize>,
    pub include: Vec<String>,
}

impl Query {
    /// The same query with the library's object budget set to `tokens`.
    pub fn with_budget(&self, tokens: usize) -> Query {
        Query {
            max_tokens: Some(tokens),
            ..self.clone()
        }
    }
}

impl Service {
    pub fn new(cfg: Config, who: Identity, label: String) -> Service {
        Service {
            cfg,
            who,
            label,
            live: Mutex::new(None),
        }
    }

    /// The repository as it is on disk now: the kept one after a stat sweep
    /// (only changed files are read again). A failed refresh drops the kept
    /// state, so the next call loads from scratch, never from an older policy.
    fn snapshot(&self) -> Result<Arc<Repo>> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = live.as_mut() {
            return l.snapshot();
        }
        let opened = LiveRepo::open(
            self.cfg.dir.as_deref(),
            &self.cfg.cwd,
            LoadOptions {
                max_file_size: load::DEFAULT_MAX_FILE_SIZE,
                cache: !load::cache_disabled_by_env(),
                content: true,
                prose: true,
                content_for: None,
                docs: true,
            },
        )?;
        let repo = opened.repo();
        *live = Some(opened);
        Ok(repo)
    }

    /// Load the repository through the policy gate, and the consumer as the
    /// manifest defines it *now*: an agent or role removed since launch, or a
    /// role set that became invalid, fails closed.
    pub fn load(&self) -> Result<(Arc<Repo>, Consumer)> {
        // Refreshed per request (a stat sweep; the manifest is re-read when it
        // changed): a policy edit takes effect on the next call.
        let repo = self.snapshot()?;
        roles::require_sound(&repo.manifest)?;
        let consumer = Consumer::from_flags(
            &repo.manifest,
            self.who.who.agent.as_deref(),
            &self.who.who.roles,
        )?;
        roles::scope(&repo.manifest, &consumer.roles)?;
        Ok((repo, consumer))
    }

    /// State, visible object count and collections. Discloses no values.
    pub fn status(&self) -> Result<Value> {
        let (repo, consumer) = self.load()?;
        let v = View::open(&repo, &self.who.who, now())?;
        let visible = v.visible(false);
        let mut per: BTreeMap<String, usize> = BTreeMap::new();
        for (i, _) in &visible {
            *per.entry(collection_of(&repo, *i)).or_default() += 1;
        }
        let errors = repo
            .diags
            .iter()
            .filter(|d| d.severity == ctx_core::diag::Severity::Error)
            .count();
        Ok(json!({
            "state": if errors == 0 { "ready" } else { "ready-with-errors" },
            "repository": {"id": repo.manifest.id, "name": repo.manifest.name},
            "consumer": {"type": consumer.kind.as_str(), "id": consumer.id, "roles": consumer.roles},
            "visible_objects": visible.len(),
            "collections": per.iter().map(|(k, n)| json!({"name": k, "objects": n, "uri": format!("context://{k}")})).collect::<Vec<_>>(),
            "load_errors": errors,
            "tiers": "public=public, standard=internal, sensitive=confidential (approval), critical=restricted (approval + typed confirmation)",
            "tokenizer": budget::TOKENIZER,
        }))
    }

    /// Metadata of every current object the consumer may see (no content, no
    /// summary), recorded as read. `collection` narrows to one.
    pub fn list(&self, collection: Option<&str>) -> Result<Rows> {
        let (repo, _) = self.load()?;
        let in_collection = |o: &ctx_core::object::ContextObject| {
            collection.is_none_or(|c| o.origin.collection.as_deref().unwrap_or("context") == c)
        };
        let listing = disclose::list(&repo, &self.who.who, now(), false, &in_collection)?;
        let rows = listing
            .shown
            .into_iter()
            .map(|(i, state)| meta_row(&repo, i, Some(state.as_str()), &self.who.id))
            .collect();
        Ok(Rows { rows })
    }

    /// Lexical search over what the consumer may read (redacted; approval-gated
    /// objects by what a listing shows of them only): ids, titles and scores,
    /// recorded as a search.
    pub fn search(&self, query: &str, limit: usize) -> Result<Rows> {
        let (repo, _) = self.load()?;
        let release = Release::WithoutApproval("needs the user's approval".into());
        let found = disclose::search(
            &repo,
            &self.who.who,
            now(),
            query,
            &|_| true,
            limit,
            &release,
        )?;
        let rows = found
            .hits
            .into_iter()
            .map(|(h, _)| {
                let mut row = meta_row(&repo, h.index, None, &self.who.id);
                row["score"] = json!(h.score);
                row
            })
            .collect();
        Ok(Rows { rows })
    }

    /// What this consumer asks for with `q`, as an agent's door asks it.
    pub fn ask(&self, q: &Query, release: &Release) -> Ask {
        let mut a = Ask::agent(self.who.who.clone(), now());
        a.task = q.task.clone();
        a.limit = q.limit;
        a.include = q.include.clone();
        a.max_tokens = q.max_tokens;
        a.offline = self.cfg.offline;
        a.release = release.clone();
        a
    }

    /// The library's disclosure for this consumer: the same pipeline and bundle
    /// as `ctx resolve`, with the token budget and (if asked) approval withholding.
    pub fn resolve(&self, q: &Query, release: &Release) -> Result<Disclosure> {
        let (repo, _) = self.load()?;
        let decided = disclose::resolve(&repo, &self.ask(q, release))?;
        Ok(self.compile(repo, decided))
    }

    /// One object, through the resolver restricted to its id.
    pub fn get(&self, id: &str, release: &Release) -> Result<Disclosure> {
        let d = self.resolve(
            &Query {
                include: vec![id.to_string()],
                ..Query::default()
            },
            release,
        )?;
        Ok(d)
    }

    fn compile(&self, repo: Arc<Repo>, mut decided: disclose::Disclosure) -> Disclosure {
        let mut sensitive = Vec::new();
        let mut foreign_writes = Vec::new();
        let mut collections: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in &decided.resolution.included {
            let o = &repo.objects[s.index];
            let tier = Tier::of(o.meta.classification);
            if tier.needs_approval() {
                sensitive.push(Item {
                    id: o.id.clone(),
                    title: o.meta.title.clone(),
                    tier,
                    proposed: None,
                });
            }
            if let Some(w) = written_by(o).filter(|w| *w != self.who.id) {
                foreign_writes.push((o.id.clone(), w));
            }
            collections
                .entry(collection_of(&repo, s.index))
                .or_default()
                .push(o.id.clone());
        }
        let budget = decided.resolution.budget.clone();
        let withheld = decided.withheld_for_approval.clone();
        let bundle = decided.compile(&repo, &generated_at());
        Disclosure {
            repo,
            decided,
            bundle,
            sensitive,
            foreign_writes,
            budget,
            withheld,
            collections,
        }
    }
}

/// `extensions.ctx.memory.written_by` of an object, if an agent wrote it.
pub fn written_by(o: &ctx_core::object::ContextObject) -> Option<String> {
    o.field("extensions")?
        .get(MEMORY_EXTENSION)?
        .get("written_by")?
        .as_str()
        .map(str::to_string)
}

/// The collection that loaded object `i` (or `context` for single entries).
pub fn collection_of(repo: &Repo, i: usize) -> String {
    repo.objects[i]
        .origin
        .collection
        .clone()
        .unwrap_or_else(|| "context".into())
}

/// One metadata row: what an agent may know about an object without its value.
fn meta_row(repo: &Repo, i: usize, state: Option<&str>, me: &str) -> Value {
    let o = &repo.objects[i];
    let mut row = json!({
        "id": o.id,
        "collection": collection_of(repo, i),
        "type": o.kind(),
        "title": o.title(),
        "classification": o.meta.classification.as_str(),
        "tier": Tier::of(o.meta.classification).as_str(),
        "needs_approval": Tier::of(o.meta.classification).needs_approval(),
        "authority": o.meta.authority.as_str(),
    });
    if let Some(v) = o.version {
        row["version"] = json!(v);
    }
    if let Some(s) = state {
        row["state"] = json!(s);
    }
    if let Some(w) = written_by(o) {
        row["written_by"] = json!(w);
        if w != me {
            row["warning"] = json!(format!("written by agent `{w}`, not by a person"));
        }
    }
    row
}

/// Now, whole seconds (what `ctx resolve` uses without `--at`).
pub fn now() -> ctx_core::time::Instant {
    use chrono::SubsecRound;
    chrono::Utc::now().trunc_subsecs(0)
}

/// A bundle's `generated_at`: now, or `SOURCE_DATE_EPOCH` for reproducible
/// output (the rule `ctx resolve` follows).
pub fn generated_at() -> String {
    let at = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .unwrap_or_else(now);
    ctx_core::time::format(&at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(dir: &std::path::Path) -> Service {
        let who = Who {
            agent: None,
            roles: vec!["reader".into()],
        };
        let consumer = Consumer {
            kind: ctx_core::resolve::ConsumerKind::Role,
            id: "reader".into(),
            roles: vec!["reader".into()],
        };
        Service::new(
            Config {
                dir: Some(dir.to_path_buf()),
                cwd: dir.to_path_buf(),
                offline: true,
            },
            Identity::new(who, &consumer),
            "test".into(),
        )
    }

    #[test]
    fn an_unchanged_repository_is_not_loaded_again_and_an_edit_is_seen() {
        let d = tempfile::tempdir().expect("tmp");
        let w = |rel: &str, text: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w(
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"notes.*\"]\n",
        );
        w("notes/a.md", "---\nid: notes.a\n---\nfirst\n");
        // Older than the racy margin, so the first load's stamps can be trusted.
        std::thread::sleep(std::time::Duration::from_millis(250));
        let svc = service(d.path());
        let (one, _) = svc.load().expect("load");
        let (two, _) = svc.load().expect("load");
        assert!(
            Arc::ptr_eq(&one, &two),
            "nothing changed: the same repository"
        );
        // A policy edit (the manifest) applies to the very next call.
        w(
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"other.*\"]\n",
        );
        let (three, _) = svc.load().expect("load");
        assert!(!Arc::ptr_eq(&two, &three));
        assert!(
            svc.list(None).expect("list").rows.is_empty(),
            "the narrowed role sees nothing"
        );
    }
}
