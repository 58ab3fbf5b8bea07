//! Lexical search over a view: the same BM25 as task ranking, over the same redacted
//! content, so a redacted value can neither be found nor confirmed by a guess.

use crate::object::ContextObject;
use crate::resolve::rank;

use super::View;

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into `repo.objects`.
    pub index: usize,
    pub score: f64,
}

impl View<'_> {
    /// The current objects this consumer may see that `keep` accepts, scored against
    /// `query` (best first, ties by id); objects whose content is withheld are not searched.
    pub fn search(
        &self,
        query: &str,
        keep: &dyn Fn(&ContextObject) -> bool,
        limit: usize,
    ) -> Vec<Hit> {
        let objects = &self.repo().objects;
        let mut order = Vec::new();
        let mut shown = Vec::new();
        for (i, _) in self.visible(false) {
            if !keep(&objects[i]) {
                continue;
            }
            if let Ok(s) = self.inline_content(i) {
                order.push(i);
                shown.push(s);
            }
        }
        let texts: Vec<_> = shown.iter().map(|s| s.content.as_deref()).collect();
        let scores = rank::scores(objects, &order, &texts, Some(query));
        let mut hits: Vec<Hit> = order
            .into_iter()
            .zip(scores)
            .filter(|(_, s)| *s > 0.0)
            .map(|(index, score)| Hit { index, score })
            .collect();
        hits.sort_by(|x, y| {
            y.score
                .partial_cmp(&x.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(objects[x.index].id.cmp(&objects[y.index].id))
        });
        hits.truncate(limit);
        hits
    }
}
