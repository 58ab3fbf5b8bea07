//! Declared supersession: who replaces whom. Never inferred from version numbers.
//!
//! Linear in the number of links: pinned references are found by binary search,
//! and cycles by Tarjan's algorithm (one pass, no path copies), so a chain of a
//! hundred thousand versions is checked as fast as it is loaded.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::diag::{Code, Diagnostic};
use crate::object::ContextObject;
use crate::time::Instant;

use super::Index;

/// The supersession graph over object positions.
#[derive(Debug, Default)]
pub struct Supersession {
    /// Positions of objects some other object declares it replaces.
    pub superseded: HashSet<usize>,
    /// Superseded position → the position of (one of) its replacements.
    pub successor: HashMap<usize, usize>,
    /// Superseded position → every position declared to replace it (sorted).
    successors: HashMap<usize, Vec<usize>>,
    pub diags: Vec<Diagnostic>,
}

/// Is a successor in force at `at`? It replaces its predecessor only from its own
/// `valid_from` (§9.1, §10.3): before that the predecessor is still current.
fn in_force(o: &ContextObject, at: Instant) -> bool {
    o.meta.valid_from.is_none_or(|from| from <= at)
}

impl Supersession {
    /// Is `i` superseded at `at`? Only by a declared successor already in force then.
    /// (`superseded` is the declared, timeless relation the structural checks use.)
    pub fn superseded_at(&self, objects: &[ContextObject], i: usize, at: Instant) -> bool {
        self.successors
            .get(&i)
            .is_some_and(|s| s.iter().any(|&n| in_force(&objects[n], at)))
    }

    /// The successor of `i` in force at `at` (the highest version among them).
    pub fn successor_at(&self, objects: &[ContextObject], i: usize, at: Instant) -> Option<usize> {
        self.successors
            .get(&i)?
            .iter()
            .copied()
            .filter(|&n| in_force(&objects[n], at))
            .max_by_key(|&n| (objects[n].version, std::cmp::Reverse(n)))
    }

    /// Declared replacements of `i` not yet in force at `at`, earliest first.
    pub fn pending_at(&self, objects: &[ContextObject], i: usize, at: Instant) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .successors
            .get(&i)
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|&n| !in_force(&objects[n], at))
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|&n| (objects[n].meta.valid_from, n));
        out
    }

    /// Positions with declared successors (sorted), for checks that walk them all.
    pub fn predecessors(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.successors.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

fn located(idx: &Index<'_>, i: usize, d: Diagnostic) -> Diagnostic {
    let o = &idx.objects[i];
    d.file(o.origin.file.clone())
        .line(o.origin.line)
        .id(o.id.clone())
}

pub fn analyse(idx: &Index<'_>) -> Supersession {
    let mut s = Supersession::default();
    let mut edges: Vec<(usize, usize)> = Vec::new(); // (new, old)
    for (i, o) in idx.objects.iter().enumerate() {
        for r in &o.meta.supersedes {
            let targets = idx.range(r);
            if targets.clone().all(|t| t == i) {
                s.diags.push(
                    located(
                        idx,
                        i,
                        Diagnostic::error(
                            Code::BrokenSupersession,
                            format!("`supersedes` names `{r}`, which does not exist"),
                        ),
                    )
                    .field("supersedes")
                    .expected("an existing id or id@version")
                    .actual(r.to_string())
                    .fix("correct the reference (keep the superseded version on disk)"),
                );
            }
            edges.extend(targets.filter(|&t| t != i).map(|t| (i, t)));
        }
        if let Some(r) = &o.meta.superseded_by {
            // Prefer the highest version when the reference is unpinned: versions are
            // sorted, so that is the last position other than this one.
            match idx.range(r).rev().find(|&t| t != i) {
                None => s.diags.push(
                    located(
                        idx,
                        i,
                        Diagnostic::error(
                            Code::BrokenSupersession,
                            format!("`superseded_by` names `{r}`, which does not exist"),
                        ),
                    )
                    .field("superseded_by")
                    .expected("an existing id or id@version")
                    .actual(r.to_string())
                    .fix("point at the replacing object, or remove `superseded_by`"),
                ),
                Some(newest) => edges.push((newest, i)),
            }
        }
        // A self-reference pinned to its own version is a chain pointing at itself.
        if o.meta
            .supersedes
            .iter()
            .any(|r| r.id == o.id && r.version.is_some() && r.version == o.version)
        {
            s.diags.push(
                located(
                    idx,
                    i,
                    Diagnostic::error(
                        Code::SupersessionCycle,
                        format!("`{}` declares that it supersedes itself", o.key()),
                    ),
                )
                .field("supersedes")
                .actual(o.key())
                .fix("name the older version instead, e.g. `id@N-1`"),
            );
        }
    }
    edges.sort_unstable();
    edges.dedup();
    for &(new, old) in &edges {
        s.superseded.insert(old);
        s.successors.entry(old).or_default().push(new);
        s.successor
            .entry(old)
            .and_modify(|cur| {
                if idx.objects[new].version > idx.objects[*cur].version {
                    *cur = new;
                }
            })
            .or_insert(new);
    }
    // Cycles: strongly connected components of old → new. Objects in a cycle stay
    // active (a cycle settles nothing); each cycle is reported once.
    let nodes: Vec<usize> = {
        let mut v: Vec<usize> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let local: HashMap<usize, usize> = nodes.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for &(new, old) in &edges {
        adj[local[&old]].push(local[&new]);
    }
    let mut cycles: Vec<(Vec<usize>, Vec<usize>)> = crate::manifest::roles::components(&adj)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let path = cycle_path(&c, &adj).into_iter().map(|k| nodes[k]).collect();
            (path, c.into_iter().map(|k| nodes[k]).collect())
        })
        .collect();
    cycles.sort();
    for (path, members) in cycles {
        let start = path[0];
        let names: Vec<String> = path.iter().map(|&p| idx.objects[p].key()).collect();
        s.diags.push(
            located(
                idx,
                start,
                Diagnostic::error(
                    Code::SupersessionCycle,
                    format!(
                        "supersession cycle: {} → {}",
                        names.join(" → "),
                        idx.objects[start].key()
                    ),
                ),
            )
            .field("supersedes")
            .actual(names.join(" → "))
            .expected("a chain from older to newer versions that ends")
            .fix("remove the link that points back to a newer version"),
        );
        for c in &members {
            s.superseded.remove(c);
            s.successor.remove(c);
            s.successors.remove(c);
        }
    }
    s
}

/// A cycle through a strongly connected component: from its lowest member along
/// the shortest way back (members in order, the start not repeated).
fn cycle_path(comp: &[usize], adj: &[Vec<usize>]) -> Vec<usize> {
    let members: HashSet<usize> = comp.iter().copied().collect();
    let start = *comp.iter().min().expect("non-empty");
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut end = start;
    'search: while let Some(v) = queue.pop_front() {
        for &w in &adj[v] {
            if w == start {
                end = v;
                break 'search;
            }
            if members.contains(&w) && w != start && !prev.contains_key(&w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    let mut path = Vec::new();
    let mut v = end;
    while v != start {
        path.push(v);
        v = prev[&v];
    }
    path.push(start);
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectRef;
    use crate::object::{Expires, Faults, Format, Meta, Origin};

    fn object(id: &str, version: u64, supersedes: Vec<ObjectRef>) -> ContextObject {
        let mut meta = Meta::from_fields(&serde_json::Map::new());
        meta.rare_mut().supersedes = supersedes;
        meta.expires = Expires::Omitted;
        meta.faults = Faults::default();
        ContextObject {
            id: id.into(),
            version: Some(version),
            doc: "{}".into(),
            content: None,
            supplied: Default::default(),
            origin: Origin {
                file: format!("{id}.v{version}.yaml"),
                format: Format::Yaml,
                collection: None,
                line: 1,
                path_id: Default::default(),
            },
            meta,
        }
    }

    #[test]
    fn a_long_chain_of_versions_is_settled_in_linear_time() {
        // 50,000 versions of one id, each superseding the previous: per-link scans of
        // the id's versions, or path copies while looking for cycles, are quadratic here.
        let n = 50_000u64;
        let objects: Vec<ContextObject> = (1..=n)
            .map(|v| {
                let sup = if v > 1 {
                    vec![ObjectRef {
                        id: "c.doc".into(),
                        version: Some(v - 1),
                    }]
                } else {
                    Vec::new()
                };
                object("c.doc", v, sup)
            })
            .collect();
        let s = analyse(&Index::new(&objects));
        assert!(s.diags.is_empty(), "{:?}", &s.diags[..1]);
        assert_eq!(s.superseded.len(), n as usize - 1);
        assert!(
            !s.superseded.contains(&(n as usize - 1)),
            "the newest stays active"
        );
        assert_eq!(s.successor[&0], 1);
    }

    #[test]
    fn a_successor_is_in_force_only_from_its_valid_from() {
        let from = crate::time::parse_timestamp("2099-01-01T00:00:00Z").unwrap();
        let mut v2 = object(
            "c.doc",
            2,
            vec![ObjectRef {
                id: "c.doc".into(),
                version: Some(1),
            }],
        );
        v2.meta.rare_mut().valid_from = Some(from);
        let objects = vec![object("c.doc", 1, Vec::new()), v2];
        let s = analyse(&Index::new(&objects));
        assert!(s.superseded.contains(&0), "declared, timeless");
        let before = from - chrono::Duration::seconds(1);
        assert!(!s.superseded_at(&objects, 0, before));
        assert_eq!(s.successor_at(&objects, 0, before), None);
        assert_eq!(s.pending_at(&objects, 0, before), vec![1]);
        assert!(s.superseded_at(&objects, 0, from));
        assert_eq!(s.successor_at(&objects, 0, from), Some(1));
        assert!(s.pending_at(&objects, 0, from).is_empty());
        assert!(
            !s.superseded_at(&objects, 1, from),
            "the newest stays active"
        );
    }

    #[test]
    fn a_cycle_is_reported_once_and_settles_nothing() {
        let r = |v| {
            vec![ObjectRef {
                id: "c.doc".into(),
                version: Some(v),
            }]
        };
        let objects = vec![
            object("c.doc", 1, r(3)),
            object("c.doc", 2, r(1)),
            object("c.doc", 3, r(2)),
        ];
        let s = analyse(&Index::new(&objects));
        let cycles: Vec<&str> = s.diags.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            cycles,
            vec!["supersession cycle: c.doc@1 → c.doc@2 → c.doc@3 → c.doc@1"]
        );
        assert!(s.superseded.is_empty());
    }
}
