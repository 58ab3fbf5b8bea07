//! Repository-wide checks that need every object at once: duplicates, supersession,
//! references, conflicts, ownership, provenance, approval and extensions.
//! Per-file checks (syntax, schema, secrets) happen in [`crate::load::parse`].

pub mod authority;
pub mod signing;
pub mod supersession;
mod timeline;

use std::collections::{HashMap, HashSet};

use crate::diag::{self, Code, Diagnostic, Severity};
use crate::load::Repo;
use crate::model::{Authority, Status};
use crate::object::ContextObject;

/// Options of a validation run.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidateOptions {
    /// Report approval state and unknown `ctx.` extensions as findings that fail the run.
    pub strict: bool,
    /// The instant time-dependent judgements are made at (`--at`; None: now).
    pub at: Option<crate::time::Instant>,
}

/// Extensions ctx itself defines under its `ctx.` namespace.
pub const KNOWN_CTX_EXTENSIONS: [&str; 12] = [
    "ctx.collections",
    "ctx.export",
    "ctx.keys",
    "ctx.exchange",
    "ctx.personal",
    "ctx.private",
    "ctx.policy",
    "ctx.health",
    "ctx.write",
    "ctx.redaction",
    "ctx.mcp",
    "ctx.prompts",
];

/// Index from id to the positions of its objects (objects are sorted by id).
pub struct Index<'a> {
    pub objects: &'a [ContextObject],
    by_id: HashMap<&'a str, std::ops::Range<usize>>,
}

impl<'a> Index<'a> {
    pub fn new(objects: &'a [ContextObject]) -> Index<'a> {
        let mut by_id: HashMap<&str, std::ops::Range<usize>> =
            HashMap::with_capacity(objects.len());
        let mut start = 0;
        for i in 1..=objects.len() {
            if i == objects.len() || objects[i].id != objects[start].id {
                by_id.insert(objects[start].id.as_str(), start..i);
                start = i;
            }
        }
        Index { objects, by_id }
    }

    pub fn versions(&self, id: &str) -> &'a [ContextObject] {
        match self.by_id.get(id) {
            Some(r) => &self.objects[r.clone()],
            None => &[],
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Positions of the objects an `id[@version]` reference names. A pinned
    /// version is found by binary search (versions of one id are sorted), so a
    /// chain of many versions costs O(log n) per link.
    pub fn resolve(&self, r: &crate::model::ObjectRef) -> Vec<usize> {
        self.range(r).collect()
    }

    /// [`Index::resolve`] without allocating.
    pub fn range(&self, r: &crate::model::ObjectRef) -> std::ops::Range<usize> {
        let Some(range) = self.by_id.get(r.id.as_str()) else {
            return 0..0;
        };
        match r.version {
            None => range.clone(),
            Some(v) => {
                let slice = &self.objects[range.clone()];
                let lo = slice.partition_point(|o| o.version < Some(v));
                let hi = slice.partition_point(|o| o.version <= Some(v));
                range.start + lo..range.start + hi
            }
        }
    }
}

pub(crate) fn at(o: &ContextObject, d: Diagnostic) -> Diagnostic {
    d.file(o.origin.file.clone())
        .line(o.origin.line)
        .id(o.id.clone())
}

/// Run every repository-wide check and return the full, sorted finding list
/// (including the loader's).
pub fn validate(repo: &Repo, opts: ValidateOptions) -> Vec<Diagnostic> {
    let mut out = repo.diags.clone();
    let idx = Index::new(&repo.objects);
    let sup = supersession::analyse(&idx);
    out.extend(sup.diags.iter().cloned());
    let at = opts.at.unwrap_or_else(chrono::Utc::now);
    // The lints take about half of the checks' time: they run beside the rest
    // (findings are sorted below, so the order they arrive in does not matter).
    let (_, lints) = rayon::join(
        || {
            timeline::scheduled_supersession(&idx, &sup, at, repo.manifest.default_ttl, &mut out);
            timeline::approvals(&idx, &mut out);
            duplicates(&idx, &sup.superseded, &mut out);
            references(&idx, &mut out);
            conflicts(&idx, &sup.superseded, &mut out);
            ownership_and_provenance(repo, &mut out);
            principals(repo, &mut out);
            content_uris(repo, &mut out);
            signing::check(repo, &mut out);
            // Private collections: configuration, and no plaintext where ciphertext belongs.
            out.extend(crate::private::guard::check(repo));
            // The exchange policy: what the exchange would refuse it for, found now.
            out.extend(crate::exchange::policy_check::findings(&repo.manifest));
        },
        // Mistakes that leave the repository valid but change what a consumer sees.
        || crate::lint::check(repo, &sup.superseded),
    );
    out.extend(lints);
    if opts.strict {
        strict_checks(repo, &mut out);
    }
    diag::normalize(&mut out);
    out
}

/// Keep the findings about `paths` (files or folders, relative to `cwd`; a
/// path outside the repository keeps nothing, the repository root keeps all).
/// No paths: every finding.
pub fn restrict(
    findings: Vec<Diagnostic>,
    root: &std::path::Path,
    cwd: &std::path::Path,
    paths: &[std::path::PathBuf],
) -> Vec<Diagnostic> {
    if paths.is_empty() {
        return findings;
    }
    let wanted: Vec<String> = paths
        .iter()
        .map(|p| {
            let abs = cwd.join(p);
            let abs = abs.canonicalize().unwrap_or(abs);
            crate::fs::RelPath::strip(root, &abs)
                .map(String::from)
                .unwrap_or_default()
        })
        .collect();
    findings
        .into_iter()
        .filter(|d| {
            let file = d.file.as_deref().unwrap_or("");
            wanted
                .iter()
                .any(|w| w.is_empty() || file == w || file.starts_with(&format!("{w}/")))
        })
        .collect()
}

/// Does the run fail? Errors always; warnings too under `--strict`.
pub fn failed(diags: &[Diagnostic], strict: bool) -> bool {
    diags
        .iter()
        .any(|d| d.severity == Severity::Error || (strict && d.severity == Severity::Warning))
}

pub(crate) fn duplicates(idx: &Index<'_>, superseded: &HashSet<usize>, out: &mut Vec<Diagnostic>) {
    let objs = idx.objects;
    let mut i = 0;
    while i < objs.len() {
        let mut j = i + 1;
        while j < objs.len() && objs[j].id == objs[i].id {
            j += 1;
        }
        // Same id and same version in two files.
        let mut k = i;
        while k < j {
            let mut l = k + 1;
            while l < j && objs[l].version == objs[k].version {
                l += 1;
            }
            if l - k > 1 {
                let files: Vec<String> = objs[k..l].iter().map(|o| o.origin.file.clone()).collect();
                for o in &objs[k + 1..l] {
                    out.push(at(o, Diagnostic::error(Code::DuplicateId, format!(
                        "id `{}` ({}) is declared in both {} and {}",
                        o.key(),
                        o.version.map(|v| format!("version {v}")).unwrap_or_else(|| "no version".into()),
                        files[0],
                        o.origin.file
                    )))
                    .ids(files.clone())
                    .field("id")
                    .expected("a unique id, or a different `version` for history")
                    .actual(o.key())
                    .fix("rename one object, or give the newer one a higher `version` and `supersedes: [id@N]`"));
                }
            }
            k = l;
        }
        let active: Vec<usize> = (i..j).filter(|p| !superseded.contains(p)).collect();
        let distinct_versions = {
            let mut v: Vec<Option<u64>> = active.iter().map(|&p| objs[p].version).collect();
            v.dedup();
            v.len()
        };
        if distinct_versions > 1 {
            let o = &objs[active[active.len() - 1]];
            let versions: Vec<String> = active.iter().map(|&p| objs[p].key()).collect();
            out.push(
                at(
                    o,
                    Diagnostic::error(
                        Code::MultipleActiveVersions,
                        format!(
                            "{} versions of `{}` are active at once: {}",
                            active.len(),
                            o.id,
                            versions.join(", ")
                        ),
                    ),
                )
                .ids(
                    active
                        .iter()
                        .map(|&p| objs[p].origin.file.clone())
                        .collect(),
                )
                .field("supersedes")
                .expected("one active version; older ones superseded")
                .actual(versions.join(", "))
                .fix(format!(
                    "declare `supersedes: [{}]` on the newest version",
                    objs[active[0]].key()
                )),
            );
        }
        let canon: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&p| objs[p].meta.authority == Authority::Canonical)
            .collect();
        if canon.len() > 1 {
            let o = &objs[canon[canon.len() - 1]];
            out.push(
                at(
                    o,
                    Diagnostic::error(
                        Code::DuplicateCanonical,
                        format!(
                            "{} active canonical objects share the id `{}`",
                            canon.len(),
                            o.id
                        ),
                    ),
                )
                .ids(canon.iter().map(|&p| objs[p].origin.file.clone()).collect())
                .field("authority")
                .expected("exactly one active canonical object per id")
                .actual(canon.len())
                .fix("supersede the older one, or lower its authority to reference"),
            );
        }
        i = j;
    }
}

fn references(idx: &Index<'_>, out: &mut Vec<Diagnostic>) {
    for o in idx.objects {
        for (field, list) in [
            ("references", &o.meta.references),
            ("depends_on", &o.meta.depends_on),
            ("conflicts_with", &o.meta.conflicts_with),
        ] {
            for r in list {
                if idx.resolve(r).is_empty() {
                    out.push(
                        at(
                            o,
                            Diagnostic::error(
                                Code::BrokenReference,
                                format!("`{field}` names `{r}`, which does not exist"),
                            ),
                        )
                        .field(field)
                        .expected("the id of an existing object")
                        .actual(r.to_string())
                        .fix("correct the id, or remove the reference"),
                    );
                }
            }
        }
    }
}

fn conflicts(idx: &Index<'_>, superseded: &HashSet<usize>, out: &mut Vec<Diagnostic>) {
    let mut reported: HashSet<(String, String)> = HashSet::new();
    for (i, o) in idx.objects.iter().enumerate() {
        if superseded.contains(&i) {
            continue;
        }
        for r in &o.meta.conflicts_with {
            for j in idx.resolve(r) {
                if superseded.contains(&j) || j == i {
                    continue;
                }
                let other = &idx.objects[j];
                let pair = if o.key() < other.key() {
                    (o.key(), other.key())
                } else {
                    (other.key(), o.key())
                };
                if !reported.insert(pair) {
                    continue;
                }
                if o.meta.authority == other.meta.authority {
                    out.push(at(o, Diagnostic::error(Code::ConflictAmbiguous, format!(
                        "`{}` and `{}` conflict and share authority `{}`, so authority cannot settle it",
                        o.id, other.id, o.meta.authority
                    )))
                    .ids(vec![o.id.clone(), other.id.clone()])
                    .field("conflicts_with")
                    .expected("conflicting objects of different authority, or one superseded")
                    .actual(o.meta.authority.as_str())
                    .fix("decide which one holds: supersede the other or lower its authority"));
                } else {
                    let (win, lose) = if idx_rank(o.meta.authority) < idx_rank(other.meta.authority)
                    {
                        (o, other)
                    } else {
                        (other, o)
                    };
                    out.push(
                        at(
                            o,
                            Diagnostic::warning(
                                Code::ConflictDeclared,
                                format!(
                        "`{}` ({}) conflicts with `{}` ({}); authority settles it for `{}`",
                        win.id, win.meta.authority, lose.id, lose.meta.authority, win.id
                    ),
                            ),
                        )
                        .ids(vec![win.id.clone(), lose.id.clone()])
                        .field("conflicts_with")
                        .fix(format!(
                            "supersede or retire `{}` once the conflict is resolved",
                            lose.id
                        )),
                    );
                }
            }
        }
    }
}

fn idx_rank(a: Authority) -> usize {
    Authority::ALL
        .iter()
        .position(|x| *x == a)
        .unwrap_or(usize::MAX)
}

fn ownership_and_provenance(repo: &Repo, out: &mut Vec<Diagnostic>) {
    let m = &repo.manifest;
    let require_owner = m
        .raw
        .get("health")
        .and_then(|h| h.get("require_owner"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    for o in &repo.objects {
        if o.meta.owner.is_none() {
            let d = if require_owner {
                Diagnostic::error(Code::MissingOwner, "object has no owner")
            } else {
                Diagnostic::warning(Code::MissingOwner, "object has no owner")
            };
            out.push(
                at(o, d)
                    .field("owner")
                    .expected("an accountable role, team or person")
                    .actual("missing")
                    .fix("add `owner: <team>` (or a default in the collection or manifest)"),
            );
        }
        // Provenance is judged on what the author declared, never on loader defaults.
        if m.provenance_required && !o.meta.declares_sources && !o.meta.declares_canonical_source {
            {
                out.push(at(o, Diagnostic::error(Code::MissingProvenance, "provenance is required but the object declares no source"))
                    .field("sources")
                    .expected("`sources: [{uri: ...}]` or `canonical_source: true`")
                    .actual("neither")
                    .fix(if o.meta.sealed.is_some() {
                        // Encrypted by an older ctx: the provenance may sit only in the ciphertext.
                        "if the encrypted copy declares it, run `ctx private rekey --force` to keep provenance in the clear header (validation needs it without keys); otherwise add `sources` or `canonical_source: true`"
                    } else {
                        "add where this context came from, or mark it `canonical_source: true` if it is the origin"
                    }));
            }
        }
        if m.require_digest {
            {
                for (n, uri) in &o.meta.undigested_remote_sources {
                    {
                        out.push(
                            at(
                                o,
                                Diagnostic::error(
                                    Code::MissingDigest,
                                    format!("remote source `{uri}` has no integrity digest"),
                                ),
                            )
                            .field(format!("sources[{n}].digest"))
                            .expected("sha256:<64 hex digits>")
                            .actual("missing")
                            .fix("add `digest: sha256:…` of the retrieved bytes"),
                        );
                    }
                }
            }
        }
    }
}

/// Object `permissions` must name roles or agents the manifest defines.
fn principals(repo: &Repo, out: &mut Vec<Diagnostic>) {
    let m = &repo.manifest;
    let known = |p: &str| {
        p == "*"
            || m.roles.contains_key(p)
            || m.agents.contains_key(p)
            || p.strip_suffix(".*").is_some_and(|pre| {
                m.roles
                    .keys()
                    .chain(m.agents.keys())
                    .any(|k| k == pre || k.starts_with(&format!("{pre}.")))
            })
    };
    for o in &repo.objects {
        let lists = [
            ("read", o.meta.read.as_deref().unwrap_or(&[])),
            ("write", &o.meta.write[..]),
            ("deny", &o.meta.deny[..]),
        ];
        for (list, names) in lists {
            for p in names.iter().map(String::as_str) {
                if !known(p) {
                    out.push(
                        at(
                            o,
                            Diagnostic::warning(
                                Code::InvalidPermission,
                                format!(
                                    "`permissions.{list}` names `{p}`, which is no role or agent"
                                ),
                            ),
                        )
                        .field(format!("permissions.{list}"))
                        .expected(serde_json::json!(m.roles.keys().collect::<Vec<_>>()))
                        .actual(p)
                        .fix("name a role or agent defined in the manifest, or `*`"),
                    );
                }
            }
        }
    }
}

/// Static `content_uri` checks (nothing is fetched or read): a scheme no adapter
/// handles, a local path that leaves the repository (symlinks included), and a
/// local path outside its lane (another object's file, an ignored file, `.git/`).
fn content_uris(repo: &Repo, out: &mut Vec<Diagnostic>) {
    use crate::adapters::{self, file, AdapterError};
    for o in &repo.objects {
        let Some(uri) = o.meta.content_uri.as_deref() else {
            continue;
        };
        match adapters::scheme(uri) {
            None | Some("file") => {
                if let Err(e @ AdapterError::OutOfLane { .. }) =
                    file::resolve_in_lane(&repo.manifest, uri)
                {
                    out.push(
                        at(o, Diagnostic::error(e.code(), e.to_string()))
                            .field("content_uri")
                            .expected("a file inside the repository that no object is loaded from, not ignored by git, not under .git/")
                            .actual(uri)
                            .fix("inline the content, reference the other object by id, or move the file"),
                    );
                } else if let Err(AdapterError::PathTraversal(_)) =
                    file::resolve_inside(&repo.manifest.root, file::local_path(uri), uri)
                {
                    out.push(
                        at(
                            o,
                            Diagnostic::error(
                                Code::PathTraversal,
                                format!(
                                    "`content_uri` `{uri}` resolves outside the repository folder"
                                ),
                            ),
                        )
                        .field("content_uri")
                        .expected("a path inside the folder holding the manifest")
                        .actual(uri)
                        .fix("move the file into the repository, or inline the content"),
                    );
                }
            }
            Some(s) if adapters::claims(&repo.manifest, s) => {}
            Some(s) => out.push(
                at(
                    o,
                    Diagnostic::error(
                        Code::UnknownScheme,
                        format!("no adapter handles the `{s}://` scheme of `content_uri` `{uri}`"),
                    ),
                )
                .field("content_uri")
                .expected(serde_json::json!(adapters::SCHEMES))
                .actual(s)
                .fix(format!("use a built-in scheme, inline the content, or install a `ctx-adapter-{s}` plugin and enable it with `adapters.{s}.enabled: true`")),
            ),
        }
    }
}

fn strict_checks(repo: &Repo, out: &mut Vec<Diagnostic>) {
    let m = &repo.manifest;
    for key in m.extensions.keys() {
        if key.starts_with("ctx.") && !KNOWN_CTX_EXTENSIONS.contains(&key.as_str()) {
            let mut d = Diagnostic::warning(
                Code::UnknownExtension,
                format!("`extensions.{key}` is in ctx's namespace but ctx does not define it"),
            )
            .file(m.file.clone())
            .field(format!("extensions.{key}"))
            .expected(serde_json::json!(KNOWN_CTX_EXTENSIONS))
            .actual(key.as_str())
            .fix("correct the spelling, or move custom data to your own namespace");
            let path = [
                crate::schema::PathItem::Key("extensions".into()),
                crate::schema::PathItem::Key(key.clone()),
            ];
            if let Some((l, c)) = m.locate(&path) {
                d = d.at(l, c);
            }
            out.push(d);
        }
    }
    for o in &repo.objects {
        if let Some(s @ (Status::Draft | Status::Pending)) = o.meta.status {
            out.push(
                at(
                    o,
                    Diagnostic::warning(
                        Code::Unapproved,
                        format!("object is `{s}` and is excluded from default resolution"),
                    ),
                )
                .field("status")
                .expected("approved")
                .actual(s.as_str())
                .fix(
                    "approve it (`status: approved`) or keep it out of the repository until it is",
                ),
            );
        }
    }
}
