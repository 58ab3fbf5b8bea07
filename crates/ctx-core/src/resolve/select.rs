//! Stage 5 — authority: one active object per id, and declared conflicts reported.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use crate::diag::Severity;
use crate::manifest::Manifest;
use crate::model::{Authority, Lifecycle};
use crate::object::ContextObject;

use super::{excl, Exclusion, Warning};

fn authority_rank(m: &Manifest, o: &ContextObject) -> usize {
    m.precedence
        .iter()
        .position(|a| *a == o.meta.authority)
        .unwrap_or(usize::MAX)
}

/// Total order, in the spec's steps (§6): authority (manifest precedence), then
/// version (higher first), then recency (`updated`, later first), then the configured
/// `authority.tie_breakers` in their order, then id and file, so the outcome never
/// depends on load order.
///
/// Configured tie breakers refine this order; they never replace the version and
/// recency steps. Naming `version` or `updated` among them changes nothing (those
/// steps already ran); `created`, `confidence` and `id` apply where version and
/// recency tie.
pub fn precedence_cmp(m: &Manifest, a: &ContextObject, b: &ContextObject) -> Ordering {
    let mut ord = authority_rank(m, a)
        .cmp(&authority_rank(m, b))
        .then_with(|| b.version.cmp(&a.version))
        .then_with(|| b.meta.updated.cmp(&a.meta.updated));
    for tb in &m.tie_breakers {
        if ord != Ordering::Equal {
            return ord;
        }
        ord = match tb.as_str() {
            "created" => b.meta.created.cmp(&a.meta.created),
            "confidence" => b
                .meta
                .confidence
                .unwrap_or(0.0)
                .partial_cmp(&a.meta.confidence.unwrap_or(0.0))
                .unwrap_or(Ordering::Equal),
            "id" => a.id.cmp(&b.id),
            // `version` and `updated` already decided above.
            _ => Ordering::Equal,
        };
    }
    ord.then_with(|| a.id.cmp(&b.id))
        .then_with(|| a.origin.file.cmp(&b.origin.file))
}

/// Sort `items` by relevance (higher first), then by [`precedence_cmp`] of their
/// objects; `key` gives an item's object index and score. Items must name distinct
/// objects. The first steps of the precedence are compared from keys taken once,
/// so the sort reads the objects themselves (scattered in memory) only for items
/// that tie on score, authority, version and recency.
pub fn sort_by_relevance<T>(
    m: &Manifest,
    objects: &[ContextObject],
    items: &mut [T],
    key: impl Fn(&T) -> (usize, f64),
) {
    let keys: Vec<(f64, usize, Option<u64>, Option<crate::time::Instant>)> = items
        .iter()
        .map(|it| {
            let (i, score) = key(it);
            let o = &objects[i];
            (score, authority_rank(m, o), o.version, o.meta.updated)
        })
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&x, &y| {
        let (a, b) = (&keys[x], &keys[y]);
        b.0.partial_cmp(&a.0)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| b.2.cmp(&a.2))
            .then_with(|| b.3.cmp(&a.3))
            .then_with(|| precedence_cmp(m, &objects[key(&items[x]).0], &objects[key(&items[y]).0]))
    });
    apply_permutation(items, order);
}

/// Rearrange `items` so that position `n` holds what was at `order[n]`.
fn apply_permutation<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        // Follow each cycle once, swapping along it; visited slots point at themselves.
        let mut at = start;
        while order[at] != start {
            let next = order[at];
            items.swap(at, next);
            order[at] = at;
            at = next;
        }
        order[at] = at;
    }
}

/// How the outcome names an object: `id@version`, with its file when another
/// object in `group` has the same key (a duplicate), so a message never reads
/// "X outranks X".
fn label(objects: &[ContextObject], group: &[usize], i: usize) -> String {
    let key = objects[i].key();
    if group.iter().any(|&j| j != i && objects[j].key() == key) {
        format!("{key} ({})", objects[i].origin.file)
    } else {
        key
    }
}

/// Keep one active object per id; the others are excluded as `outranked`.
/// With `--include-historical`, superseded versions stay beside the current one.
pub fn one_per_id(
    m: &Manifest,
    objects: &[ContextObject],
    kept: Vec<(usize, String, Lifecycle)>,
    historical: bool,
    excluded: &mut Vec<Exclusion>,
    warnings: &mut Vec<Warning>,
) -> Vec<(usize, String, Lifecycle)> {
    let mut groups: Vec<Vec<(usize, String, Lifecycle)>> = Vec::new();
    for item in kept {
        match groups.last_mut() {
            Some(g) if objects[g[0].0].id == objects[item.0].id => g.push(item),
            _ => groups.push(vec![item]),
        }
    }
    let mut out = Vec::new();
    for mut g in groups {
        let (mut active, history): (Vec<_>, Vec<_>) = g
            .drain(..)
            .partition(|(_, _, s)| *s != Lifecycle::Superseded);
        if historical {
            out.extend(history);
        }
        if active.len() > 1 {
            active.sort_by(|a, b| precedence_cmp(m, &objects[a.0], &objects[b.0]));
            let members: Vec<usize> = active.iter().map(|(i, _, _)| *i).collect();
            let win = members[0];
            let winner = objects[win].key();
            let named = |i: usize| label(objects, &members, i);
            let losers: Vec<String> = members[1..].iter().map(|&i| named(i)).collect();
            let id = &objects[win].id;
            warnings.push(Warning {
                id: Some(id.clone()),
                code: "multiple-active-versions".into(),
                message: format!(
                    "{} active versions of {id}: {} outranks {}",
                    members.len(),
                    named(win),
                    losers.join(", ")
                ),
                severity: Severity::Warning,
            });
            // Two active canonical objects for one id: a conflict authority cannot
            // settle. Reported as such, never only as a version question.
            let canonical: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| objects[i].meta.authority == Authority::Canonical)
                .collect();
            if canonical.len() > 1 {
                let names: Vec<String> = canonical.iter().map(|&i| named(i)).collect();
                warnings.push(Warning {
                    id: Some(id.clone()),
                    code: "conflict-ambiguous".into(),
                    message: format!(
                        "duplicate canonical: {} active canonical objects share the id {id} ({}); \
                         authority cannot settle it, {} is used by the version and recency order \
                         until one is superseded or lowered",
                        canonical.len(),
                        names.join(", "),
                        named(canonical[0]),
                    ),
                    severity: Severity::Error,
                });
            }
            // Losers are `outranked` (as the reference reports them); the detail says
            // when it is a duplicate canonical rather than a version question.
            for &i in &members[1..] {
                let duplicate =
                    canonical.len() > 1 && canonical.contains(&i) && canonical[0] == win;
                let detail = if duplicate {
                    format!("duplicate canonical: {} is used instead", named(win))
                } else {
                    format!("another active version ranks higher: {}", named(win))
                };
                excluded.push(excl(
                    &objects[i],
                    "outranked",
                    Some(detail),
                    Some(winner.clone()),
                ));
            }
            active.truncate(1);
        }
        out.extend(active);
    }
    out
}

/// Report declared conflicts between included objects: settled ones as
/// `conflict-declared`, equal-authority ones as `conflict-ambiguous`.
pub fn conflicts(
    m: &Manifest,
    objects: &[ContextObject],
    kept: &[(usize, String, Lifecycle)],
    warnings: &mut Vec<Warning>,
) {
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, _, _) in kept {
        by_id.entry(objects[*i].id.as_str()).or_default().push(*i);
    }
    let mut seen = BTreeSet::new();
    for (i, _, _) in kept {
        let o = &objects[*i];
        for r in &o.meta.conflicts_with {
            for &j in by_id.get(r.id.as_str()).map(Vec::as_slice).unwrap_or(&[]) {
                let other = &objects[j];
                if j == *i || r.version.is_some_and(|v| other.version != Some(v)) {
                    continue;
                }
                let pair = if o.id < other.id {
                    (o.id.clone(), other.id.clone())
                } else {
                    (other.id.clone(), o.id.clone())
                };
                if !seen.insert(pair) {
                    continue;
                }
                let (ra, rb) = (authority_rank(m, o), authority_rank(m, other));
                if ra == rb {
                    warnings.push(Warning {
                        id: Some(o.id.clone()),
                        code: "conflict-ambiguous".into(),
                        message: format!("{} and {} conflict at equal authority ({}); authority cannot settle it", o.id, other.id, o.meta.authority),
                        severity: Severity::Error,
                    });
                } else {
                    let (win, lose) = if ra < rb { (o, other) } else { (other, o) };
                    warnings.push(Warning {
                        id: Some(win.id.clone()),
                        code: "conflict-declared".into(),
                        message: format!(
                            "{} ({}) conflicts with {} ({}); {} prevails by authority",
                            win.id, win.meta.authority, lose.id, lose.meta.authority, win.id
                        ),
                        severity: Severity::Warning,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_are_applied_cycle_by_cycle() {
        let orders = [
            vec![],
            vec![0],
            vec![2, 0, 1],
            vec![1, 0, 3, 2],
            vec![4, 3, 0, 1, 2],
        ];
        for order in orders {
            let mut items: Vec<char> = (0..order.len()).map(|i| (b'a' + i as u8) as char).collect();
            let want: Vec<char> = order.iter().map(|&i| items[i]).collect();
            apply_permutation(&mut items, order.clone());
            assert_eq!(items, want, "{order:?}");
        }
    }

    #[test]
    fn relevance_then_precedence_orders_as_the_comparator_does() {
        // Ties on score, authority, version and recency in every combination, so
        // both the keys and the full comparator decide some pairs.
        let mut files = vec![(
            "opencontext.yaml".to_string(),
            "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\n".to_string(),
        )];
        // Groups of four share score and authority; in each, version decides one
        // pair, recency another, and the last two tie on every key (ids decide).
        for n in 0..12usize {
            files.push((
                format!("notes/o{n:02}.md"),
                format!(
                    "---\nid: o{:02}\ntype: knowledge\nauthority: {}\n{}{}---\nbody\n",
                    11 - n,
                    ["canonical", "reference", "canonical"][n / 4],
                    if n % 4 == 0 { "version: 2\n" } else { "" },
                    if n % 4 == 1 {
                        "updated: 2026-01-01T00:00:00Z\n"
                    } else {
                        ""
                    },
                ),
            ));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_dir, repo) = crate::testutil::repo_from(&files);
        let (m, objects) = (&repo.manifest, &repo.objects);
        assert_eq!(objects.len(), 12);
        let items: Vec<(usize, f64)> = (0..objects.len())
            .map(|i| {
                let n = 11 - objects[i].id[1..].parse::<usize>().expect("a number");
                (i, [1.0, 1.0, 0.0][n / 4])
            })
            .rev()
            .collect();
        let mut want = items.clone();
        want.sort_by(|a, b| {
            b.1.partial_cmp(&a.1)
                .unwrap_or(Ordering::Equal)
                .then_with(|| precedence_cmp(m, &objects[a.0], &objects[b.0]))
        });
        let mut got = items.clone();
        sort_by_relevance(m, objects, &mut got, |it| *it);
        assert_eq!(got, want);
    }
}
