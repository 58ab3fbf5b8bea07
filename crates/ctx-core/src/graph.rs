//! The context graph: references, dependencies, supersession, conflicts, and
//! (on request) owners and sources, rendered as text, JSON or Graphviz DOT.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use serde_json::Value;

use crate::model::ObjectRef;
use crate::view::View;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    Object,
    /// Named by a link but not present (or not visible).
    Missing,
    Owner,
    Source,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Object => "object",
            NodeKind::Missing => "missing",
            NodeKind::Owner => "owner",
            NodeKind::Source => "source",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    References,
    DependsOn,
    Supersedes,
    ConflictsWith,
    OwnedBy,
    Source,
}

impl EdgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::References => "references",
            EdgeKind::DependsOn => "depends_on",
            EdgeKind::Supersedes => "supersedes",
            EdgeKind::ConflictsWith => "conflicts_with",
            EdgeKind::OwnedBy => "owned_by",
            EdgeKind::Source => "source",
        }
    }

    fn outgoing(self) -> &'static str {
        match self {
            EdgeKind::References => "references",
            EdgeKind::DependsOn => "depends on",
            EdgeKind::Supersedes => "supersedes",
            EdgeKind::ConflictsWith => "conflicts with",
            EdgeKind::OwnedBy => "owned by",
            EdgeKind::Source => "source",
        }
    }

    fn incoming(self) -> &'static str {
        match self {
            EdgeKind::References => "referenced by",
            EdgeKind::DependsOn => "needed by",
            EdgeKind::Supersedes => "superseded by",
            EdgeKind::ConflictsWith => "conflicts with",
            EdgeKind::OwnedBy => "owns",
            EdgeKind::Source => "source of",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    /// `type · authority` for objects.
    pub label: Option<String>,
    pub file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// Nodes keyed by `id[@version]` (`owner:<name>`, `source:<uri>` for the others).
#[derive(Debug, Default, Clone)]
pub struct Graph {
    pub nodes: BTreeMap<String, Node>,
    pub edges: BTreeSet<Edge>,
}

/// Which extra node kinds to include.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub owners: bool,
    pub sources: bool,
}

/// Build the graph of what `view` shows (superseded versions included: the graph
/// shows history too). Links name what visible objects declare; a target the
/// consumer may not see is a `missing` node, never its details.
pub fn build(view: &View<'_>, opts: Options) -> Graph {
    let repo = view.repo();
    let visible: Vec<bool> = (0..repo.objects.len())
        .map(|i| view.authorize(i).is_ok())
        .collect();
    let keep = |i: usize| visible[i];
    let idx = view.index();
    let mut g = Graph::default();
    for (i, o) in repo.objects.iter().enumerate() {
        if keep(i) {
            g.nodes.insert(
                o.key(),
                Node {
                    kind: NodeKind::Object,
                    label: Some(format!("{} · {}", o.kind(), o.meta.authority)),
                    file: Some(o.origin.file.clone()),
                },
            );
        }
    }
    // A link names an id (any version) or one version; an unpinned link to an id
    // with several versions points at the one the resolver would choose.
    let target = |r: &ObjectRef, from: usize| -> Vec<String> {
        let hits: Vec<usize> = idx
            .resolve(r)
            .into_iter()
            .filter(|&t| t != from && keep(t))
            .collect();
        if hits.is_empty() {
            return vec![r.to_string()];
        }
        if r.version.is_some() || hits.len() == 1 {
            return hits.iter().map(|&t| repo.objects[t].key()).collect();
        }
        // The version the resolver would choose at the view's instant.
        let active = view
            .find(r, Some(from))
            .filter(|t| hits.contains(t))
            .unwrap_or(hits[hits.len() - 1]);
        vec![repo.objects[active].key()]
    };
    let mut missing = Vec::new();
    for (i, o) in repo.objects.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        let me = o.key();
        let mut link = |kind: EdgeKind, r: &ObjectRef, reverse: bool| {
            for t in target(r, i) {
                if !g.nodes.contains_key(&t) {
                    missing.push(t.clone());
                }
                let (from, to) = if reverse {
                    (t, me.clone())
                } else {
                    (me.clone(), t)
                };
                g.edges.insert(Edge { from, to, kind });
            }
        };
        for r in &o.meta.references {
            link(EdgeKind::References, r, false);
        }
        for r in &o.meta.depends_on {
            link(EdgeKind::DependsOn, r, false);
        }
        for r in &o.meta.supersedes {
            link(EdgeKind::Supersedes, r, false);
        }
        if let Some(r) = &o.meta.superseded_by {
            link(EdgeKind::Supersedes, r, true);
        }
        for r in &o.meta.conflicts_with {
            link(EdgeKind::ConflictsWith, r, false);
        }
        if opts.owners {
            if let Some(owner) = &o.meta.owner {
                let key = format!("owner:{owner}");
                g.nodes.entry(key.clone()).or_insert(Node {
                    kind: NodeKind::Owner,
                    label: None,
                    file: None,
                });
                g.edges.insert(Edge {
                    from: me.clone(),
                    to: key,
                    kind: EdgeKind::OwnedBy,
                });
            }
        }
        if opts.sources && o.meta.declares_sources {
            let sources = o.field("sources");
            for uri in sources
                .iter()
                .flat_map(|s| s.as_array())
                .flatten()
                .filter_map(|s| s.get("uri").and_then(Value::as_str))
            {
                let key = format!("source:{uri}");
                g.nodes.entry(key.clone()).or_insert(Node {
                    kind: NodeKind::Source,
                    label: None,
                    file: None,
                });
                g.edges.insert(Edge {
                    from: me.clone(),
                    to: key,
                    kind: EdgeKind::Source,
                });
            }
        }
    }
    for m in missing {
        g.nodes.entry(m).or_insert(Node {
            kind: NodeKind::Missing,
            label: None,
            file: None,
        });
    }
    g
}

impl Graph {
    /// Node keys for `id`: the id itself or any of its versions.
    pub fn find(&self, id: &str) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(k, n)| {
                n.kind == NodeKind::Object
                    && (*k == id || k.strip_prefix(id).is_some_and(|r| r.starts_with('@')))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The part of the graph within `depth` links of `roots` (links followed both ways;
    /// `None` means the whole connected component).
    pub fn around(&self, roots: &[String], depth: Option<usize>) -> Graph {
        let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for e in &self.edges {
            adj.entry(&e.from).or_default().push(&e.to);
            adj.entry(&e.to).or_default().push(&e.from);
        }
        let mut dist: BTreeMap<&str, usize> = BTreeMap::new();
        let mut queue: VecDeque<&str> = VecDeque::new();
        for r in roots {
            dist.insert(r, 0);
            queue.push_back(r);
        }
        while let Some(n) = queue.pop_front() {
            let d = dist[n];
            if depth.is_some_and(|max| d >= max) {
                continue;
            }
            for &next in adj.get(n).into_iter().flatten() {
                if !dist.contains_key(next) {
                    dist.insert(next, d + 1);
                    queue.push_back(next);
                }
            }
        }
        Graph {
            nodes: self
                .nodes
                .iter()
                .filter(|(k, _)| dist.contains_key(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            edges: self
                .edges
                .iter()
                .filter(|e| dist.contains_key(e.from.as_str()) && dist.contains_key(e.to.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// One block per object: its links out, then the links in.
    pub fn text(&self) -> String {
        // Each node's edges, out and in, in edge order: looked up per node instead of
        // scanning every edge for every node (quadratic: a minute at 100k objects).
        let mut outgoing: BTreeMap<&str, Vec<&Edge>> = BTreeMap::new();
        let mut incoming: BTreeMap<&str, Vec<&Edge>> = BTreeMap::new();
        for e in &self.edges {
            outgoing.entry(&e.from).or_default().push(e);
            incoming.entry(&e.to).or_default().push(e);
        }
        let mut out = String::new();
        for (key, n) in self
            .nodes
            .iter()
            .filter(|(_, n)| n.kind == NodeKind::Object)
        {
            let _ = writeln!(out, "{key}  ({})", n.label.as_deref().unwrap_or(""));
            for e in outgoing.get(key.as_str()).into_iter().flatten() {
                let note = match self.nodes.get(&e.to).map(|n| n.kind) {
                    Some(NodeKind::Missing) => "  (missing)",
                    _ => "",
                };
                let _ = writeln!(out, "  → {:<15} {}{note}", e.kind.outgoing(), e.to);
            }
            for e in incoming.get(key.as_str()).into_iter().flatten() {
                let _ = writeln!(out, "  ← {:<15} {}", e.kind.incoming(), e.from);
            }
        }
        let objects = self
            .nodes
            .values()
            .filter(|n| n.kind == NodeKind::Object)
            .count();
        let _ = writeln!(out, "\n{objects} objects, {} links", self.edges.len());
        out
    }

    /// The graph as pretty-printed JSON (`nodes`, then `edges`), serialized from
    /// borrowed views of the graph: a `Value` tree of a 100k-object graph cost
    /// ~200 MiB more.
    pub fn json(&self) -> String {
        #[derive(serde::Serialize)]
        struct NodeOut<'a> {
            id: &'a str,
            kind: &'static str,
            label: &'a Option<String>,
            file: &'a Option<String>,
        }
        #[derive(serde::Serialize)]
        struct EdgeOut<'a> {
            from: &'a str,
            to: &'a str,
            kind: &'static str,
        }
        #[derive(serde::Serialize)]
        struct GraphOut<'a> {
            nodes: Vec<NodeOut<'a>>,
            edges: Vec<EdgeOut<'a>>,
        }
        let out = GraphOut {
            nodes: (self.nodes.iter())
                .map(|(k, n)| NodeOut {
                    id: k,
                    kind: n.kind.as_str(),
                    label: &n.label,
                    file: &n.file,
                })
                .collect(),
            edges: (self.edges.iter())
                .map(|e| EdgeOut {
                    from: &e.from,
                    to: &e.to,
                    kind: e.kind.as_str(),
                })
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&out).expect("a graph serializes");
        text.push('\n');
        text
    }

    /// Graphviz DOT.
    pub fn dot(&self) -> String {
        fn q(s: &str) -> String {
            let escaped = s
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("\"{escaped}\"")
        }
        let mut out = String::from(
            "digraph context {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n",
        );
        for (k, n) in &self.nodes {
            let attrs = match n.kind {
                NodeKind::Object => format!(
                    "label={}",
                    q(&format!("{k}\n{}", n.label.as_deref().unwrap_or("")))
                ),
                NodeKind::Missing => format!(
                    "label={}, style=dashed, color=red",
                    q(&format!("{k}\n(missing)"))
                ),
                NodeKind::Owner => {
                    format!("label={}, shape=ellipse", q(k.trim_start_matches("owner:")))
                }
                NodeKind::Source => {
                    format!("label={}, shape=note", q(k.trim_start_matches("source:")))
                }
            };
            let _ = writeln!(out, "  {} [{attrs}];", q(k));
        }
        for e in &self.edges {
            let style = match e.kind {
                EdgeKind::References => "",
                EdgeKind::DependsOn => ", style=dashed",
                EdgeKind::Supersedes => ", style=bold",
                EdgeKind::ConflictsWith => ", color=red, fontcolor=red",
                EdgeKind::OwnedBy | EdgeKind::Source => ", style=dotted",
            };
            let _ = writeln!(
                out,
                "  {} -> {} [label={}{style}];",
                q(&e.from),
                q(&e.to),
                q(e.kind.as_str())
            );
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(a: &str, b: &str) -> Edge {
        Edge {
            from: a.into(),
            to: b.into(),
            kind: EdgeKind::References,
        }
    }

    fn node() -> Node {
        Node {
            kind: NodeKind::Object,
            label: None,
            file: None,
        }
    }

    #[test]
    fn around_follows_links_both_ways_to_a_depth() {
        let mut g = Graph::default();
        for k in ["a", "b", "c", "d", "x"] {
            g.nodes.insert(k.into(), node());
        }
        g.edges.insert(edge("a", "b"));
        g.edges.insert(edge("c", "b"));
        g.edges.insert(edge("c", "d"));
        let one = g.around(&["a".into()], Some(1));
        assert_eq!(one.nodes.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        let two = g.around(&["a".into()], Some(2));
        assert_eq!(two.nodes.keys().collect::<Vec<_>>(), vec!["a", "b", "c"]);
        let all = g.around(&["a".into()], None);
        assert_eq!(all.nodes.len(), 4, "x is not connected");
    }

    #[test]
    fn dot_escapes_quotes() {
        let mut g = Graph::default();
        g.nodes.insert("a\"b".into(), node());
        assert!(g.dot().contains("\"a\\\"b\""));
    }
}
