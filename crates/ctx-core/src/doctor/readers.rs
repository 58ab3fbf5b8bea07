//! Can any consumer read an object? Decided per object by walking the role
//! inheritance graph once, with each role's verdict for that object remembered,
//! instead of flattening every consumer's scope (quadratic in a deep inheritance
//! chain). Gives the answer [`authorize`](crate::resolve::authorize::authorize)
//! gives for every role and agent the manifest defines.

use std::collections::HashMap;

use crate::manifest::roles::{components, Role};
use crate::manifest::Manifest;
use crate::model::Classification;
use crate::object::ContextObject;
use crate::pattern::principal_matches;

/// A role's own patterns or names match the object (bits of one verdict).
const INCLUDED: u8 = 1;
const EXCLUDED: u8 = 2;
const DENIED: u8 = 4;
const GRANTED: u8 = 8;
/// Not yet decided for the object at hand.
const UNKNOWN: u8 = 0xFF;

/// The role graph condensed into its strongly connected components (a role in a
/// cycle inherits everything the cycle does), plus every consumer by component.
pub(super) struct Readers<'m> {
    roles: Vec<(&'m String, &'m Role)>,
    members: Vec<Vec<usize>>,
    parents: Vec<Vec<usize>>,
    /// Each consumer: its name, the components of its roles, its ceiling.
    consumers: Vec<(&'m str, Vec<usize>, Classification)>,
}

impl<'m> Readers<'m> {
    pub(super) fn new(m: &'m Manifest) -> Readers<'m> {
        let roles: Vec<(&String, &Role)> = m.roles.iter().collect();
        let index: HashMap<&str, usize> = roles
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect();
        let edges: Vec<Vec<usize>> = roles
            .iter()
            .map(|(_, r)| {
                r.inherits
                    .iter()
                    .filter_map(|p| index.get(p.as_str()).copied())
                    .collect()
            })
            .collect();
        let members = components(&edges);
        let mut comp_of = vec![0; roles.len()];
        for (c, m) in members.iter().enumerate() {
            for &r in m {
                comp_of[r] = c;
            }
        }
        let parents: Vec<Vec<usize>> = members
            .iter()
            .enumerate()
            .map(|(c, m)| {
                let mut p: Vec<usize> = m
                    .iter()
                    .flat_map(|&r| edges[r].iter().map(|&q| comp_of[q]))
                    .filter(|&q| q != c)
                    .collect();
                p.sort_unstable();
                p.dedup();
                p
            })
            .collect();
        // Roles on their own, then agents (an agent naming an unknown role has no
        // scope and reads nothing); the lowest ceiling of an agent's roles applies.
        let mut consumers: Vec<(&str, Vec<usize>, Classification)> = roles
            .iter()
            .enumerate()
            .map(|(i, (n, r))| (n.as_str(), vec![comp_of[i]], r.ceiling))
            .collect();
        for (name, agent) in &m.agents {
            let found: Option<Vec<usize>> = agent
                .roles
                .iter()
                .map(|r| index.get(r.as_str()).copied())
                .collect();
            let Some(found) = found else { continue };
            let ceiling = found
                .iter()
                .map(|&i| roles[i].1.ceiling)
                .min()
                .unwrap_or(Classification::Public);
            let comps = found.iter().map(|&i| comp_of[i]).collect();
            consumers.push((name.as_str(), comps, ceiling));
        }
        Readers {
            roles,
            members,
            parents,
            consumers,
        }
    }

    /// May some consumer read `o`? `memo` is scratch space, left all UNKNOWN.
    pub(super) fn any_reads(&self, o: &ContextObject, memo: &mut Memo) -> bool {
        // An object whose governance fields are invalid is withheld from everyone.
        if !o.meta.faults.is_empty() {
            return false;
        }
        memo.reset(self.members.len());
        let names = |list: &[String], name: &str| list.iter().any(|e| principal_matches(e, name));
        let own = |r: usize| {
            let (name, role) = self.roles[r];
            let mut f = 0;
            if role.include.iter().flatten().any(|p| p.covers(&o.id)) {
                f |= INCLUDED;
            }
            if role.exclude.iter().any(|p| p.covers(&o.id)) {
                f |= EXCLUDED;
            }
            if names(&o.meta.deny, name) {
                f |= DENIED;
            }
            if o.meta.read.as_deref().is_some_and(|l| names(l, name)) {
                f |= GRANTED;
            }
            f
        };
        self.consumers.iter().any(|(name, comps, ceiling)| {
            let mut f = 0;
            for &c in comps {
                f |= self.verdict(c, memo, &own);
            }
            if names(&o.meta.deny, name) {
                f |= DENIED;
            }
            if o.meta.read.as_deref().is_some_and(|l| names(l, name)) {
                f |= GRANTED;
            }
            f & (DENIED | EXCLUDED) == 0
                && (o.meta.read.is_none() || f & GRANTED != 0)
                && f & INCLUDED != 0
                && o.meta.classification <= *ceiling
        })
    }

    /// The verdict of component `c` and everything it inherits, each component
    /// decided once (an explicit stack: inheritance chains can be very deep).
    fn verdict(&self, c: usize, memo: &mut Memo, own: &impl Fn(usize) -> u8) -> u8 {
        if memo.get(c) != UNKNOWN {
            return memo.get(c);
        }
        let mut stack = vec![(c, false)];
        while let Some((c, parents_done)) = stack.pop() {
            if memo.get(c) != UNKNOWN {
                continue;
            }
            if !parents_done {
                stack.push((c, true));
                stack.extend(
                    self.parents[c]
                        .iter()
                        .filter(|&&p| memo.get(p) == UNKNOWN)
                        .map(|&p| (p, false)),
                );
                continue;
            }
            let mut f = self.members[c].iter().fold(0, |f, &r| f | own(r));
            for &p in &self.parents[c] {
                f |= memo.get(p);
            }
            memo.set(c, f);
        }
        memo.get(c)
    }
}

/// Per-object verdicts by component, reset in time proportional to what was set.
#[derive(Default)]
pub(super) struct Memo {
    verdicts: Vec<u8>,
    set: Vec<usize>,
}

impl Memo {
    fn reset(&mut self, n: usize) {
        if self.verdicts.len() != n {
            self.verdicts = vec![UNKNOWN; n];
        } else {
            for &c in &self.set {
                self.verdicts[c] = UNKNOWN;
            }
        }
        self.set.clear();
    }

    fn get(&self, c: usize) -> u8 {
        self.verdicts[c]
    }

    fn set(&mut self, c: usize, f: u8) {
        self.verdicts[c] = f;
        self.set.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Repo;
    use crate::manifest::roles::effective_scope;
    use crate::resolve::authorize::{authorize, Principals};
    use crate::testutil::repo_from;

    /// What flattening every consumer's scope and authorizing says (the old way).
    fn flattened(repo: &Repo, o: &ContextObject) -> bool {
        let m = &repo.manifest;
        let consumers = m
            .roles
            .keys()
            .map(|n| (n, vec![n.clone()]))
            .chain(m.agents.iter().map(|(n, a)| (n, a.roles.clone())));
        consumers.into_iter().any(|(name, roles)| {
            effective_scope(m, &roles).is_ok_and(|scope| {
                let who = Principals {
                    consumer: name,
                    scope: &scope,
                };
                authorize(o, &who).is_ok()
            })
        })
    }

    /// Every object's verdict, both ways; how many some consumer may read.
    fn agree(repo: &Repo) -> usize {
        let readers = Readers::new(&repo.manifest);
        let mut memo = Memo::default();
        let mut read = 0;
        for o in &repo.objects {
            let want = flattened(repo, o);
            assert_eq!(readers.any_reads(o, &mut memo), want, "{}", o.id);
            read += usize::from(want);
        }
        read
    }

    fn object(id: &str, extra: &str) -> String {
        format!("---\nid: docs.{id}\ntype: note\nowner: o\n{extra}---\n\nText.\n")
    }

    /// The same answer as flattening every consumer's scope and authorizing.
    #[test]
    fn agrees_with_authorize_for_every_consumer() {
        let manifest = r#"opencontext: "1.0"
id: t
collections:
  docs: ./context/**
roles:
  base:
    include: [docs.*]
    exclude: [docs.hidden]
  a:
    inherits: [base, b]
    max_classification: confidential
  b:
    include: [docs.btop, docs.granted]
    inherits: [a]
  lone:
    include: [docs.lone]
  cut:
    inherits: [base]
    exclude: [docs.open]
agents:
  bot:
    roles: [lone, cut]
  ghost:
    roles: [nobody]
"#;
        let objects = [
            ("open", ""),
            ("hidden", ""),
            ("lone", ""),
            ("lone2", "permissions:\n  deny: [bot]\n"),
            ("bsecret", "classification: confidential\n"),
            ("btop", "classification: restricted\n"),
            ("granted", "permissions:\n  read: [b]\n"),
            ("nogrant", "permissions:\n  read: [someone]\n"),
            ("denied", "permissions:\n  deny: [base]\n"),
            ("broken", "permissions: 7\n"),
        ];
        let texts: Vec<(String, String)> = objects
            .iter()
            .map(|(id, extra)| (format!("context/{id}.md"), object(id, extra)))
            .collect();
        let mut files = vec![("opencontext.yaml", manifest)];
        files.extend(texts.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let (_dir, repo) = repo_from(&files);
        assert_eq!(repo.objects.len(), objects.len());
        let read = agree(&repo);
        assert!(read > 2 && read < objects.len(), "a mix: {read}");
    }

    /// Many small random policies (cycles, diamonds, unknown parents and roles,
    /// grants, denials, ceilings): the same answer as authorize every time.
    #[test]
    fn agrees_with_authorize_on_random_policies() {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let levels = ["public", "internal", "confidential", "restricted"];
        let ids = ["a", "a.x", "a.y", "b", "b.x", "c"];
        let patterns = [
            "docs.*", "docs.a.*", "docs.a", "docs.*.x", "docs.b", "docs.c",
        ];
        let (mut read, mut unread) = (0, 0);
        for _ in 0..40 {
            let roles = 2 + next(5) as usize;
            let mut m = String::from(
                "opencontext: \"1.0\"\nid: t\ncollections:\n  docs: ./context/**\nroles:\n",
            );
            for r in 0..roles {
                m += &format!("  r{r}:\n");
                if next(3) > 0 {
                    m += &format!("    include: [{}]\n", patterns[next(6) as usize]);
                }
                if next(4) == 0 {
                    m += &format!("    exclude: [{}]\n", patterns[next(6) as usize]);
                }
                if next(3) == 0 {
                    m += &format!("    max_classification: {}\n", levels[next(4) as usize]);
                }
                let parents: Vec<String> = (0..next(3))
                    .map(|_| format!("r{}", next(roles as u64 + 1)))
                    .filter(|p| *p != format!("r{r}"))
                    .collect();
                if !parents.is_empty() {
                    m += &format!("    inherits: [{}]\n", parents.join(", "));
                }
            }
            m += "agents:\n";
            for a in 0..2 {
                let of: Vec<String> = (0..1 + next(2))
                    .map(|_| format!("r{}", next(roles as u64 + 1)))
                    .collect();
                m += &format!("  g{a}:\n    roles: [{}]\n", of.join(", "));
            }
            let principal = |k: u64| match k {
                0 => "\"*\"".to_string(),
                1 => "g0".to_string(),
                k => format!("r{}", k - 2),
            };
            let texts: Vec<(String, String)> = ids
                .iter()
                .map(|id| {
                    let mut extra = format!("classification: {}\n", levels[next(4) as usize]);
                    if next(4) == 0 {
                        extra += &format!("permissions:\n  deny: [{}]\n", principal(next(6)));
                    } else if next(3) == 0 {
                        extra += &format!("permissions:\n  read: [{}]\n", principal(next(6)));
                    }
                    (format!("context/{id}.md"), object(id, &extra))
                })
                .collect();
            let mut files = vec![("opencontext.yaml", m.as_str())];
            files.extend(texts.iter().map(|(p, t)| (p.as_str(), t.as_str())));
            let (_dir, repo) = repo_from(&files);
            assert_eq!(repo.objects.len(), ids.len(), "{m}");
            let n = agree(&repo);
            read += n;
            unread += ids.len() - n;
        }
        assert!(read > 20 && unread > 20, "a mix: {read} read, {unread} not");
    }
}
