//! Roles and agents, compiled once when the manifest loads: typed scope patterns,
//! classification ceilings and redaction rules, every error kept as a finding.
//!
//! A consumer's permissions are never guessed. A manifest whose role or agent
//! definitions have any error makes every consumer-facing operation refuse
//! ([`require_sound`]); [`scope`] and [`crate::resolve::Consumer::from_flags`], the two
//! ways an operation obtains a consumer's policy, both pass through that gate.
//!
//! Inheritance is evaluated in linear time: cycles by Tarjan's algorithm, ceilings
//! and "sees anything at all" by one pass over the components in dependency order,
//! and a consumer's scope by one walk over its ancestors.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic, Severity};
use crate::error::Error;
use crate::model::Classification;
use crate::pattern::Pattern;
use crate::resolve::redact::{Rule, PATH_SYNTAX};
use crate::schema::PathItem;

use super::Manifest;

/// Why one entry of a role or agent list is refused (the list check adds
/// the field; empty, duplicate and non-string entries are checked there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum EntryError {
    #[error("{0}")]
    Pattern(&'static str),
    #[error("`{0}` is not a role name")]
    NotARole(String),
}

/// A role, compiled.
#[derive(Debug, Clone)]
pub struct Role {
    pub description: Option<String>,
    /// None: the role declares no `include` (it sees nothing of its own).
    pub include: Option<Vec<Pattern>>,
    pub exclude: Vec<Pattern>,
    pub permissions: Vec<String>,
    pub max_classification: Option<Classification>,
    pub redact: Vec<Rule>,
    pub inherits: Vec<String>,
    /// The effective ceiling after inheritance (computed once at load).
    pub ceiling: Classification,
}

impl Default for Role {
    fn default() -> Role {
        Role {
            description: None,
            include: None,
            exclude: Vec::new(),
            permissions: Vec::new(),
            max_classification: None,
            redact: Vec::new(),
            inherits: Vec::new(),
            ceiling: Classification::Internal,
        }
    }
}

/// An agent, compiled.
#[derive(Debug, Clone, Default)]
pub struct Agent {
    pub roles: Vec<String>,
    pub description: Option<String>,
}

/// What compiling the consumer model produced.
#[derive(Debug, Default)]
pub(super) struct Compiled {
    pub roles: BTreeMap<String, Role>,
    pub agents: BTreeMap<String, Agent>,
    /// The manifest's own `redact` rules.
    pub redact: Vec<Rule>,
    pub findings: Vec<Diagnostic>,
}

const ROLE_KEYS: [&str; 8] = [
    "description",
    "include",
    "exclude",
    "permissions",
    "max_classification",
    "redact",
    "inherits",
    "extensions",
];
const AGENT_KEYS: [&str; 3] = ["roles", "description", "extensions"];

/// Where findings point: the manifest file, at the closest existing path.
struct Locator<'m> {
    m: &'m Manifest,
}

impl Locator<'_> {
    fn at(&self, mut d: Diagnostic, path: &[PathItem]) -> Diagnostic {
        d = d.file(self.m.file.clone());
        if let Some((l, c)) = self.m.locate(path) {
            d = d.at(l, c);
        }
        d
    }
}

fn keys(parts: &[&str]) -> Vec<PathItem> {
    parts.iter().map(|s| PathItem::Key(s.to_string())).collect()
}

fn with_index(mut path: Vec<PathItem>, i: usize) -> Vec<PathItem> {
    path.push(PathItem::Index(i));
    path
}

/// Is `s` one dot-free lowercase id segment (a role or agent name)?
fn segment(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_lowercase() || f.is_ascii_digit())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-' || x == '_')
}

/// The allowed key closest to a misspelt one (`excludes` → `exclude`), if any is close.
fn closest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    allowed
        .iter()
        .map(|k| (distance(key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

/// Compiles one mapping of definitions, collecting findings.
struct Compiler<'m> {
    loc: Locator<'m>,
    findings: Vec<Diagnostic>,
}

impl Compiler<'_> {
    fn error(&mut self, code: Code, path: Vec<PathItem>, field: String, message: String) -> usize {
        let d = self
            .loc
            .at(Diagnostic::error(code, message).field(field), &path);
        self.findings.push(d);
        self.findings.len() - 1
    }

    /// Decorate the finding just pushed.
    fn last(&mut self, f: impl FnOnce(Diagnostic) -> Diagnostic) {
        if let Some(d) = self.findings.pop() {
            self.findings.push(f(d));
        }
    }

    fn closed_keys(
        &mut self,
        what: &str,
        map: &Map<String, Value>,
        allowed: &[&str],
        base: &[&str],
    ) {
        for k in map.keys() {
            if allowed.contains(&k.as_str()) {
                continue;
            }
            let mut path = keys(base);
            path.push(PathItem::Key(k.clone()));
            self.error(
                Code::ManifestInvalid,
                path,
                format!("{}.{k}", base.join(".")),
                format!("unknown key `{k}` in {what}"),
            );
            let hint = closest(k, allowed);
            self.last(|d| {
                d.expected(serde_json::json!(allowed))
                    .actual(k.as_str())
                    .fix(match hint {
                        Some(h) => {
                            format!("did you mean `{h}`? A role or agent is a closed mapping")
                        }
                        None => "remove the key; custom data belongs under `extensions`".into(),
                    })
            });
        }
    }

    fn string(&mut self, v: Option<&Value>, base: &[&str], key: &str) -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.shape(base, key, "a string", other);
                None
            }
        }
    }

    fn shape(&mut self, base: &[&str], key: &str, expected: &str, actual: &Value) {
        let mut parts = base.to_vec();
        parts.push(key);
        self.error(
            Code::ManifestInvalid,
            keys(&parts),
            parts.join("."),
            format!("`{}` must be {expected}", parts.join(".")),
        );
        let actual = type_name(actual);
        self.last(|d| {
            d.expected(expected.to_string())
                .actual(actual)
                .fix(format!("write `{key}` as {expected}"))
        });
    }

    /// A list of unique strings, each accepted by `check` (which explains a rejection).
    fn list(
        &mut self,
        v: Option<&Value>,
        base: &[&str],
        key: &str,
        code: Code,
        expected: &str,
        check: &dyn Fn(&str) -> Result<(), EntryError>,
    ) -> Option<Vec<String>> {
        let v = v?;
        let Value::Array(items) = v else {
            self.shape(base, key, "a list", v);
            return Some(Vec::new());
        };
        let mut parts = base.to_vec();
        parts.push(key);
        let field = parts.join(".");
        let mut out = Vec::with_capacity(items.len());
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let path = with_index(keys(&parts), i);
            let reason = match item {
                Value::String(s) if s.is_empty() => Some("an entry cannot be empty".to_string()),
                Value::String(s) if !seen.insert(s.as_str()) => {
                    Some(format!("`{s}` is listed twice"))
                }
                Value::String(s) => check(s).err().map(|e| e.to_string()),
                other => Some(format!("entries must be strings, not {}", type_name(other))),
            };
            match reason {
                None => out.push(item.as_str().unwrap_or_default().to_string()),
                Some(reason) => {
                    let actual = match item {
                        Value::String(s) => Value::from(s.as_str()),
                        other => Value::from(type_name(other)),
                    };
                    self.error(code, path, field.clone(), format!("`{field}`: {reason}"));
                    self.last(|d| {
                        d.expected(expected.to_string())
                            .actual(actual)
                            .fix(format!("correct or remove this entry of `{key}`"))
                    });
                }
            }
        }
        Some(out)
    }

    fn patterns(&mut self, v: Option<&Value>, base: &[&str], key: &str) -> Option<Vec<Pattern>> {
        let texts = self.list(
            v,
            base,
            key,
            Code::InvalidPermission,
            "dotted lowercase segments, `*` only as a whole segment (e.g. `policies.*`)",
            &|p| {
                Pattern::parse(p)
                    .map(|_| ())
                    .map_err(|e| EntryError::Pattern(e.reason))
            },
        )?;
        Some(
            texts
                .iter()
                .filter_map(|p| Pattern::parse(p).ok())
                .collect(),
        )
    }

    fn rules(&mut self, v: Option<&Value>, base: &[&str]) -> Vec<Rule> {
        let Some(v) = v else {
            return Vec::new();
        };
        let Value::Array(items) = v else {
            self.shape(base, "redact", "a list of redaction rules", v);
            return Vec::new();
        };
        let mut parts = base.to_vec();
        parts.push("redact");
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match Rule::from_value(item) {
                Ok(r) => out.push(r),
                Err(reason) => {
                    let field = format!("{}[{i}]", parts.join("."));
                    let mut path = with_index(keys(&parts), i);
                    let bad_path = item.get("path").and_then(Value::as_str);
                    if bad_path.is_some() {
                        path.push(PathItem::Key("path".into()));
                    }
                    self.error(
                        Code::ManifestInvalid,
                        path,
                        field,
                        format!("invalid redaction rule: {reason}"),
                    );
                    self.last(|d| {
                        let d = d.expected(format!("a mapping with `path` ({PATH_SYNTAX}) and an optional `mode`: remove, mask or hash"));
                        match bad_path {
                            Some(p) => d.actual(p),
                            None => d,
                        }
                        .fix("correct the rule; a rule that cannot be applied would let the value through")
                    });
                }
            }
        }
        out
    }

    fn role(&mut self, name: &str, v: &Value) -> Role {
        let base = ["roles", name];
        let Value::Object(map) = v else {
            self.shape(
                &["roles"],
                name,
                "a mapping (include, exclude, redact, ...)",
                v,
            );
            return Role::default();
        };
        self.closed_keys(&format!("role `{name}`"), map, &ROLE_KEYS, &base);
        let max_classification = match map.get("max_classification") {
            None => None,
            Some(Value::String(s)) if Classification::parse(s).is_some() => {
                Classification::parse(s)
            }
            Some(other) => {
                self.error(
                    Code::ManifestInvalid,
                    keys(&["roles", name, "max_classification"]),
                    format!("roles.{name}.max_classification"),
                    format!("role `{name}` has an invalid `max_classification`"),
                );
                let actual = match other {
                    Value::String(s) => Value::from(s.as_str()),
                    o => Value::from(type_name(o)),
                };
                self.last(|d| {
                    d.expected(serde_json::json!(Classification::names()))
                        .actual(actual)
                        .fix("use one of the four levels, in lowercase")
                });
                // Unusable either way (the policy refuses); the lowest ceiling is the safe value.
                Some(Classification::Public)
            }
        };
        Role {
            description: self.string(map.get("description"), &base, "description"),
            include: self.patterns(map.get("include"), &base, "include"),
            exclude: self
                .patterns(map.get("exclude"), &base, "exclude")
                .unwrap_or_default(),
            permissions: self
                .list(
                    map.get("permissions"),
                    &base,
                    "permissions",
                    Code::ManifestInvalid,
                    "non-empty strings",
                    &|_| Ok(()),
                )
                .unwrap_or_default(),
            max_classification,
            redact: self.rules(map.get("redact"), &base),
            inherits: self
                .list(
                    map.get("inherits"),
                    &base,
                    "inherits",
                    Code::ManifestInvalid,
                    "role names",
                    &|r| {
                        if segment(r) {
                            Ok(())
                        } else {
                            Err(EntryError::NotARole(r.to_string()))
                        }
                    },
                )
                .unwrap_or_default(),
            ceiling: Classification::Internal,
        }
    }

    fn agent(&mut self, name: &str, v: &Value) -> Agent {
        let base = ["agents", name];
        let Value::Object(map) = v else {
            self.shape(&["agents"], name, "a mapping with `roles`", v);
            return Agent::default();
        };
        self.closed_keys(&format!("agent `{name}`"), map, &AGENT_KEYS, &base);
        let listed = self.list(
            map.get("roles"),
            &base,
            "roles",
            Code::ManifestInvalid,
            "role names",
            &|r| {
                if segment(r) {
                    Ok(())
                } else {
                    Err(EntryError::NotARole(r.to_string()))
                }
            },
        );
        let empty_list = map
            .get("roles")
            .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty));
        if listed.is_none() || empty_list {
            self.error(
                Code::ManifestInvalid,
                keys(&base),
                format!("agents.{name}.roles"),
                format!("agent `{name}` holds no role"),
            );
            self.last(|d| {
                d.expected("at least one role name")
                    .actual("none")
                    .fix("list the roles this agent acts as, e.g. `roles: [support]`")
            });
        }
        let roles = listed.unwrap_or_default();
        Agent {
            roles,
            description: self.string(map.get("description"), &base, "description"),
        }
    }

    fn names(&mut self, top: &str, map: &Map<String, Value>) {
        for name in map.keys().filter(|n| !segment(n)) {
            self.error(
                Code::ManifestInvalid,
                keys(&[top, name]),
                format!("{top}.{name}"),
                format!("`{name}` is not a valid name under `{top}`"),
            );
            self.last(|d| {
                d.expected("one lowercase segment: letters, digits, `-` and `_`")
                    .actual(name.as_str())
                    .fix("rename it, e.g. `support-lead`")
            });
        }
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Compile `roles`, `agents` and `redact` of the manifest document `raw`.
pub(super) fn compile(m: &Manifest, raw: &Value) -> Compiled {
    let mut c = Compiler {
        loc: Locator { m },
        findings: Vec::new(),
    };
    let mut out = Compiled::default();
    for (top, _) in [("roles", ()), ("agents", ())] {
        match raw.get(top) {
            None => {}
            Some(Value::Object(map)) => c.names(top, map),
            Some(other) => c.shape(&[], top, "a mapping of names to definitions", other),
        }
    }
    if let Some(Value::Object(map)) = raw.get("roles") {
        for (name, v) in map {
            let role = c.role(name, v);
            out.roles.insert(name.clone(), role);
        }
    }
    if let Some(Value::Object(map)) = raw.get("agents") {
        for (name, v) in map {
            let agent = c.agent(name, v);
            out.agents.insert(name.clone(), agent);
        }
    }
    if raw.get("redact").is_some() {
        out.redact = c.rules(raw.get("redact"), &[]);
    }
    graph(&mut c, &mut out);
    out.findings = c.findings;
    out
}

/// Tarjan's strongly connected components over `edges` (node → the nodes it
/// depends on), iteratively. Components come out dependencies first.
pub(crate) fn components(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0usize;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = work.last_mut() {
            if let Some(&w) = edges[v].get(*pos) {
                *pos += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

/// Unknown parents, cycles, effective ceilings and empty scopes, in linear time.
fn graph(c: &mut Compiler<'_>, out: &mut Compiled) {
    let names: Vec<&String> = out.roles.keys().collect();
    let pos: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let known: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let roles: Vec<&Role> = out.roles.values().collect();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); roles.len()];
    for (i, role) in roles.iter().enumerate() {
        for (k, parent) in role.inherits.iter().enumerate() {
            match pos.get(parent.as_str()) {
                Some(&p) => edges[i].push(p),
                None => {
                    let name = names[i].as_str();
                    c.error(
                        Code::UnknownRole,
                        with_index(keys(&["roles", name, "inherits"]), k),
                        format!("roles.{name}.inherits"),
                        format!("role `{name}` inherits `{parent}`, which is not defined"),
                    );
                    c.last(|d| {
                        d.expected(serde_json::json!(known))
                            .actual(parent.as_str())
                            .fix(format!("define role `{parent}` under `roles:` or remove it from `inherits`"))
                    });
                }
            }
        }
    }
    for (name, agent) in &out.agents {
        for (k, r) in agent.roles.iter().enumerate() {
            if !pos.contains_key(r.as_str()) {
                c.error(
                    Code::UnknownRole,
                    with_index(keys(&["agents", name, "roles"]), k),
                    format!("agents.{name}.roles"),
                    format!("agent `{name}` holds role `{r}`, which is not defined"),
                );
                c.last(|d| {
                    d.expected(serde_json::json!(known))
                        .actual(r.as_str())
                        .fix(format!("define role `{r}` or correct the agent's `roles`"))
                });
            }
        }
    }
    let comps = components(&edges);
    let mut comp_of = vec![0usize; roles.len()];
    for (n, comp) in comps.iter().enumerate() {
        for &i in comp {
            comp_of[i] = n;
        }
    }
    let mut ceiling = vec![Classification::Internal; roles.len()];
    let mut sees = vec![false; roles.len()];
    // Components come out parents first, so each is settled from settled parents.
    for (n, comp) in comps.iter().enumerate() {
        let cyclic = comp.len() > 1 || edges[comp[0]].contains(&comp[0]);
        if cyclic {
            report_cycle(c, comp, &edges, &names);
        }
        let mut comp_sees = false;
        for &i in comp {
            comp_sees |= roles[i].include.as_ref().is_some_and(|v| !v.is_empty())
                || edges[i].iter().any(|&p| comp_of[p] != n && sees[p]);
        }
        for &i in comp {
            let role = roles[i];
            ceiling[i] = match role.max_classification {
                Some(own) => own,
                // A broken chain grants nothing: the lowest ceiling.
                None if cyclic || role.inherits.len() != edges[i].len() => Classification::Public,
                None => edges[i]
                    .iter()
                    .filter(|&&p| comp_of[p] != n)
                    .map(|&p| ceiling[p])
                    .min()
                    .unwrap_or(Classification::Internal),
            };
            sees[i] = comp_sees;
        }
    }
    for (i, name) in names.iter().enumerate() {
        if !sees[i] {
            let d = c.loc.at(
                Diagnostic::info(
                    Code::EmptyScope,
                    format!("role `{name}` has no `include` and sees nothing (scope is opt-in)"),
                )
                .field(format!("roles.{name}.include"))
                .fix(
                    "add the id patterns this role may read, e.g. `include: [mission, policies.*]`",
                ),
                &keys(&["roles", name]),
            );
            c.findings.push(d);
        }
    }
    let names: Vec<String> = names.into_iter().cloned().collect();
    for (i, name) in names.iter().enumerate() {
        if let Some(r) = out.roles.get_mut(name) {
            r.ceiling = ceiling[i];
        }
    }
}

/// One finding per cycle, starting at its smallest role name.
fn report_cycle(c: &mut Compiler<'_>, comp: &[usize], edges: &[Vec<usize>], names: &[&String]) {
    let members: BTreeSet<usize> = comp.iter().copied().collect();
    let start = *members
        .iter()
        .min_by_key(|&&i| names[i])
        .expect("non-empty");
    // Shortest way back to `start` inside the component (breadth first).
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut end = None;
    'search: while let Some(v) = queue.pop_front() {
        for &w in &edges[v] {
            if w == start {
                end = Some(v);
                break 'search;
            }
            if members.contains(&w) && !prev.contains_key(&w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![start];
    if let Some(mut v) = end {
        let mut back = Vec::new();
        while v != start {
            back.push(v);
            v = prev[&v];
        }
        path.extend(back.into_iter().rev());
    }
    path.push(start);
    let text: Vec<&str> = path.iter().map(|&i| names[i].as_str()).collect();
    let first = names[start].as_str();
    c.error(
        Code::RoleCycle,
        keys(&["roles", first, "inherits"]),
        format!("roles.{first}.inherits"),
        format!("role inheritance cycle: {}", text.join(" → ")),
    );
    c.last(|d| {
        d.actual(text.join(" → "))
            .expected("an acyclic inheritance graph")
            .fix("remove one of the `inherits` links in the cycle")
    });
}

/// What one consumer may see: the union over its roles and their ancestors.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The requested roles and every role they inherit (for `permissions.read` / `deny` matching).
    pub principals: BTreeSet<String>,
    pub include: Vec<Pattern>,
    pub exclude: Vec<Pattern>,
    /// Role redaction rules (the manifest's own rules are kept on the manifest).
    pub redact: Vec<Rule>,
    pub permissions: BTreeSet<String>,
    pub ceiling: Classification,
}

/// The gate of every consumer-facing operation: refuse while the role or agent
/// definitions (or the manifest's redaction rules) have any error, naming the first.
pub fn require_sound(m: &Manifest) -> Result<(), Error> {
    let errors: Vec<&Diagnostic> = m
        .policy_findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    let Some(first) = errors.first() else {
        return Ok(());
    };
    let mut msg = format!(
        "refusing to serve context: the manifest's role, agent or redaction definitions have {} error(s), \
         and ctx never guesses what a consumer may see\n  {}",
        errors.len(),
        first.file.as_deref().unwrap_or(&m.file)
    );
    if let Some(l) = first.line {
        msg.push_str(&format!(":{l}"));
        if let Some(c) = first.column {
            msg.push_str(&format!(":{c}"));
        }
    }
    msg.push_str(&format!(": {}", first.message));
    if let Some(f) = &first.field {
        msg.push_str(&format!("\n  field: {f}"));
    }
    if let Some(e) = &first.expected {
        msg.push_str(&format!("\n  expected: {}", plain(e)));
    }
    if let Some(a) = &first.actual {
        msg.push_str(&format!("\n  actual: {}", plain(a)));
    }
    if let Some(f) = &first.remediation {
        msg.push_str(&format!("\n  fix: {f}"));
    }
    if errors.len() > 1 {
        msg.push_str(&format!(
            "\n  ({} more: run `ctx validate` to see them all)",
            errors.len() - 1
        ));
    }
    Err(Error::Invalid(msg))
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The effective scope of several independently requested roles, through the gate.
/// Unknown roles are a usage error.
pub fn scope(m: &Manifest, roles: &[String]) -> Result<Scope, Error> {
    require_sound(m)?;
    effective_scope(m, roles)
}

/// [`scope`] without the gate, for checks that report on a broken policy (doctor).
pub(crate) fn effective_scope(m: &Manifest, roles: &[String]) -> Result<Scope, Error> {
    let mut principals = BTreeSet::new();
    let mut include = Vec::new();
    let mut exclude = Vec::new();
    let mut redact: Vec<Rule> = Vec::new();
    let mut permissions = BTreeSet::new();
    let mut ceiling: Option<Classification> = None;
    for requested in roles {
        let Some(role) = m.roles.get(requested) else {
            let known: Vec<&str> = m.roles.keys().map(String::as_str).collect();
            return Err(Error::Usage(format!(
                "unknown role `{requested}` (defined roles: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )));
        };
        // Across independently requested roles the lowest ceiling applies.
        ceiling = Some(ceiling.map_or(role.ceiling, |prev| prev.min(role.ceiling)));
        let mut stack = vec![requested.as_str()];
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        while let Some(r) = stack.pop() {
            if !seen.insert(r) {
                continue;
            }
            let Some(role) = m.roles.get(r) else {
                continue;
            };
            principals.insert(r.to_string());
            include.extend(role.include.iter().flatten().cloned());
            exclude.extend(role.exclude.iter().cloned());
            redact.extend(role.redact.iter().cloned());
            permissions.extend(role.permissions.iter().cloned());
            stack.extend(role.inherits.iter().map(String::as_str));
        }
    }
    dedup_patterns(&mut include);
    dedup_patterns(&mut exclude);
    let mut seen_rules = BTreeSet::new();
    redact.retain(|r| seen_rules.insert((r.path.clone(), r.mode)));
    Ok(Scope {
        principals,
        include,
        exclude,
        redact,
        permissions,
        ceiling: ceiling.unwrap_or(Classification::Public),
    })
}

fn dedup_patterns(v: &mut Vec<Pattern>) {
    v.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    v.dedup_by(|a, b| a.as_str() == b.as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_find_cycles_and_order_dependencies_first() {
        // 0 → 1 → 2 → 1 ; 3 → 0
        let edges = vec![vec![1], vec![2], vec![1], vec![0]];
        let comps = components(&edges);
        let pos = |n: usize| comps.iter().position(|c| c.contains(&n)).unwrap();
        assert_eq!(comps.iter().filter(|c| c.len() == 2).count(), 1);
        assert!(pos(1) < pos(0) && pos(0) < pos(3));
    }

    #[test]
    fn components_of_a_long_chain_do_linear_work() {
        // 200,000 roles in a chain: recursion would overflow, quadratic work would hang.
        let n = 200_000;
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|i| if i > 0 { vec![i - 1] } else { vec![] })
            .collect();
        let comps = components(&edges);
        assert_eq!(comps.len(), n);
        assert_eq!(comps[0], vec![0], "dependencies first");
    }

    fn manifest(roles: &str) -> (Manifest, Vec<Diagnostic>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencontext.yaml");
        std::fs::write(&path, format!("opencontext: \"1.0\"\nid: t\n{roles}")).unwrap();
        Manifest::load(&path).unwrap()
    }

    #[test]
    fn a_deep_inheritance_dag_compiles_in_linear_time() {
        // Every role inherits the previous two: any walk that follows paths instead
        // of settling each role once is exponential here (2^n paths).
        let mut text = String::from("roles:\n");
        let n = 3_000;
        for k in 0..n {
            text.push_str(&format!("  r{k}:\n    include: [p{}]\n", k % 7));
            if k >= 2 {
                text.push_str(&format!("    inherits: [r{}, r{}]\n", k - 1, k - 2));
            }
        }
        let (m, diags) = manifest(&text);
        assert!(
            m.policy_findings
                .iter()
                .all(|d| d.severity != Severity::Error),
            "{diags:?}"
        );
        let top = format!("r{}", n - 1);
        let s = scope(&m, std::slice::from_ref(&top)).unwrap();
        assert_eq!(s.principals.len(), n);
        assert_eq!(s.include.len(), 7);
        assert_eq!(s.ceiling, Classification::Internal);
    }

    #[test]
    fn broken_definitions_are_kept_by_name_and_gate_every_consumer() {
        let (m, _) = manifest(
            "roles:\n  support:\n    include: [c.*]\n    exclude: [\"c.hidden*\"]\n    max_classification: Internal\n    excludes: [x]\n",
        );
        assert!(
            m.roles.contains_key("support"),
            "a broken role keeps its name"
        );
        let fields: Vec<&str> = m
            .policy_findings
            .iter()
            .filter_map(|d| d.field.as_deref())
            .collect();
        for f in [
            "roles.support.exclude",
            "roles.support.max_classification",
            "roles.support.excludes",
        ] {
            assert!(fields.contains(&f), "{f} missing from {fields:?}");
        }
        let err = scope(&m, &["support".into()]).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{err}");
        assert!(err.to_string().contains("roles.support"), "{err}");
        assert!(
            effective_scope(&m, &["support".into()]).is_ok(),
            "doctor may still look"
        );
    }

    #[test]
    fn cycles_and_unknown_parents_are_reported_once() {
        let (m, _) = manifest(
            "roles:\n  a:\n    include: [x]\n    inherits: [b]\n  b:\n    include: [y]\n    inherits: [a]\n  c:\n    include: [z]\n    inherits: [ghost, c]\n",
        );
        let cycles: Vec<&str> = m
            .policy_findings
            .iter()
            .filter(|d| d.code == Code::RoleCycle)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            cycles,
            vec![
                "role inheritance cycle: a → b → a",
                "role inheritance cycle: c → c"
            ]
        );
        assert!(m
            .policy_findings
            .iter()
            .any(|d| d.code == Code::UnknownRole && d.message.contains("ghost")));
        // A broken chain grants the lowest ceiling.
        assert_eq!(m.roles["c"].ceiling, Classification::Public);
    }

    #[test]
    fn misspelt_keys_get_a_suggestion() {
        assert_eq!(closest("excludes", &ROLE_KEYS), Some("exclude"));
        assert_eq!(
            closest("max_clasification", &ROLE_KEYS),
            Some("max_classification")
        );
        assert_eq!(closest("colour", &ROLE_KEYS), None);
    }
}
