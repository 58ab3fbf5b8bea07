//! Declared supersession: who replaces whom. Never inferred from version numbers.

use std::collections::{HashMap, HashSet};

use crate::diag::{Code, Diagnostic};

use super::Index;

/// The supersession graph over object positions.
#[derive(Debug, Default)]
pub struct Supersession {
    /// Positions of objects some other object declares it replaces.
    pub superseded: HashSet<usize>,
    /// Superseded position → the position of (one of) its replacements.
    pub successor: HashMap<usize, usize>,
    pub diags: Vec<Diagnostic>,
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
            let targets: Vec<usize> = idx.resolve(r).into_iter().filter(|&t| t != i).collect();
            if targets.is_empty() {
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
            for t in targets {
                edges.push((i, t));
            }
        }
        if let Some(r) = &o.meta.superseded_by {
            let targets: Vec<usize> = idx.resolve(r).into_iter().filter(|&t| t != i).collect();
            match targets.as_slice() {
                [] => s.diags.push(
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
                many => {
                    // Prefer the highest version when the reference is unpinned.
                    let newest = *many
                        .iter()
                        .max_by_key(|&&t| idx.objects[t].version)
                        .expect("non-empty");
                    edges.push((newest, i));
                }
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
        s.successor
            .entry(old)
            .and_modify(|cur| {
                if idx.objects[new].version > idx.objects[*cur].version {
                    *cur = new;
                }
            })
            .or_insert(new);
    }
    // Cycles: follow successors; a walk that returns to its start is a cycle.
    let mut in_cycle: HashSet<usize> = HashSet::new();
    let mut adj: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(new, old) in &edges {
        adj.entry(old).or_default().push(new);
    }
    let mut starts: Vec<usize> = adj.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        if in_cycle.contains(&start) {
            continue;
        }
        let mut stack = vec![(start, vec![start])];
        let mut seen = HashSet::new();
        while let Some((node, path)) = stack.pop() {
            for &next in adj.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
                if next == start {
                    let names: Vec<String> = path.iter().map(|&p| idx.objects[p].key()).collect();
                    if path.iter().all(|p| !in_cycle.contains(p)) {
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
                    }
                    in_cycle.extend(path.iter().copied());
                } else if seen.insert(next) {
                    let mut p = path.clone();
                    p.push(next);
                    stack.push((next, p));
                }
            }
        }
    }
    // Objects in a cycle stay active: a cycle settles nothing.
    for c in &in_cycle {
        s.superseded.remove(c);
        s.successor.remove(c);
    }
    s
}
