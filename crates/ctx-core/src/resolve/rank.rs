//! Stage 6 — task relevance: a deterministic lexical BM25 score over id, title,
//! tags, summary and content. Runs only on objects that passed authorization, and
//! on their content as the consumer sees it (redacted), so neither scores nor
//! document frequencies depend on denied or redacted bytes.

use std::collections::HashMap;

use rayon::prelude::*;
use serde_json::Value;

use crate::object::ContextObject;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Field weights: a match in the id or title says more than one in the body.
const W_ID: f64 = 3.0;
const W_TITLE: f64 = 3.0;
const W_TAGS: f64 = 2.0;
const W_SUMMARY: f64 = 1.5;
const W_CONTENT: f64 = 1.0;

/// Lowercased alphanumeric terms of a text, in order.
pub fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
}

/// Query terms: unique, minus a few words that carry no meaning.
pub fn query_terms(task: &str) -> Vec<String> {
    const STOP: [&str; 24] = [
        "a", "an", "the", "for", "of", "to", "in", "on", "and", "or", "is", "are", "with", "by",
        "at", "from", "as", "be", "it", "this", "that", "we", "our", "my",
    ];
    let mut out: Vec<String> = terms(task)
        .filter(|t| !STOP.contains(&t.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The query terms, looked up once per token of every candidate's text, so
/// the lookup is what ranking costs: most tokens are rejected by length alone,
/// and a short query is scanned rather than hashed.
struct Query<'q> {
    terms: Vec<&'q str>,
    /// Used instead of the scan for long queries.
    map: Option<HashMap<&'q str, usize>>,
    /// The longest term, in bytes: a longer ASCII token cannot match.
    longest: usize,
    /// Bit `n` set when some term is `n` bytes long (n < 64), and whether one is
    /// longer: with `first`, how ASCII text skips most tokens before any lookup.
    lengths: u64,
    long: bool,
    /// The bytes (either case) some term starts with.
    first: [bool; 256],
}

impl<'q> Query<'q> {
    fn new(terms: &'q [String]) -> Query<'q> {
        let terms: Vec<&str> = terms.iter().map(String::as_str).collect();
        let mut first = [false; 256];
        let mut lengths = 0u64;
        for t in &terms {
            if let Some(&b) = t.as_bytes().first() {
                first[b.to_ascii_lowercase() as usize] = true;
                first[b.to_ascii_uppercase() as usize] = true;
            }
            if t.len() < 64 {
                lengths |= 1 << t.len();
            }
        }
        Query {
            map: (terms.len() > 8)
                .then(|| terms.iter().enumerate().map(|(i, t)| (*t, i)).collect()),
            longest: terms.iter().map(|t| t.len()).max().unwrap_or(0),
            lengths,
            long: terms.iter().any(|t| t.len() >= 64),
            first,
            terms,
        }
    }

    /// Whether an ASCII token could be a term: its length and first byte say most
    /// cannot, and only those that could are looked up ([`Query::find`]).
    fn may_match(&self, token: &[u8]) -> bool {
        let n = token.len();
        let length = if n < 64 {
            self.lengths >> n & 1 == 1
        } else {
            self.long
        };
        length && self.first[token[0] as usize]
    }

    /// Call `hit` with the term of each token of ASCII `text` that is one, and
    /// return how many tokens it has: [`each_token`] and [`Query::find`] in one
    /// pass over the bytes, for the common case.
    fn tally_ascii(&self, text: &str, mut hit: impl FnMut(usize)) -> usize {
        debug_assert!(text.is_ascii());
        let bytes = text.as_bytes();
        let mut tokens = 0;
        let mut i = 0;
        while i < bytes.len() {
            if !bytes[i].is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            tokens += 1;
            if self.may_match(&bytes[start..i]) {
                if let Some(t) = self.find(&text[start..i]) {
                    hit(t);
                }
            }
        }
        tokens
    }

    fn get(&self, t: &str) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(t).copied(),
            None => self.terms.iter().position(|q| *q == t),
        }
    }

    /// The term a token of text counts for. ASCII tokens are lowercased on the
    /// stack; others exactly as before (lowercased only when they hold an ASCII
    /// capital), so scores are unchanged.
    fn find(&self, t: &str) -> Option<usize> {
        if t.is_ascii() {
            if t.len() > self.longest {
                return None;
            }
            if !t.bytes().any(|b| b.is_ascii_uppercase()) {
                return self.get(t);
            }
            let mut buf = [0u8; 64];
            if t.len() <= buf.len() {
                let b = &mut buf[..t.len()];
                b.copy_from_slice(t.as_bytes());
                b.make_ascii_lowercase();
                return self.get(std::str::from_utf8(b).expect("ASCII"));
            }
            return self.get(&t.to_ascii_lowercase());
        }
        if t.bytes().all(|b| !b.is_ascii_uppercase()) {
            self.get(t)
        } else {
            self.get(t.to_lowercase().as_str())
        }
    }
}

/// Call `f` with each maximal run of alphanumeric characters in `text`: the
/// tokens `text.split(|c| !c.is_alphanumeric())` gives, without the empty ones.
/// ASCII bytes are classified by a byte test and only other characters decoded:
/// ranking tokenizes every candidate's whole content, most of it ASCII.
fn each_token<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (alnum, width) = if b.is_ascii() {
            (b.is_ascii_alphanumeric(), 1)
        } else {
            let c = text[i..].chars().next().expect("a char starts here");
            (c.is_alphanumeric(), c.len_utf8())
        };
        match (alnum, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                f(&text[s..i]);
                start = None;
            }
            _ => {}
        }
        i += width;
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

/// Weighted term frequencies of one object for the query terms, and its weighted length.
/// `listed_only`: only what a listing shows of the object (id and title) is indexed.
fn profile(
    o: &ContextObject,
    content: Option<&Value>,
    listed_only: bool,
    query: &Query<'_>,
) -> (Vec<f64>, f64) {
    let mut tf = vec![0.0; query.terms.len()];
    let mut len = 0.0;
    let mut add = |text: &str, w: f64| {
        if text.is_ascii() {
            // Weights are small binary fractions: adding one per token is exact,
            // so the product equals the sum the slow path makes.
            len += w * query.tally_ascii(text, |i| tf[i] += w) as f64;
            return;
        }
        each_token(text, |t| {
            len += w;
            if let Some(i) = query.find(t) {
                tf[i] += w;
            }
        });
    };
    add(&o.id, W_ID);
    if let Some(t) = o.title() {
        add(t, W_TITLE);
    }
    if listed_only {
        return (tf, len);
    }
    for t in o.meta.tags.iter().chain(&o.meta.applies_to) {
        add(t, W_TAGS);
    }
    if let Some(s) = &o.meta.summary {
        add(s, W_SUMMARY);
    }
    match content {
        Some(Value::String(s)) => add(s, W_CONTENT),
        Some(v @ (Value::Object(_) | Value::Array(_))) => add(&v.to_string(), W_CONTENT),
        _ => {}
    }
    (tf, len)
}

/// Scores for `candidates` (indexes into `objects`), in the same order, with
/// `contents[n]` the content candidate `n` is indexed by (the consumer's redacted
/// view, never the stored bytes). No task → all zero.
pub fn scores(
    objects: &[ContextObject],
    candidates: &[usize],
    contents: &[Option<&Value>],
    task: Option<&str>,
) -> Vec<f64> {
    scores_where(objects, candidates, contents, &|_| false, task)
}

/// [`scores`], where candidates `listed_only` names (by object index) are indexed by
/// what a listing shows of them only (id and title): their content, summary and tags
/// need an approval not yet given.
pub fn scores_where(
    objects: &[ContextObject],
    candidates: &[usize],
    contents: &[Option<&Value>],
    listed_only: &(dyn Fn(usize) -> bool + Sync),
    task: Option<&str>,
) -> Vec<f64> {
    debug_assert_eq!(candidates.len(), contents.len());
    let q = task.map(query_terms).unwrap_or_default();
    if q.is_empty() || candidates.is_empty() {
        return vec![0.0; candidates.len()];
    }
    let query = Query::new(&q);
    let profiles: Vec<(Vec<f64>, f64)> = candidates
        .par_iter()
        .zip(contents.par_iter())
        .map(|(&i, c)| profile(&objects[i], *c, listed_only(i), &query))
        .collect();
    let n = profiles.len() as f64;
    let avg_len = (profiles.iter().map(|p| p.1).sum::<f64>() / n).max(1.0);
    let df: Vec<f64> = (0..q.len())
        .map(|t| profiles.iter().filter(|p| p.0[t] > 0.0).count() as f64)
        .collect();
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| ((n - d + 0.5) / (d + 0.5) + 1.0).ln())
        .collect();
    profiles
        .iter()
        .map(|(tf, len)| {
            let norm = K1 * (1.0 - B + B * len / avg_len);
            let s: f64 = tf
                .iter()
                .zip(&idf)
                .map(|(&f, &w)| {
                    if f > 0.0 {
                        w * f * (K1 + 1.0) / (f + norm)
                    } else {
                        0.0
                    }
                })
                .sum();
            // Round so the score is stable text in explain output across platforms.
            (s * 1e6).round() / 1e6
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_text_is_tallied_as_token_by_token_lookup_would() {
        let texts = [
            "",
            "Refund",
            "  REFUND, refund-policy: refunds 30-day Customer's invoice2 invoice ",
            "customer customerx xcustomer CUSTOMER cUsToMeR",
            &"a".repeat(70),
            &format!("{} {}", "Long".repeat(20), "long".repeat(20)),
        ];
        let queries: [&[&str]; 4] = [
            &["refund"],
            &["customer", "invoice", "refund"],
            &["2", "30", "day", "s"],
            &[
                &"long".repeat(20),
                "a",
                "b",
                "c",
                "d",
                "e",
                "f",
                "g",
                "h",
                "i",
            ],
        ];
        for q in queries {
            let terms: Vec<String> = q.iter().map(|t| t.to_string()).collect();
            let query = Query::new(&terms);
            for t in texts {
                let (mut want_tf, mut want_n) = (vec![0usize; terms.len()], 0);
                each_token(t, |tok| {
                    want_n += 1;
                    if let Some(i) = query.find(tok) {
                        want_tf[i] += 1;
                    }
                });
                let mut got_tf = vec![0usize; terms.len()];
                let got_n = query.tally_ascii(t, |i| got_tf[i] += 1);
                assert_eq!((got_n, &got_tf), (want_n, &want_tf), "{q:?} in {t:?}");
            }
        }
    }

    #[test]
    fn tokens_are_the_alphanumeric_runs_split_gives() {
        let texts = [
            "",
            "refund",
            "  Refund, policy: 30-day window!  ",
            "naïve café — Ünïcode ÅSA 東京 2026年 x²",
            "emoji 🙂 between🙂words and \u{200b}zero\u{200b}width",
            "trailing token",
            "ß straße İstanbul ǅ Ⅻ ٣ 𝟙",
        ];
        for t in texts {
            let want: Vec<&str> = t
                .split(|c: char| !c.is_alphanumeric())
                .filter(|s| !s.is_empty())
                .collect();
            let mut got = Vec::new();
            each_token(t, |s| got.push(s));
            assert_eq!(got, want, "{t:?}");
        }
    }
}
